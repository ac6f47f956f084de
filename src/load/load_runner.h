// Drives `agentperf profile`: worker event loops, closed- and open-loop
// scheduling, phases (warmup, then profiling), stop conditions (request
// count, duration + grace), cancellation, live counters for the progress
// line. No Asio types here: the implementation lives in load_runner.cpp.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "load/profile_config.h"
#include "metrics/record.h"

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
  std::uint64_t connects = 0, connect_failures = 0, reused = 0, stale_dropped = 0;
};

struct RunResult {
  std::vector<RequestRecord> records;  // warmup first, then profiling
  bool interrupted = false;            // Ctrl-C
  std::string abort_reason;            // set when the run stopped early
  std::int64_t profiling_start_ns = 0;
  std::int64_t profiling_end_ns = 0;
  std::int64_t profiling_start_wall_ns = 0;
  ClientTotals client;
  std::int64_t profiling_cancelled = 0;
};

class LoadRunner {
 public:
  // model: the resolved model name (after /v1/models discovery).
  LoadRunner(const ProfileConfig& cfg, std::string model);
  ~LoadRunner();

  RunResult run();
  LiveCounters& counters() noexcept;

  // Async-signal-safe: asks every running LoadRunner to stop (Ctrl-C).
  static void request_interrupt() noexcept;
  static bool interrupt_requested() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Checks that the target answers and finds the model to use: GET /v1/models
// and take the first id when cfg.model is empty. Throws UserError with the
// reason when the server is unreachable or no model can be determined.
std::string preflight_model(const ProfileConfig& cfg);

}  // namespace agentperf
