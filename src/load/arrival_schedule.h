// Open-loop arrival times as offsets from the phase start. Targets are
// absolute (cumulative), so a sender that falls behind catches up instead of
// drifting, and each request's lateness against its target is measurable.
//
// With W workers each worker draws its own share: a Poisson process of rate
// R is the superposition of W independent Poisson processes of rate R/W;
// a constant rate gives worker w the targets (w + kW) / R.
//
// The first arrival of worker 0 is at offset 0 in both patterns, as in
// vLLM's and AIPerf's schedulers: a Poisson run used to wait one whole
// sampled gap first (--request-rate 0.3 -d 15 sent its only request at
// 14.45 s). The Poisson gaps after it are exponential as before; the other
// workers' streams start with a gap (their superposition with worker 0's
// is still Poisson of rate R after the first request).
#pragma once
#include <cstdint>

#include "common/rng.h"
#include "load/profile_config.h"

namespace agentperf {

class ArrivalSchedule {
 public:
  // An offset past any run (73 years), small enough that start + offset
  // cannot overflow: what a vanishing rate's gaps are clamped to.
  static constexpr std::int64_t kNever = std::int64_t{1} << 61;

  ArrivalSchedule(ArrivalPattern pattern, double total_rate, int worker, int workers, std::uint64_t seed);
  // Offset in ns of this worker's next arrival (at most kNever).
  std::int64_t next_offset_ns();

 private:
  ArrivalPattern pattern_;
  double rate_;
  int worker_, workers_;
  std::uint64_t k_ = 0;  // arrivals drawn so far
  double t_s_ = 0;
  Rng rng_;
};

}  // namespace agentperf
