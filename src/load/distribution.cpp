#include "load/distribution.h"

#include <algorithm>
#include <cmath>

namespace agentperf {

int sample_length(const LengthDistribution& dist, Rng& rng) {
  if (dist.stddev <= 0) return std::max(dist.min, static_cast<int>(std::lround(dist.mean)));
  return std::max(dist.min, static_cast<int>(std::lround(rng.normal(dist.mean, dist.stddev))));
}

}  // namespace agentperf
