// The report as markdown, for pasting into a pull request (report.h,
// render_markdown): per comparable group a table of its points, the
// prediction errors, and what each run was.
#include <cstdio>
#include <string>

#include "report/report.h"

namespace agentperf::report {
using json = nlohmann::json;

namespace {

std::string num(const json& v, const char* format) {
  if (!v.is_number()) return "–";
  char b[64];
  std::snprintf(b, sizeof b, format, v.get<double>());
  return b;
}

std::string signed_pct(const json& v) {
  if (!v.is_number()) return "–";
  char b[32];
  std::snprintf(b, sizeof b, "%+.1f%%", v.get<double>());
  return b;
}

// Table cells hold no pipes or newlines.
std::string cell(std::string s) {
  for (auto& c : s)
    if (c == '|' || c == '\n') c = ' ';
  return s;
}

const json& pick(const json& j, const char* key) {
  static const json none;
  return j.is_object() && j.contains(key) ? j[key] : none;
}

}  // namespace

std::string render_markdown(const json& data) {
  const auto& points = data["points"];
  const auto& opts = data.contains("options") ? data["options"] : json::object();
  // Columns when any point has a price or a power (flags, recipe, telemetry).
  bool cost = false, energy = false;
  for (const auto& p : points) {
    cost = cost || p.contains("cost_per_mtok");
    energy = energy || p.contains("tokens_per_joule");
  }
  std::string md = "## agentperf report\n\n";
  md += std::to_string(points.size()) + " run(s) in " + std::to_string(data["groups"].size()) +
        " comparable group(s) (one model, GPU, workload and time scale each; frontiers are per group and kind). "
        "agentperf " + data["version"].get<std::string>() + ".";
  if (pick(opts, "gpu_price_per_hour").is_number())
    md += " Cost at $" + num(opts["gpu_price_per_hour"], "%.2f") + " per GPU-hour (--gpu-price-per-hour).";
  else if (cost)
    md += " Cost at each recipe's GPU price.";
  if (pick(opts, "gpu_power_watts").is_number())
    md += " Energy at " + num(opts["gpu_power_watts"], "%.0f") + " W per GPU (--gpu-power-watts).";
  else if (energy)
    md += " Energy from each run's GPU telemetry (mean power over its profiling window, all GPUs), else its recipe's "
          "power per GPU: the W column says which.";
  md += "\n";
  for (std::size_t gi = 0; gi < data["groups"].size(); ++gi) {
    const auto& g = data["groups"][gi];
    md += "\n### " + cell(g["label"].get<std::string>()) + "\n\n";
    md += "| configuration | conc | tok/s/GPU | output tok/s/GPU | TTFT p50 ms | ITL p50 ms | tok/s/user p50 | E2EL p50 s |";
    if (cost) md += " $/M tok |";
    if (energy) md += " tok/J | W (from) |";
    md += " frontier |\n|---|---:|---:|---:|---:|---:|---:|---:|";
    if (cost) md += "---:|";
    if (energy) md += "---:|---:|";
    md += ":-:|\n";
    for (const auto& s : g["series"])
      for (const auto& i : s["points"]) {
        const auto& p = points[i.get<std::size_t>()];
        md += "| " + cell(s["label"].get<std::string>()) + " | " +
              (p["concurrency"].is_number() ? std::to_string(p["concurrency"].get<int>()) : std::string("–")) + " | " +
              num(p["tput_per_gpu"], "%.1f") + " | " + num(p["output_per_gpu"], "%.1f") + " | " +
              num(p["ttft_p50"], "%.1f") + " | " + num(p["itl_p50"], "%.2f") + " | " +
              num(pick(p["intvty"], "p50"), "%.1f") + " | " + num(pick(p["e2el_s"], "p50"), "%.2f") + " |";
        if (cost) md += " " + num(pick(p, "cost_per_mtok"), "%.3f") + " |";
        if (energy)
          md += " " + num(pick(p, "tokens_per_joule"), "%.2f") + " | " +
                (p.contains("power_source") ? num(p["power_w"], "%.0f") + " (" + p["power_source"].get<std::string>() + ")"
                                            : std::string("–")) + " |";
        md += std::string(p.value("on_frontier", false) ? " ★" : "") + " |\n";
      }
    bool header = false;
    for (const auto& pr : data["pairs"]) {
      if (pr["group"].get<std::size_t>() != gi) continue;
      if (!header) {
        md += "\nPrediction error (predicted − measured) / measured; \"inside\": the prediction is within the "
              "measurement's 95 % interval:\n\n"
              "| configuration (measured) | conc | tok/s/GPU | TTFT p50 | ITL p50 |\n|---|---:|---:|---:|---:|\n";
        header = true;
      }
      const auto& m = points[pr["measured"].get<std::size_t>()];
      // "+3.2 % (inside)" when the prediction is within the measured 95 %
      // interval; otherwise the error and the interval it missed.
      auto err = [&](const char* key) {
        std::string s = signed_pct(pr["error_pct"][key]);
        if (pr.contains("inside") && pr["inside"].contains(key)) {
          if (pr["inside"][key].get<bool>()) return s + " (inside)";
          if (pr.contains("interval_pct") && pr["interval_pct"].contains(key)) {
            char buf[64];
            std::snprintf(buf, sizeof buf, " (interval %+.1f/%+.1f %%)", pr["interval_pct"][key][0].get<double>(),
                          pr["interval_pct"][key][1].get<double>());
            s += buf;
          }
        }
        return s;
      };
      md += "| " + cell(m["series"].get<std::string>()) + " | " + std::to_string(pr["concurrency"].get<int>()) + " | " +
            err("tput_per_gpu") + " | " + err("ttft_p50") + " | " + err("itl_p50") + " |\n";
    }
  }
  md += "\n<details><summary>What each run is</summary>\n\n";
  for (const auto& p : points) {
    const auto& d = p["description"];
    md += "- `" + p["dir"].get<std::string>() + "`: " + p["kind"].get<std::string>();
    for (const char* key : {"model", "served_model", "hardware", "tp", "ep", "dp", "engine", "engine_version", "recipe",
                            "point", "concurrency", "request_rate", "kv_offload", "time_scale", "gpu_price_per_hour", "gpu_power_watts", "date", "agentperf_version"})
      if (d.contains(key)) md += ", " + std::string(key) + " " + (d[key].is_string() ? d[key].get<std::string>() : d[key].dump());
    if (d.contains("command_line") && !d["command_line"].get<std::string>().empty())
      md += "; `" + d["command_line"].get<std::string>() + "`";
    md += "\n";
  }
  md += "\n</details>\n";
  return md;
}

}  // namespace agentperf::report
