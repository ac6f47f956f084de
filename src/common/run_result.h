// What a measuring run hands to the layers that judge, export and print it:
// its records, how it ended, and the client's connection totals; and the
// live counters the progress line reads while it goes. Shared by the load
// runner, the replay runner and the simulator's predictor.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/record.h"

namespace agentperf {

struct LiveCounters {
  std::atomic<int> phase{0};  // 0 = warmup, 1 = profiling, 2 = done
  std::atomic<std::int64_t> sent{0};
  std::atomic<std::int64_t> done{0};
  std::atomic<std::int64_t> errors{0};
  std::atomic<std::int64_t> in_flight{0};
  std::atomic<std::int64_t> output_tokens{0};
  std::atomic<std::int64_t> phase_start_ns{0};
};

struct ClientTotals {
  std::uint64_t connects = 0, connect_failures = 0, reused = 0, stale_dropped = 0, retries = 0;
};

struct RunResult {
  std::vector<RequestRecord> records;  // warmup first, then profiling
  bool interrupted = false;            // stopped by SIGINT/SIGTERM (stop_signal says which)
  int stop_signal = 0;                 // the signal that stopped it (common/run_control.h), 0 if none
  std::string abort_reason;            // set when the run stopped early
  std::int64_t profiling_start_ns = 0;
  std::int64_t profiling_end_ns = 0;
  std::int64_t profiling_start_wall_ns = 0;
  ClientTotals client;
  std::int64_t profiling_cancelled = 0;
};

}  // namespace agentperf
