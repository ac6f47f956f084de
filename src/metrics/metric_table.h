// Every per-request metric in one table: its tag (AIPerf's name in
// profile_export.jsonl and the aggregate), unit, console label, definition
// and accessor. The JSONL record, the aggregate, the console summary and
// the HTML report all read this table, so a metric is defined in one place
// (AIPerf keeps each metric as one class with the same parts:
// github.com/ai-dynamo/aiperf, src/aiperf/metrics/types/).
//
// Interactivity, InferenceX's per-user speed, is derived here too:
// interactivity at percentile p = 1 / (percentile p of ITL in seconds) —
// the percentile is taken first and inverted after, so "p90 interactivity"
// is the speed the slowest 10 % of users get, never the reverse
// (github.com/SemiAnalysisAI/InferenceX, utils/agentic/aggregation/
// request_metrics.py @ 843c6254ff69). E2E-normalised interactivity is the
// same over (request latency / OSL).
#pragma once
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/record.h"
#include "metrics/record_metrics.h"

namespace agentperf {

struct MetricDef {
  const char* tag;
  const char* unit;
  const char* label;       // console summary row; nullptr = not shown there
  const char* definition;  // how it is computed, in words
  bool integral;           // exported as an integer
  bool streaming_only;     // n/a without a streamed answer
  std::optional<double> (*value)(const RequestRecord&, const RecordMetrics&);
};

// In export order. inter_chunk_latency (one value per event, not per request)
// is the table's last row and has no scalar accessor.
std::span<const MetricDef> metric_table();
const MetricDef* find_metric(std::string_view tag);
inline constexpr std::string_view kInterChunkLatency = "inter_chunk_latency";

// 1 / x for x > 0, else 0: interactivity (tokens/s per user) from an ITL or
// E2EL-per-token percentile in seconds.
inline double interactivity(double seconds_per_token) { return seconds_per_token > 0 ? 1.0 / seconds_per_token : 0.0; }

}  // namespace agentperf
