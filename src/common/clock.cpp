#include "common/clock.h"

#include <chrono>
#include <ctime>

namespace agentperf {

std::int64_t monotonic_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t wall_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ClockAnchor ClockAnchor::now() noexcept {
  ClockAnchor a{};
  a.mono_ns = monotonic_ns();
  a.wall_ns = agentperf::wall_ns();
  return a;
}

}  // namespace agentperf

double agentperf::process_cpu_seconds() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}
