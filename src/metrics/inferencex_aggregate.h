// InferenceX's agentic aggregation of profile_export.jsonl
// (github.com/SemiAnalysisAI/InferenceX @ 843c6254ff69,
// utils/agentic/aggregation/request_metrics.py; the 10 % gate is
// utils/agentic/validation/validate_agentic_result.py): over successful profiling
// records, latencies in seconds with {mean, p50, p75, p90, p95, std}
// (numpy linear percentiles, population std); interactivity = 1 / pXX(ITL)
// (the percentile is inverted, never the reverse); E2E-normalised
// interactivity = 1 / pXX(E2EL / OSL); throughput over (last end - first
// start), also per GPU; QPS in 1 s windows; observed prompt-cache hit =
// sum(cached) / sum(ISL); validity = errors / all <= 10 %.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "common/record.h"

namespace agentperf {

struct InferenceXInputs {
  int gpus = 1;
  std::int64_t theoretical_hit_blocks = 0;
  std::int64_t theoretical_total_blocks = 0;
  double max_error_rate = 0.10;
};

nlohmann::ordered_json inferencex_request_metrics(const std::vector<RequestRecord>& records, const InferenceXInputs& in);

}  // namespace agentperf
