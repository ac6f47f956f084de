#include "load/arrival_schedule.h"

#include <cmath>

namespace agentperf {

ArrivalSchedule::ArrivalSchedule(ArrivalPattern pattern, double total_rate, int worker, int workers,
                                 std::uint64_t seed)
    : pattern_(pattern), rate_(total_rate), worker_(worker), workers_(workers),
      rng_(mix_seed(seed, 0xA77, static_cast<std::uint64_t>(worker))) {}

namespace {
// A tiny rate gives gaps of 1e300 s: llround of those is undefined.
std::int64_t to_offset_ns(double s) {
  const double ns = s * 1e9;
  return ns >= static_cast<double>(ArrivalSchedule::kNever) ? ArrivalSchedule::kNever
                                                            : static_cast<std::int64_t>(std::llround(ns));
}
}  // namespace

std::int64_t ArrivalSchedule::next_offset_ns() {
  const std::uint64_t k = k_++;
  if (pattern_ == ArrivalPattern::constant) {
    const double idx = static_cast<double>(worker_) + static_cast<double>(k) * workers_;
    return to_offset_ns(idx / rate_);
  }
  if (k == 0 && worker_ == 0) return 0;
  t_s_ += rng_.exponential(rate_ / workers_);
  return to_offset_ns(t_s_);
}

}  // namespace agentperf
