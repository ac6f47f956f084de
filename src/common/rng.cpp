#include "common/rng.h"

#include <cmath>

namespace agentperf {

std::uint64_t Rng::next_u64() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Rng::normal(double mean, double stddev) {
  if (has_spare_) {
    has_spare_ = false;
    return mean + stddev * spare_;
  }
  double u1 = uniform(), u2 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * M_PI * u2;
  spare_ = r * std::sin(theta);
  has_spare_ = true;
  return mean + stddev * r * std::cos(theta);
}

double Rng::exponential(double rate) {
  double u = uniform();
  return -std::log1p(-u) / rate;
}

std::uint64_t Rng::below(std::uint64_t n) { return n == 0 ? 0 : next_u64() % n; }

std::uint64_t seed_of(std::string_view s) noexcept {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  Rng r(a ^ 0x243F6A8885A308D3ull);
  std::uint64_t h = r.next_u64() ^ (b * 0x9E3779B97F4A7C15ull);
  Rng r2(h);
  h = r2.next_u64() ^ (c * 0xC2B2AE3D27D4EB4Full);
  Rng r3(h);
  return r3.next_u64();
}

}  // namespace agentperf
