// Open-loop arrival times as offsets from the phase start. Targets are
// absolute (cumulative), so a sender that falls behind catches up instead of
// drifting, and each request's lateness against its target is measurable.
//
// With W workers each worker draws its own share: a Poisson process of rate
// R is the superposition of W independent Poisson processes of rate R/W;
// a constant rate gives worker w the targets (w + kW) / R.
#pragma once
#include <cstdint>

#include "common/rng.h"
#include "load/profile_config.h"

namespace agentperf {

class ArrivalSchedule {
 public:
  ArrivalSchedule(ArrivalPattern pattern, double total_rate, int worker, int workers, std::uint64_t seed);
  // Offset in ns of this worker's next arrival.
  std::int64_t next_offset_ns();

 private:
  ArrivalPattern pattern_;
  double rate_;
  int worker_, workers_;
  std::uint64_t k_ = 0;
  double t_s_ = 0;
  Rng rng_;
};

}  // namespace agentperf
