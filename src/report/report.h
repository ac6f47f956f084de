// `agentperf report`: one self-contained HTML file (no network at view
// time) over one or more result directories (profile_export.jsonl +
// profile_export_aiperf.json from profile, replay, run, sweep or sim
// predict; a capacity search's folder stands for its measured points), and
// a markdown summary of it for a pull request.
//
// Every point carries its run description (metrics/run_description.h) and
// belongs to one comparable group: runs of one model on one GPU, one
// workload and one time scale. Frontiers are per group (and per kind:
// measured, predicted); a prediction and a measurement of the same point
// are paired with their signed error. The page draws, per group, one
// series per configuration with concurrency labels, throughput per GPU (or
// cost per million tokens, tokens per joule) against interactivity,
// E2E-normalised interactivity or end-to-end latency; latency CDFs on log
// axes and percentile bars per metric; per run, each request's TTFT and ITL
// over time aligned with the server-metric timelines, ISL/OSL histograms and
// lanes; GPU power, utilisation and memory per GPU on the same time axis
// when the run has GPU telemetry; and a table of every point.
//
// Price and power per point: the flags, else the run description's (a
// sweep recipe's `cost` block); power, when no flag gives it, is the GPU
// telemetry's mean over the profiling window before the run description's.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace agentperf::report {

struct ReportOptions {
  int gpus = 0;  // 0: from the results (run description, replay --gpus), else 1
  std::optional<double> gpu_price_per_hour;  // $ per GPU-hour: cost per million tokens
  std::optional<double> gpu_power_watts;     // W per GPU: tokens per joule
  // GPU telemetry per result directory (as given on the command line), from
  // --gpu-metrics DIR=FILE; a directory not named here uses its own
  // gpu_metrics.csv, else gpu_telemetry_export.jsonl (gpu_telemetry.h).
  std::map<std::string, std::string> gpu_metrics;
};

// The data the page renders (exposed for tests).
nlohmann::json report_data(const std::vector<std::string>& dirs, const ReportOptions& opts);

// A capacity search (capacity.json of `agentperf capacity` in `dir`, its
// measured points' "point" set to their index in data["points"] or null)
// as the page's capacity section: the answer, and per SLO its threshold and
// each point's measured value (with its 95 % interval) and predicted value
// on the server's clock (report_capacity.cpp). data["capacity"] holds one
// per search folder given.
nlohmann::json capacity_section(const std::string& dir, const nlohmann::json& capacity_json);

// Adds data["groups"] (comparable groups, their configurations and
// frontiers) and data["pairs"] (prediction against measurement) over
// data["points"]; sets each point's "group" and "series" (report_groups.cpp).
void group_points(nlohmann::json& data);

// The HTML page and the markdown summary of the same data.
std::string render_report(const nlohmann::json& data);
std::string render_markdown(const nlohmann::json& data);

}  // namespace agentperf::report
