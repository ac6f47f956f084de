// Result files with AIPerf's shapes (github.com/ai-dynamo/aiperf,
// docs/tutorials/working-with-profile-exports.md @ e51cbbaf65a6,
// docs/reference/json-export-schema.md @ 1554b478d4ee):
//   profile_export.jsonl        one line per request: metadata, metrics {tag: {value, unit}}, error
//   profile_export_aiperf.json  per-metric avg/min/max/std/p1..p99/count/sum, throughputs over
//                               (last request end - first request start), error summary, input config
// The aggregate is written to a temporary name and renamed, so a file that
// exists is whole; an interrupted or aborted run says so inside it
// (complete: false, stop_reason, valid: false). Live runs stream the JSONL
// while they go (metrics/record_stream.h).
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/run_result.h"
#include "common/record.h"
#include "metrics/run_description.h"
#include "metrics/slo.h"

namespace agentperf {

// A record's profile_export.jsonl line as a DOM (the line itself is written
// by metrics/record_json.h, the one definition of its shape).
nlohmann::ordered_json record_to_json(const RequestRecord& r);

// Wall-clock ns as local ISO 8601 with microseconds (AIPerf's start/end times).
std::string iso_local(std::int64_t wall_ns);

// AIPerf's is_context_overflow_response allow-list
// (AIPERF_AGENTX_CONTEXT_OVERFLOW_SUBSTRINGS: "context length", "maximum
// context", "context_length_exceeded", "prompt is too long"), case-insensitive
// on the error's message or type: the aggregate's context_overflow_count.
bool is_context_overflow_error(const ErrorInfo& e);

// What a finished run amounts to, decided once and written into the
// aggregate, printed on the console and turned into the exit code
// (common/run_control.h), so that the three never disagree.
//   complete: the run reached its planned end (not stopped by a signal, its
//             own failed-request threshold, or a failed worker)
//   valid:    complete, at least one profiling request succeeded, and the
//             failed profiling requests (requests cancelled at the end of the
//             grace period are not failures) are at most max_error_rate of
//             all of them
struct RunVerdict {
  bool complete = true;
  std::string stop_reason;
  bool valid = true;
  std::vector<std::string> invalid_reasons;
  int exit_code = 0;
};

RunVerdict judge_run(const std::vector<RequestRecord>& records, const RunResult& run, double max_error_rate);

struct AggregateInputs {
  const RunResult* run = nullptr;
  nlohmann::json input_config;
  std::string benchmark_id;
  std::string cli_command;
  const RunVerdict* verdict = nullptr;      // written as complete/valid/invalid_reasons when given
  std::optional<std::string> records_error;  // profile_export.jsonl could not be written
  // Written as "run_description"; its command_line defaults to cli_command.
  RunDescription description;
  // The run asked for no shared prefix (profile without --prefix-length):
  // prompt tokens the server reports as cached mean the run measured a
  // prefix cache warmed by something else (an earlier run's prompts), and
  // the aggregate says so (unexpected_prefix_cache).
  bool expect_no_cached_prompts = false;
  // --slo: goodput (requests/sec meeting every SLO's threshold) and
  // slo_attainment in the aggregate (metrics/slo.h).
  std::vector<Slo> slos;
};

nlohmann::ordered_json build_aggregate(const std::vector<RequestRecord>& records, const AggregateInputs& in);

// One JSON line; bytes that are not UTF-8 are replaced, never thrown on.
std::string dump_json_line(const nlohmann::ordered_json& j);

void write_profile_jsonl(const std::filesystem::path& path, const std::vector<RequestRecord>& records);
void write_json_file(const std::filesystem::path& path, const nlohmann::ordered_json& j);

// The one writer of a run's result files, for every producer (profile, run,
// replay, sim predict, sweep points measured or predicted): `dir`/
// profile_export.jsonl (unless the run already streamed it there) and
// `dir`/profile_export_aiperf.json, each whole or not at all. The aggregate
// is build_aggregate's, plus the producer's own sections (inferencex, sim,
// replay, metadata), so every results file has one shape.
void write_run_results(const std::filesystem::path& dir, const std::vector<RequestRecord>& records,
                       const nlohmann::ordered_json& aggregate, bool records_streamed);

// Human summary of the aggregate on `out` (stdout by default).
void print_summary(const nlohmann::ordered_json& aggregate, std::FILE* out = stdout);

}  // namespace agentperf
