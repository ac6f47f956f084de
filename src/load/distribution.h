// Length distributions of synthetic prompts, sampled from the seeded Rng.
#pragma once
#include "common/rng.h"
#include "load/profile_config.h"

namespace agentperf {

// One sample of a length distribution: normal(mean, stddev) rounded and
// clamped to at least dist.min; exactly mean when stddev is 0.
int sample_length(const LengthDistribution& dist, Rng& rng);

}  // namespace agentperf
