// Early short-circuit of a clearly bad sweep point, from the server's
// Prometheus samples taken during the run:
//  - stalled: no generated tokens (sglang:generation_tokens_total) for
//    stall_s seconds while requests are running or queued;
//  - thrashing: KV usage (sglang:token_usage) at or above kv_pinned for
//    pinned_s seconds while the queue (sglang:num_queue_reqs) only grew.
// Each returns a diagnosis sentence recorded with the point.
#pragma once
#include <deque>
#include <map>
#include <optional>
#include <string>

namespace agentperf::sweep {

struct ShortCircuitOptions {
  double stall_s = 300;
  double pinned_s = 300;
  double kv_pinned = 0.99;
};

class ShortCircuitDetector {
 public:
  explicit ShortCircuitDetector(ShortCircuitOptions o) : o_(o) {}
  // One sample at time t (seconds); returns a diagnosis once the point is clearly bad.
  std::optional<std::string> feed(double t, const std::map<std::string, double>& metrics);

 private:
  ShortCircuitOptions o_;
  std::optional<double> last_generated_;
  double last_progress_t_ = 0;
  bool started_ = false;
  std::deque<std::pair<double, double>> pinned_queue_;  // (t, queue) while KV is pinned
};

}  // namespace agentperf::sweep
