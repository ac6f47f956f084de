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
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "common/record.h"

namespace agentperf {

struct InferenceXInputs {
  int gpus = 1;
  std::int64_t theoretical_hit_blocks = 0;
  std::int64_t theoretical_total_blocks = 0;
  double max_error_rate = 0.10;
};

// The numbers a console line, a sweep row or a frontier reads, kept as
// values beside the JSON so nobody reads them back out of it by key.
struct InferenceXHeadline {
  double total_tput_per_gpu = 0, output_tput_per_gpu = 0;  // tokens/s/GPU
  double intvty_p50 = 0, e2e_norm_intvty_p50 = 0;            // tokens/s; 0 when no request streamed
  double ttft_p50_s = 0, e2el_p50_s = 0;
  std::optional<double> observed_cache_hit;  // n/a when the server reports no cached tokens
  double theoretical_cache_hit = 0;
  std::int64_t records_profiled = 0, records_error = 0;
  bool valid = false;  // InferenceX's gate: some success and error share <= max_error_rate
};

struct InferenceXAggregate {
  InferenceXHeadline headline;
  nlohmann::ordered_json json;  // the "inferencex" section of profile_export_aiperf.json
};

InferenceXAggregate inferencex_aggregate(const std::vector<RequestRecord>& records, const InferenceXInputs& in);
// The JSON section alone.
inline nlohmann::ordered_json inferencex_request_metrics(const std::vector<RequestRecord>& records,
                                                         const InferenceXInputs& in) {
  return inferencex_aggregate(records, in).json;
}

}  // namespace agentperf
