// Drives `agentperf profile`: worker event loops, closed- and open-loop
// scheduling, phases (warmup, then profiling), stop conditions (request
// count, duration + grace), cancellation, live counters for the progress
// line. No Asio types here: the implementation lives in load_runner.cpp.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "load/profile_config.h"
#include "common/record.h"
#include "common/run_result.h"

namespace agentperf {

class LoadRunner {
 public:
  // model: the resolved model name (after /v1/models discovery).
  // benchmark_id: the run's one identity (written as benchmark_id in the
  // aggregate); every X-Request-ID of the run is derived from it, so ids
  // never repeat across runs while prompts stay seeded. Empty: a fresh one.
  LoadRunner(const ProfileConfig& cfg, std::string model, const std::string& benchmark_id = {});
  ~LoadRunner();

  RunResult run();
  LiveCounters& counters() noexcept;

  // Each finished record is also handed to `sink` (from worker threads) as
  // soon as its request ends: results reach disk while the run goes.
  void set_record_sink(RecordSink* sink) noexcept;

  // A stop request (SIGINT/SIGTERM, common/run_control.h) ends sending; the
  // requests in flight get --grace-period, then are cancelled. These forward
  // to the process-wide stop request.
  static void request_interrupt() noexcept;
  static bool interrupt_requested() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Checks that the target answers and finds the model to use: GET /v1/models
// and take the first id when cfg.model is empty. Throws UserError with the
// reason when the server is unreachable or no model can be determined.
std::string preflight_model(const ClientConfig& cfg);

// What GET /v1/models says about the served model: its id and, where the
// server publishes it (llama.cpp's server: data[0].meta.n_vocab), the
// vocabulary size, used to check token-id prompts against it.
struct ServedModel {
  std::string id;
  std::optional<std::int64_t> vocab_size;
};
ServedModel preflight_served_model(const ClientConfig& cfg);

// Token-id prompts must use ids the model has: throws UserError naming
// `flag` when [min, max) does not fit `vocab_size`.
void check_token_ids_fit(int min, int max, const ServedModel& served, const std::string& flag);

}  // namespace agentperf
