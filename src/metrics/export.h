// Result files with AIPerf's shapes (aiperf.md §6):
//   profile_export.jsonl        one line per request: metadata, metrics {tag: {value, unit}}, error
//   profile_export_aiperf.json  per-metric avg/min/max/std/p1..p99/count/sum, throughputs over
//                               (last request end - first request start), error summary, input config
// Files are written to a temporary name and renamed, so a file that exists is
// complete; an interrupted or aborted run says so inside the aggregate.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "load/load_runner.h"
#include "metrics/record.h"

namespace agentperf {

nlohmann::ordered_json record_to_json(const RequestRecord& r);

struct AggregateInputs {
  const RunResult* run = nullptr;
  nlohmann::json input_config;
  std::string benchmark_id;
  std::string cli_command;
};

nlohmann::ordered_json build_aggregate(const std::vector<RequestRecord>& records, const AggregateInputs& in);

void write_profile_jsonl(const std::filesystem::path& path, const std::vector<RequestRecord>& records);
void write_json_file(const std::filesystem::path& path, const nlohmann::ordered_json& j);

// Human summary of the aggregate on `out` (stdout by default).
void print_summary(const nlohmann::ordered_json& aggregate, std::FILE* out = stdout);

}  // namespace agentperf
