// The result files of a replay (profile_export.jsonl, profile_export_aiperf.json
// with the InferenceX aggregate, validity and replay counters), shared by
// `agentperf replay` and `agentperf sweep`.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "replay/replay_runner.h"
#include "trace/trace_loader.h"

namespace agentperf::replay {

struct ReplayRunInfo {
  std::string traces_source;
  trace::LoadStats stats;
  int gpus = 1;
  std::string cli_command;
  bool variant_256k = false;
};

// Writes both files into `dir` (whole or not at all) and returns the aggregate.
nlohmann::ordered_json write_replay_outputs(const ReplayResult& res, const ReplayConfig& cfg, const ReplayRunInfo& info,
                                            const std::filesystem::path& dir);

}  // namespace agentperf::replay
