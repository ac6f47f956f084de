// `--slice-duration S`: the client-side time slices AIPerf writes beside its
// aggregate, `profile_export_aiperf_timeslices.json` and `.csv`, so that a
// long run's latencies can be read over time (a KV-cache cliff that sets in
// after 20 minutes shows in the slices, not in the hour's p50).
//
// AIPerf's rules (ai-dynamo/aiperf: src/aiperf/metrics/accumulator.py,
// _compute_timeslices, at 0b483f64; the exporters
// src/aiperf/exporters/timeslice_metrics_json_exporter.py at 7123bb9b and
// timeslice_metrics_csv_exporter.py at 880522f7), as followed here:
//   - the slices start at the earliest request start of the profiled
//     requests and are S seconds long; the last ends at the latest request
//     end and says "is_complete": false when that cuts it short;
//   - a request belongs to the slice its start falls in ([start, end));
//   - a slice without requests is left out (the array's position is not
//     the slice's grid index);
//   - each slice has "start_ns" and "end_ns" (wall clock) and, per metric,
//     the same distribution summary as the aggregate's (unit, avg, min, max,
//     p1..p99, std, count, sum) over its requests, plus request_count;
//   - the CSV is long: `Timeslice,Metric,Unit,Stat,Value`, one row per
//     slice (its position), metric and statistic, numbers as %.2f; the
//     Metric column holds the metric's tag (AIPerf writes its display name).
// Successful profiling requests only (warmup and failures have no metrics).
// Not written: AIPerf's time-weighted sweep-line metrics per slice
// (throughput and concurrency over the window).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/record.h"

namespace agentperf {

nlohmann::ordered_json client_timeslices(const std::vector<RequestRecord>& records, double slice_s,
                                         const nlohmann::json& input_config);
std::string client_timeslices_csv(const nlohmann::ordered_json& timeslices);

// Writes both files into `dir`, each whole or not at all; throws UserError
// (exit code 3) when one cannot be written.
void write_client_timeslices(const std::filesystem::path& dir, const std::vector<RequestRecord>& records,
                             double slice_s, const nlohmann::json& input_config);

}  // namespace agentperf
