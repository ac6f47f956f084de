// `agentperf report`: one self-contained HTML file (no network at view
// time) over one or more result directories (profile_export.jsonl +
// profile_export_aiperf.json from profile, replay, run or sim predict):
// Pareto frontier of throughput per GPU against interactivity (1 / ITL) or
// E2E-normalised interactivity at a selectable percentile, latency CDFs,
// per-second timelines, per-lane request spans, and a table of all points.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace agentperf::report {

struct ReportOptions {
  int gpus = 0;  // 0: from the results (replay --gpus), else 1
};

// The data the page renders (exposed for tests).
nlohmann::json report_data(const std::vector<std::string>& dirs, const ReportOptions& opts);
std::string render_report(const nlohmann::json& data);

}  // namespace agentperf::report
