// Time sources. All intervals use the monotonic clock; wall-clock time is
// paired with it once per request so exports can carry epoch timestamps
// (the same split AIPerf makes between perf_counter_ns and time_ns).
#pragma once
#include <cstdint>

namespace agentperf {

// Nanoseconds on the monotonic clock (CLOCK_MONOTONIC via steady_clock).
std::int64_t monotonic_ns() noexcept;

// Nanoseconds since the Unix epoch (CLOCK_REALTIME).
std::int64_t wall_ns() noexcept;

// CPU seconds this process has used (CLOCK_PROCESS_CPUTIME_ID): what a
// virtual-time run costs.
double process_cpu_seconds() noexcept;

// A fixed pairing of the two clocks taken at one instant, used to convert
// monotonic stamps into wall-clock stamps without a second clock read.
struct ClockAnchor {
  std::int64_t mono_ns;
  std::int64_t wall_ns;
  static ClockAnchor now() noexcept;
  std::int64_t to_wall(std::int64_t mono) const noexcept { return wall_ns + (mono - mono_ns); }
};

}  // namespace agentperf
