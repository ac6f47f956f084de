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
};

// The replay's verdict: judge_run's (stopped, no success, failed requests
// above max_error_rate: InferenceX's 10 % by default) plus AgentX's
// context-overflow gate (overflows above 1 % of requests).
RunVerdict judge_replay(const ReplayResult& res, double max_error_rate);

struct ReplayAggregate {
  nlohmann::ordered_json json;     // profile_export_aiperf.json
  InferenceXHeadline inferencex;   // its "inferencex" section's headline numbers, as values
};

// The aggregate: AIPerf's metrics, the InferenceX section, the verdict
// (complete, valid, invalid_reasons, metadata.submission_valid) and the
// replay counters. Writes nothing.
ReplayAggregate build_replay_aggregate(const ReplayResult& res, const ReplayConfig& cfg, const ReplayRunInfo& info,
                                       const RunVerdict& verdict);

// build_replay_aggregate, then writes it (and the JSONL unless it was
// streamed) into `dir`, whole or not at all.
ReplayAggregate write_replay_outputs(const ReplayResult& res, const ReplayConfig& cfg, const ReplayRunInfo& info,
                                     const std::filesystem::path& dir, const RunVerdict& verdict);

}  // namespace agentperf::replay
