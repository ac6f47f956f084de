#include "sim/hardware_profile.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "sim/specs.h"

namespace agentperf::sim {
namespace {
using json = nlohmann::json;

constexpr const char* kFormat = "agentperf-hardware-profile/1";
// A measured fraction above 1 means the reference peak is too low (or the
// measurement is wrong); a little headroom allows for read-only bandwidth
// beating a copy-based spec figure.
constexpr double kMaxFraction = 1.25;

class ProfileReader {
 public:
  explicit ProfileReader(std::string source) : source_(std::move(source)) {}

  const json& at(const json& node, const std::string& path, const std::string& key) const {
    if (!node.is_object() || !node.contains(key)) fail(path + key, "is missing");
    return node[key];
  }
  double number(const json& node, const std::string& path, const std::string& key, double lo, double hi) const {
    const json& v = at(node, path, key);
    if (!v.is_number()) fail(path + key, "must be a number, got " + v.dump());
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < lo || d > hi)
      fail(path + key, "must be in [" + fmt(lo) + ", " + fmt(hi) + "], got " + fmt(d));
    return d;
  }
  std::string text(const json& node, const std::string& path, const std::string& key) const {
    const json& v = at(node, path, key);
    if (!v.is_string()) fail(path + key, "must be a string, got " + v.dump());
    return v.get<std::string>();
  }
  // [{"<x_key>": size > 0, "fraction": (0, kMaxFraction]}, ...], at least one point, sizes distinct.
  EfficiencyCurve curve(const json& node, const std::string& path, const std::string& key, const char* x_key) const {
    const json& arr = at(node, path, key);
    if (!arr.is_array() || arr.empty()) fail(path + key, "must be a non-empty array of {\"" + std::string(x_key) + "\", \"fraction\"}");
    std::vector<std::pair<double, double>> pts;
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const std::string p = path + key + "[" + std::to_string(i) + "].";
      pts.emplace_back(number(arr[i], p, x_key, 1e-9, 1e18), number(arr[i], p, "fraction", 1e-6, kMaxFraction));
    }
    std::sort(pts.begin(), pts.end());
    for (std::size_t i = 1; i < pts.size(); ++i)
      if (pts[i].first == pts[i - 1].first) fail(path + key, "lists " + std::string(x_key) + " " + fmt(pts[i].first) + " twice");
    return EfficiencyCurve(std::move(pts));
  }
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw UserError(source_ + ": field '" + field + "' " + what);
  }
  static std::string fmt(double d) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", d);
    return b;
  }

 private:
  std::string source_;
};

bool close_to(double a, double b) { return std::fabs(a - b) <= 0.01 * std::max(std::fabs(a), std::fabs(b)); }

}  // namespace

EfficiencyCurve::EfficiencyCurve(std::vector<std::pair<double, double>> points) : points_(std::move(points)) {
  std::sort(points_.begin(), points_.end());
}

double EfficiencyCurve::at(double size) const {
  if (points_.empty()) return 1.0;
  if (size <= points_.front().first) return points_.front().second;
  if (size >= points_.back().first) return points_.back().second;
  auto hi = std::upper_bound(points_.begin(), points_.end(), size,
                             [](double s, const std::pair<double, double>& p) { return s < p.first; });
  auto lo = hi - 1;
  const double u = (std::log(size) - std::log(lo->first)) / (std::log(hi->first) - std::log(lo->first));
  return lo->second + u * (hi->second - lo->second);
}

double HardwareProfile::gemm_fraction(const std::string& dtype, double tokens) const {
  auto it = gemm.find(dtype);
  if (it == gemm.end()) it = gemm.find("bf16");
  if (it == gemm.end()) it = gemm.begin();
  return it == gemm.end() ? 1.0 : it->second.at(std::max(1.0, tokens));
}

