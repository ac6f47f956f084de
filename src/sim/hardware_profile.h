// A measured hardware profile (agentperf calibrate, docs/calibrate.md):
// achieved fractions of the hardware spec's peaks per operation class and
// shape bucket, and measured launch overheads. Attached to a HardwareSpec it
// replaces the spec's single efficiency guesses in the step-time model.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace agentperf::sim {

struct HardwareSpec;

// A fraction as a function of a positive size, from measured points:
// piecewise linear in log(size), flat beyond the first and last point.
class EfficiencyCurve {
 public:
  EfficiencyCurve() = default;
  explicit EfficiencyCurve(std::vector<std::pair<double, double>> points);  // sorted by size here
  double at(double size) const;
  bool empty() const { return points_.empty(); }
  const std::vector<std::pair<double, double>>& points() const { return points_; }

 private:
  std::vector<std::pair<double, double>> points_;
};

struct HardwareProfile {
  std::string source;        // file it was read from
  std::string hardware;      // spec it was measured against ("h200")
  std::string device_name;   // as the driver names the GPU
  std::string measured_at;
  // The spec peaks the fractions are relative to; a profile only attaches to a
  // spec with the same peaks, so a fraction never meets another chip's peak.
  double ref_hbm_bandwidth = 0, ref_host_link_bandwidth = 0;
  std::map<std::string, double> ref_peak_flops;
  std::optional<double> hbm_usable_bytes;  // device memory as the driver reports it

  double copy_fraction = 0;                      // device-to-device copy, of HBM bandwidth
  std::map<std::string, EfficiencyCurve> gemm;   // dtype -> roofline fraction by tokens (GEMM M)
  EfficiencyCurve kv_read;                       // of HBM bandwidth, by KV bytes read in a step
  EfficiencyCurve host_link_h2d;                 // of host-link bandwidth, by page bytes
  double kernel_launch_s = 0, graph_node_s = 0, graph_launch_s = 0;
  int kernels_per_layer = 12;

  // Roofline fraction of a GEMM over `tokens` rows in `dtype` (the math dtype
  // the chip runs it in); falls back to bf16, then to any measured dtype.
  double gemm_fraction(const std::string& dtype, double tokens) const;
};

// Reads and validates a profile file; throws UserError naming the file and
// the field that is missing or out of range.
std::shared_ptr<const HardwareProfile> load_hardware_profile(const std::string& path);

// Attaches a profile to a spec after checking that its reference peaks are
// the spec's; the spec's HBM size becomes the measured one where present.
void attach_hardware_profile(HardwareSpec& spec, std::shared_ptr<const HardwareProfile> profile);

}  // namespace agentperf::sim
