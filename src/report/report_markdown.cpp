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

// Per capacity search: the answer, then a table of its measured points
// with each SLO's value and 95 % interval.
std::string capacity_markdown(const json& searches) {
  std::string md;
  for (const auto& cap : searches) {
    std::string slos;
    for (const auto& s : cap["slos"]) slos += (slos.empty() ? "" : ", ") + s["slo"].get<std::string>();
    md += "\n### Capacity under " + cell(slos) + " (`" + cell(cap["dir"].get<std::string>()) + "`)\n\n";
    const int capacity = cap["capacity"].is_number() ? cap["capacity"].get<int>() : 0;
    if (!cap.value("complete", true))
      md += "The search stopped; the highest concurrency meeting every SLO so far is " + std::to_string(capacity) + ".";
    else if (capacity == 0)
      md += "**Capacity 0**: concurrency 1 already misses `" +
            cell(cap["limiting_slo"].is_string() ? cap["limiting_slo"].get<std::string>() : std::string()) + "`.";
    else if (cap.value("at_max_concurrency", false))
      md += "**Capacity at least " + std::to_string(capacity) + "** (the search's maximum meets every SLO).";
    else
      md += "**Capacity " + std::to_string(capacity) + "**: concurrency " +
            std::to_string(cap["lowest_missing"].get<int>()) + " misses `" +
            cell(cap["limiting_slo"].get<std::string>()) + "`.";
    md += " " + std::to_string(cap["measured"].size()) + " measured points";
    if (cap["predicted_edge"].is_number())
      md += "; the simulator proposed " + std::to_string(cap["predicted_edge"].get<int>());
    md += ".\n\n| conc | measured # | verdict |";
    for (const auto& s : cap["slos"]) md += " " + cell(s["slo"].get<std::string>()) + " |";
    md += " goodput req/s |\n|---:|---:|---|";
    for (std::size_t i = 0; i < cap["slos"].size(); ++i) md += "---:|";
    md += "---:|\n";
    for (const auto& m : cap["measured"]) {
      const int c = m["concurrency"].get<int>();
      md += "| " + std::to_string(c) + " | " + m["order"].dump() + " | " +
            (m.value("met", false) ? std::string("meets")
                                   : "misses " + (m["limiting"].is_string() ? cell(m["limiting"].get<std::string>()) : "")) +
            (m.value("uncertain", false) ? " (uncertain)" : "") + " |";
      for (const auto& s : cap["slos"]) {
        std::string v = "–";
        for (const auto& p : s["measured"])
          if (p["concurrency"].get<int>() == c) {
            v = num(p["value"], "%.1f");
            if (p.contains("interval"))
              v += " [" + num(p["interval"][0], "%.1f") + ", " + num(p["interval"][1], "%.1f") + "]";
          }
        md += " " + v + " |";
      }
      md += " " + num(m["goodput"], "%.2f") + " |\n";
    }
  }
  return md;
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
  // What the page's warning box says: unexpected cache hits, small samples,
  // wide intervals, GPU telemetry that did not match.
  if (data.contains("warnings") && data["warnings"].is_array() && !data["warnings"].empty()) {
    md += "\n**Warnings**\n\n";
    for (const auto& w : data["warnings"]) md += "- " + cell(w.get<std::string>()) + "\n";
  }
  if (data.contains("capacity")) md += capacity_markdown(data["capacity"]);
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
        // (Appended piece by piece: `" " + std::string&&` draws GCC 12's
        // false -Wrestrict, GCC bug 105329.)
        if (cost) {
          md += ' ';
          md += num(pick(p, "cost_per_mtok"), "%.3f");
          md += " |";
        }
        if (energy) {
          md += ' ';
          md += num(pick(p, "tokens_per_joule"), "%.2f");
          md += " | ";
          md += p.contains("power_source") ? num(p["power_w"], "%.0f") + " (" + p["power_source"].get<std::string>() + ")"
                                           : std::string("–");
          md += " |";
        }
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
      // A virtual-time prediction of a point measured at time scale N is
      // compared on the measurement's clock.
      std::string scaled;
      if (pr.contains("time_scale_factor") && pr["time_scale_factor"].get<double>() != 1.0)
        scaled = " (prediction on the x" + num(pr["time_scale_factor"], "%g") + " clock)";
      md += "| " + cell(m["series"].get<std::string>()) + scaled + " | " + std::to_string(pr["concurrency"].get<int>()) + " | " +
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
