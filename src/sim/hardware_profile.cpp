#include "sim/hardware_profile.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_reader.h"
#include "sim/specs.h"

namespace agentperf::sim {
namespace {
using json = nlohmann::json;

constexpr const char* kFormat = "agentperf-hardware-profile/1";
// A measured fraction above 1 means the reference peak is too low (or the
// measurement is wrong); a little headroom allows for read-only bandwidth
// beating a copy-based spec figure.
constexpr double kMaxFraction = 1.25;

// [{"<x_key>": size > 0, "fraction": (0, kMaxFraction]}, ...], at least one point, sizes distinct.
EfficiencyCurve read_curve(const JsonReader& arr, const char* x_key) {
  std::vector<std::pair<double, double>> pts;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const JsonReader pt = arr.at(i);
    pt.reject_unknown_keys({x_key, "fraction"});
    pts.emplace_back(pt.number(x_key, JsonRange::between(1e-9, 1e18)),
                     pt.number("fraction", JsonRange::between(1e-6, kMaxFraction)));
  }
  std::sort(pts.begin(), pts.end());
  for (std::size_t i = 1; i < pts.size(); ++i)
    if (pts[i].first == pts[i - 1].first)
      arr.fail("", "must list each " + std::string(x_key) + " once (" + format_json_number(pts[i].first) + " twice)");
  return EfficiencyCurve(std::move(pts));
}

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
  const json root = parse_json(in, path);
  const JsonReader r(root, path);
  if (r.string("format") != kFormat)
    r.fail("format", std::string("must be \"") + kFormat +
                         "\" (is this a measurements file? turn it into a profile with `agentperf calibrate profile`)");

  // Like specs, a profile names every key it uses (device and figures are
  // free-form records of the measurement, read by people, not the model).
  r.reject_unknown_keys({"format", "hardware", "measured_at", "device", "reference", "hbm_usable_bytes", "efficiency",
                         "launch_overhead_s", "figures", "notes"});
  r.reject_unknown_keys({"hbm_bandwidth", "host_link_bandwidth", "peak_flops"}, "reference");
  r.reject_unknown_keys({"bf16", "fp8", "fp4"}, "reference.peak_flops");
  r.reject_unknown_keys({"copy", "gemm", "kv_read", "host_link_h2d"}, "efficiency");
  r.reject_unknown_keys({"kernel_eager", "graph_node", "graph_launch", "kernels_per_layer"}, "launch_overhead_s");
  if (r.has("measured_at")) (void)r.string("measured_at");

  auto p = std::make_shared<HardwareProfile>();
  p->source = path;
  p->hardware = r.string("hardware");
  p->measured_at = root.value("measured_at", std::string());
  if (root.contains("device") && root["device"].is_object()) p->device_name = root["device"].value("name", std::string());

  const JsonReader ref = r.object("reference");
  p->ref_hbm_bandwidth = ref.number("hbm_bandwidth", JsonRange::between(1e9, 1e15));
  p->ref_host_link_bandwidth = ref.number("host_link_bandwidth", JsonRange::between(1e8, 1e13));
  for (const auto& [dtype, v] : ref.object("peak_flops", true).entries())
    p->ref_peak_flops[dtype] = v.number("", JsonRange::between(1e12, 1e18));
  p->hbm_usable_bytes = r.optional_number("hbm_usable_bytes", JsonRange::between(1e9, 1e13));

  const JsonReader eff = r.object("efficiency");
  p->copy_fraction = eff.number("copy", JsonRange::between(1e-3, kMaxFraction));
  for (const auto& [dtype, v] : eff.object("gemm", true).entries()) {
    if (!p->ref_peak_flops.count(dtype)) v.fail("", "must be a dtype with a peak in reference.peak_flops", "'" + dtype + "'");
    p->gemm[dtype] = read_curve(v.array("", true), "tokens");
  }
  p->kv_read = read_curve(eff.array("kv_read", true), "bytes");
  p->host_link_h2d = read_curve(eff.array("host_link_h2d", true), "page_bytes");

  const JsonReader launch = r.object("launch_overhead_s");
  p->kernel_launch_s = launch.number("kernel_eager", JsonRange::between(1e-8, 1e-2));
  p->graph_node_s = launch.number("graph_node", JsonRange::between(1e-9, 1e-3));
  p->graph_launch_s = launch.number("graph_launch", JsonRange::between(1e-8, 1e-2));
  p->kernels_per_layer = launch.integer("kernels_per_layer", JsonRange::between(1, 1000));
  return p;
}

void attach_hardware_profile(HardwareSpec& spec, std::shared_ptr<const HardwareProfile> profile) {
  const HardwareProfile& p = *profile;
  auto mismatch = [&](const std::string& what, double spec_v, double prof_v) {
    throw UserError(p.source + ": measured against " + what + " = " + format_json_number(prof_v) + " but hardware spec '" +
                    spec.name + "' has " + format_json_number(spec_v) + " (a profile of '" + p.hardware +
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
