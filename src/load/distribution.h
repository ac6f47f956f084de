// Seeded, platform-independent random numbers (splitmix64 + Box-Muller), so
// a seed gives the same prompts and arrival times on every machine and
// standard library.
#pragma once
#include <cstdint>

#include "load/profile_config.h"

namespace agentperf {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next_u64();
  double uniform();                        // [0, 1)
  double normal(double mean, double stddev);
  double exponential(double rate);         // mean 1/rate
  std::uint64_t below(std::uint64_t n);    // [0, n)

 private:
  std::uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0;
};

// Mixes several values into one seed (stable across runs).
std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0);

// One sample of a length distribution: normal(mean, stddev) rounded and
// clamped to at least dist.min; exactly mean when stddev is 0.
int sample_length(const LengthDistribution& dist, Rng& rng);

}  // namespace agentperf
