// The result files of a replay (profile_export.jsonl, profile_export_aiperf.json
// with the InferenceX aggregate, validity and replay counters), shared by
// `agentperf replay` and `agentperf sweep`.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "metrics/export.h"
#include "metrics/inferencex_aggregate.h"

#include "replay/replay_runner.h"
#include "trace/trace_loader.h"

namespace agentperf::replay {

// Where the server-metrics export's window starts (wall-clock ns): the
// first profiling request when there was a warmup, else 0 (every scrape).
std::int64_t profiling_window_start_wall_ns(const ReplayResult& res);

struct ReplayRunInfo {
  std::string traces_source;
  trace::LoadStats stats;
  int gpus = 1;
  std::string cli_command;
  bool variant_256k = false;
  // profile_export.jsonl was streamed during the run (cfg.sink): only the
  // aggregate is written here. records_error: that stream's write failure.
  bool records_streamed = false;
  std::optional<std::string> records_error;
  // The traces replayed: the theoretical prefix-cache hit of each record's
  // turn and InferenceX's tokens.output_expected. Every replay driver
  // passes them; without them both are empty.
  const std::vector<trace::WekaTrace>* traces = nullptr;
  // server_metrics_export.json of the run (MetricsScraper); when unset,
  // write_replay_outputs reads it from the result directory.
  std::optional<nlohmann::json> server_metrics;
  // InferenceX's process_agentic_result variables (RUNNER_TYPE, CONC, TP,
  // FRAMEWORK, KV_OFFLOADING, RESULT_FILENAME, ...): these override the
  // process environment (inferencex_env_from_process); see
  // resolve_inferencex_env for the defaults.
  InferenceXEnv inferencex_env;
  // The run's "run_description": what the caller knows (the simulator's
  // engine, a sweep's recipe and point); build_replay_aggregate fills the
  // lanes, GPUs, traces and served model, and the model, TP, EP, engine,
  // runner and offload that InferenceX's variables state explicitly.
  RunDescription description;
};

// The replay's verdict: judge_run's (stopped, no success, failed requests
// above max_error_rate: InferenceX's 10 % by default) plus AgentX's
// context-overflow gate (overflows above 1 % of requests).
RunVerdict judge_replay(const ReplayResult& res, double max_error_rate);

struct ReplayAggregate {
  nlohmann::ordered_json json;     // profile_export_aiperf.json
  InferenceXHeadline inferencex;   // its "inferencex" section's headline numbers, as values
  InferenceXAggregate inferencex_full;  // everything InferenceX's result file needs
};

// AIPerf's theoretical prefix-cache hit (TheoreticalPrefixCacheAccumulator):
// over the successful profiling records, each turn's hit blocks (blocks its
// trace had already sent earlier, clamped to [0, total]) and total blocks
// (its hash_ids), turns without blocks skipped.
struct TheoreticalHit {
  std::int64_t hit_blocks = 0, total_blocks = 0;
};
TheoreticalHit theoretical_hit_of_records(const std::vector<RequestRecord>& records,
                                          const std::vector<trace::WekaTrace>& traces);

// InferenceX's trace_metadata: trace id -> `out` of its top-level calls.
ExpectedOutputs expected_outputs_of(const std::vector<trace::WekaTrace>& traces);

// The variables the InferenceX result is built from: info.inferencex_env
// over the process environment, then defaults where still unset:
// CONC = --lanes, MODEL = the served model, TP = --gpus (single node),
// FRAMEWORK = "" and KV_OFFLOADING = "none" (InferenceX requires it).
InferenceXEnv resolve_inferencex_env(const ReplayConfig& cfg, const ReplayRunInfo& info);

// process_agentic_result's output, written as <dir>/<RESULT_FILENAME>.json
// (inferencex_result.json when RESULT_FILENAME is unset). Returns the path,
// or empty with a warning on stderr when InferenceX would have refused the
// metadata (the message is InferenceX's).
std::filesystem::path write_inferencex_result(const std::filesystem::path& dir, const ReplayAggregate& agg,
                                              const ReplayConfig& cfg, const ReplayRunInfo& info);

// The aggregate: AIPerf's metrics, the InferenceX section, the verdict
// (complete, valid, invalid_reasons, metadata.submission_valid) and the
// replay counters. Writes nothing.
ReplayAggregate build_replay_aggregate(const ReplayResult& res, const ReplayConfig& cfg, const ReplayRunInfo& info,
                                       const RunVerdict& verdict);

// build_replay_aggregate, then writes it (and the JSONL unless it was
// streamed) into `dir`, whole or not at all, and InferenceX's result file
// (write_inferencex_result).
ReplayAggregate write_replay_outputs(const ReplayResult& res, const ReplayConfig& cfg, const ReplayRunInfo& info,
                                     const std::filesystem::path& dir, const RunVerdict& verdict);

}  // namespace agentperf::replay
