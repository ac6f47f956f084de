#include "load/arrival_schedule.h"

#include <cmath>

namespace agentperf {

ArrivalSchedule::ArrivalSchedule(ArrivalPattern pattern, double total_rate, int worker, int workers,
                                 std::uint64_t seed)
    : pattern_(pattern), rate_(total_rate), worker_(worker), workers_(workers),
      rng_(mix_seed(seed, 0xA77, static_cast<std::uint64_t>(worker))) {}

std::int64_t ArrivalSchedule::next_offset_ns() {
  if (pattern_ == ArrivalPattern::constant) {
    const double idx = static_cast<double>(worker_) + static_cast<double>(k_++) * workers_;
    return static_cast<std::int64_t>(std::llround(idx / rate_ * 1e9));
  }
  t_s_ += rng_.exponential(rate_ / workers_);
  return static_cast<std::int64_t>(std::llround(t_s_ * 1e9));
}

}  // namespace agentperf
