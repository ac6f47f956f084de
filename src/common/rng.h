// Seeded, platform-independent random numbers (splitmix64 + Box-Muller), so
// a seed gives the same prompts, arrival times and ids on every machine and
// standard library.
#pragma once
#include <cstdint>
#include <string_view>

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

// 64-bit FNV-1a of a string: a stable seed from a name or an id.
std::uint64_t seed_of(std::string_view s) noexcept;

}  // namespace agentperf
