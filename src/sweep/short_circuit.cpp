#include "sweep/short_circuit.h"

#include <cstdio>

namespace agentperf::sweep {
namespace {
double value(const std::map<std::string, double>& m, const char* a, const char* b = nullptr) {
  if (auto it = m.find(a); it != m.end()) return it->second;
  if (b)
    if (auto it = m.find(b); it != m.end()) return it->second;
  return 0;
}
std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}
}  // namespace

std::optional<std::string> ShortCircuitDetector::feed(double t, const std::map<std::string, double>& m) {
  const double generated = value(m, "sglang:generation_tokens_total");
  const double running = value(m, "sglang:num_running_reqs", "sglang:num_requests_running");
  const double queued = value(m, "sglang:num_queue_reqs", "sglang:num_requests_waiting");
  const double usage = value(m, "sglang:token_usage");
  if (!started_) {
    started_ = true;
    last_progress_t_ = t;
  }
  if (!last_generated_ || generated > *last_generated_ || (running + queued) == 0) last_progress_t_ = t;
  last_generated_ = generated;
  if (t - last_progress_t_ >= o_.stall_s)
    return fmt("stalled: no tokens generated for %.0f s with %.0f requests running and %.0f queued", t - last_progress_t_,
               running, queued);

  if (usage >= o_.kv_pinned) {
    pinned_queue_.emplace_back(t, queued);
    bool grew = true;
    for (std::size_t i = 1; i < pinned_queue_.size(); ++i) grew = grew && pinned_queue_[i].second >= pinned_queue_[i - 1].second;
    grew = grew && pinned_queue_.back().second > pinned_queue_.front().second;
    if (!grew) {
      // Keep only the latest non-decreasing run.
      while (pinned_queue_.size() > 1) pinned_queue_.pop_front();
    } else if (pinned_queue_.back().first - pinned_queue_.front().first >= o_.pinned_s) {
      return fmt("thrashing: KV cache at %.0f%% for %.0f s while the queue grew to %.0f requests", 100 * usage,
                 pinned_queue_.back().first - pinned_queue_.front().first, queued);
    }
  } else {
    pinned_queue_.clear();
  }
  return std::nullopt;
}

}  // namespace agentperf::sweep
