#include "calibrate/profile_builder.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/error.h"
#include "common/json_reader.h"

namespace agentperf::calibrate {
namespace {
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// {x -> [fractions]} -> [{x_key: x, fraction: median}], ascending x.
ojson curve(const std::map<double, std::vector<double>>& by_x, const char* x_key) {
  ojson arr = ojson::array();
  for (const auto& [x, fs] : by_x) arr.push_back({{x_key, x}, {"fraction", median(fs)}});
  return arr;
}

std::string size_label(double bytes) {
  const auto b = static_cast<long long>(bytes);
  if (b >= (1ll << 30) && b % (1ll << 30) == 0) return std::to_string(b >> 30) + " GiB";
  if (b >= (1ll << 20) && b % (1ll << 20) == 0) return std::to_string(b >> 20) + " MiB";
  return std::to_string(b >> 10) + " KiB";
}

ojson figure(const std::string& name, double measured, double datasheet, const char* unit) {
  return {{"name", name}, {"measured", measured}, {"datasheet", datasheet}, {"unit", unit}, {"ratio", measured / datasheet}};
}

}  // namespace

ojson build_hardware_profile(const json& m, const std::string& source, const sim::HardwareSpec& spec,
                             const ProfileBuildOptions& opts) {
  const JsonReader r(m, source);
  if (!m.is_object() || r.string_or("format", "") != "agentperf-gpu-measurements/1")
    r.fail(m.is_object() ? "format" : "", "must be \"agentperf-gpu-measurements/1\" (the output of agentperf-calibrate-gpu)");
  const double bw = spec.hbm_bandwidth, host = spec.host_link_bandwidth;
  ojson figures = ojson::array();

  const auto pos = JsonRange::positive();
  const double d2d = r.number("d2d_copy.bytes_per_s", pos);
  figures.push_back(figure("device-to-device copy (read + write)", d2d, bw, "B/s"));

  // Host link: per page size, the better of per-page cudaMemcpyAsync and the
  // zero-copy gather kernel (HiCache picks its I/O backend the same way).
  std::map<double, std::vector<double>> h2d;
  std::map<std::string, std::map<double, double>> host_modes;
  const JsonReader hl = r.array("host_link", true);
  for (std::size_t i = 0; i < hl.size(); ++i) {
    const JsonReader e = hl.at(i);
    const std::string mode = e.string_or("mode", "");
    const double page = e.number("page_bytes", pos), rate = e.number("bytes_per_s", pos);
    host_modes[mode][page] = rate;
  }
  for (const char* mode : {"h2d", "h2d_kernel"})
    for (const auto& [page, rate] : host_modes[mode]) {
      auto& v = h2d[page];
      if (v.empty()) v.push_back(rate / host);
      else v[0] = std::max(v[0], rate / host);
    }
  if (h2d.empty()) r.fail("host_link", "must have h2d entries");
  for (const auto& [mode, label] : std::vector<std::pair<std::string, std::string>>{
           {"h2d", "pinned H2D"}, {"d2h", "pinned D2H"}, {"h2d+d2h", "pinned H2D + D2H concurrent"}, {"h2d_kernel", "zero-copy gather kernel H2D"}}) {
    const auto& pts = host_modes[mode];
    if (pts.empty()) continue;
    const double datasheet = mode == "h2d+d2h" ? 2 * host : host;
    for (const auto& [page, rate] : pts)
      if (page == pts.begin()->first || page == pts.rbegin()->first || page == (1 << 20))
        figures.push_back(figure(label + ", " + size_label(page) + " pages", rate, datasheet, "B/s"));
  }

  // GEMM: roofline fraction = max(bytes / BW, flops / peak) / measured time.
  std::map<std::string, std::map<double, std::vector<double>>> gemm;
  std::map<std::string, double> best_flops;
  std::map<std::string, std::pair<double, double>> decode_m1;  // dtype -> (bytes/s, count)
  const JsonReader gl = r.array("gemm", true);
  for (std::size_t i = 0; i < gl.size(); ++i) {
    const JsonReader g = gl.at(i);
    if (!g.boolean_or("supported", false)) continue;
    const std::string dtype = g.string_or("dtype", "");
    if (!spec.peak_flops.count(dtype)) g.fail("dtype", "must be a dtype with a peak in hardware spec '" + spec.name + "'");
    const double peak = spec.peak_flops.at(dtype);
    const double sec = g.number("seconds", pos), flops = g.number("flops", pos), bytes = g.number("bytes", pos);
    const double tokens = g.number("m", pos);
    const double roof = std::max(bytes / bw, flops / peak);
    gemm[dtype][tokens].push_back(roof / sec);
    best_flops[dtype] = std::max(best_flops[dtype], flops / sec);
    if (tokens == 1) {
      auto& [sum, n] = decode_m1[dtype];
      sum += bytes / sec;
      n += 1;
    }
  }
  if (gemm.empty()) r.fail("gemm", "must have supported entries");
  for (const auto& [dtype, f] : best_flops)
    figures.push_back(figure(dtype + " GEMM, best of all shapes", f, spec.peak_flops.at(dtype), "FLOP/s"));
  for (const auto& [dtype, sn] : decode_m1)
    figures.push_back(figure(dtype + " GEMM M=1 (weight streaming)", sn.first / sn.second, bw, "B/s"));

  // KV read: fraction of HBM bandwidth by bytes read in one launch.
  std::map<double, std::vector<double>> kv;
  double kv_best = 0;
  const JsonReader kl = r.array("kv_read", true);
  for (std::size_t i = 0; i < kl.size(); ++i) {
    const JsonReader e = kl.at(i);
    const double bytes = e.number("bytes", pos), rate = e.number("bytes_per_s", pos);
    kv[bytes].push_back(rate / bw);
    kv_best = std::max(kv_best, rate);
  }
  figures.push_back(figure("paged KV read (decode attention), best", kv_best, bw, "B/s"));

  const double eager = r.number("launch.eager_launch_s", pos), node = r.number("launch.graph_node_s", pos),
               glaunch = r.number("launch.graph_launch_s", pos);
  for (const auto& f : figures)
    if (f["ratio"].get<double>() > 1.25)
      throw UserError(source + ": " + f["name"].get<std::string>() + " measured " + std::to_string(f["measured"].get<double>()) +
                      ", over 1.25x the spec's " + std::to_string(f["datasheet"].get<double>()) + ": wrong --hardware spec?");

  ojson gemm_out = ojson::object();
  for (const auto& [dtype, by_m] : gemm) gemm_out[dtype] = curve(by_m, "tokens");
  ojson profile = {
      {"format", "agentperf-hardware-profile/1"},
      {"hardware", spec.name},
      {"measured_at", m.value("created", "")},
      {"device", m.value("device", json::object())},
      {"reference", {{"hbm_bandwidth", bw}, {"host_link_bandwidth", host}, {"peak_flops", spec.peak_flops}}},
  };
  if (const auto memory = r.optional_number("device.memory_bytes", pos)) profile["hbm_usable_bytes"] = *memory;
  profile["efficiency"] = {{"copy", d2d / bw},
                           {"gemm", gemm_out},
                           {"kv_read", curve(kv, "bytes")},
                           {"host_link_h2d", curve(h2d, "page_bytes")}};
  profile["launch_overhead_s"] = {{"kernel_eager", eager},
                                  {"graph_node", node},
                                  {"graph_launch", glaunch},
                                  {"kernels_per_layer", opts.kernels_per_layer}};
  profile["figures"] = figures;
  return profile;
}

std::string format_profile_figures(const ojson& profile) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-48s %14s %14s %7s\n", "figure", "measured", "spec", "ratio");
  out += line;
  for (const auto& f : profile.at("figures")) {
    const std::string unit = f.at("unit");
    const double scale = unit == "FLOP/s" ? 1e12 : 1e9;
    const char* u = unit == "FLOP/s" ? "TFLOP/s" : "GB/s";
    std::snprintf(line, sizeof line, "%-48s %9.1f %-4s %9.1f %-4s %6.1f%%\n", f.at("name").get<std::string>().c_str(),
                  f.at("measured").get<double>() / scale, u, f.at("datasheet").get<double>() / scale, u,
                  100 * f.at("ratio").get<double>());
    out += line;
  }
  const auto& l = profile.at("launch_overhead_s");
  std::snprintf(line, sizeof line, "launch: eager %.2f us/kernel, graph %.2f us/node + %.2f us/replay (spec: no figure)\n",
                l.at("kernel_eager").get<double>() * 1e6, l.at("graph_node").get<double>() * 1e6,
                l.at("graph_launch").get<double>() * 1e6);
  out += line;
  return out;
}

}  // namespace agentperf::calibrate