std::shared_ptr<const HardwareProfile> load_hardware_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read hardware profile '" + path + "'");
  const json root = json::parse(in, nullptr, false);
  if (root.is_discarded()) throw UserError(path + ": not valid JSON");
  ProfileReader r(path);
  if (r.text(root, "", "format") != kFormat)
    r.fail("format", std::string("must be \"") + kFormat + "\" (is this a measurements file? turn it into a profile with `agentperf calibrate profile`)");

  auto p = std::make_shared<HardwareProfile>();
  p->source = path;
  p->hardware = r.text(root, "", "hardware");
  p->measured_at = root.value("measured_at", std::string());
  if (root.contains("device") && root["device"].is_object()) p->device_name = root["device"].value("name", std::string());

  const json& ref = r.at(root, "", "reference");
  p->ref_hbm_bandwidth = r.number(ref, "reference.", "hbm_bandwidth", 1e9, 1e15);
  p->ref_host_link_bandwidth = r.number(ref, "reference.", "host_link_bandwidth", 1e8, 1e13);
  const json& peaks = r.at(ref, "reference.", "peak_flops");
  if (!peaks.is_object() || peaks.empty()) r.fail("reference.peak_flops", "must be an object of dtype: FLOP/s");
  for (const auto& [dtype, v] : peaks.items()) p->ref_peak_flops[dtype] = r.number(peaks, "reference.peak_flops.", dtype, 1e12, 1e18);
  if (root.contains("hbm_usable_bytes")) p->hbm_usable_bytes = r.number(root, "", "hbm_usable_bytes", 1e9, 1e13);

  const json& eff = r.at(root, "", "efficiency");
  p->copy_fraction = r.number(eff, "efficiency.", "copy", 1e-3, kMaxFraction);
  const json& gemm = r.at(eff, "efficiency.", "gemm");
  if (!gemm.is_object() || gemm.empty()) r.fail("efficiency.gemm", "must be an object of dtype: [{tokens, fraction}]");
  for (const auto& [dtype, v] : gemm.items()) {
    if (!p->ref_peak_flops.count(dtype)) r.fail("efficiency.gemm." + dtype, "has no peak in reference.peak_flops");
    p->gemm[dtype] = r.curve(gemm, "efficiency.gemm.", dtype, "tokens");
  }
  p->kv_read = r.curve(eff, "efficiency.", "kv_read", "bytes");
  p->host_link_h2d = r.curve(eff, "efficiency.", "host_link_h2d", "page_bytes");

  const json& launch = r.at(root, "", "launch_overhead_s");
  p->kernel_launch_s = r.number(launch, "launch_overhead_s.", "kernel_eager", 1e-8, 1e-2);
  p->graph_node_s = r.number(launch, "launch_overhead_s.", "graph_node", 1e-9, 1e-3);
  p->graph_launch_s = r.number(launch, "launch_overhead_s.", "graph_launch", 1e-8, 1e-2);
  p->kernels_per_layer = static_cast<int>(r.number(launch, "launch_overhead_s.", "kernels_per_layer", 1, 1000));
  return p;
}

void attach_hardware_profile(HardwareSpec& spec, std::shared_ptr<const HardwareProfile> profile) {
  const HardwareProfile& p = *profile;
  auto mismatch = [&](const std::string& what, double spec_v, double prof_v) {
    throw UserError(p.source + ": measured against " + what + " = " + ProfileReader::fmt(prof_v) + " but hardware spec '" +
                    spec.name + "' has " + ProfileReader::fmt(spec_v) + " (a profile of '" + p.hardware +
                    "' applies only to that spec)");
  };
  if (!close_to(spec.hbm_bandwidth, p.ref_hbm_bandwidth)) mismatch("hbm_bandwidth", spec.hbm_bandwidth, p.ref_hbm_bandwidth);
  if (!close_to(spec.host_link_bandwidth, p.ref_host_link_bandwidth))
    mismatch("host_link_bandwidth", spec.host_link_bandwidth, p.ref_host_link_bandwidth);
  for (const auto& [dtype, peak] : p.ref_peak_flops) {
    auto it = spec.peak_flops.find(dtype);
    if (it == spec.peak_flops.end()) mismatch("peak_flops." + dtype, 0, peak);
    if (!close_to(it->second, peak)) mismatch("peak_flops." + dtype, it->second, peak);
  }
  if (p.hbm_usable_bytes) spec.hbm_usable_bytes = *p.hbm_usable_bytes;
  // Plain-copy traffic (state reads/writes) and anything else that uses the
  // single HBM efficiency now runs at the measured copy rate.
  spec.eff_hbm = std::min(1.0, p.copy_fraction);
  spec.profile = std::move(profile);
}

}  // namespace agentperf::sim
