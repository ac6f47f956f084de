// InferenceX's agentic aggregation, natively (github.com/SemiAnalysisAI/InferenceX
// @ 843c6254ff69, utils/agentic/aggregation/):
//  - request_metrics.py compute_request_metrics: over the successful
//    profiling records (load_records_with_accounting), latencies in seconds
//    {mean, p50, p75, p90, p95, std} (aggregation_common.percentile: linear
//    between ranks; statistics.pstdev), interactivity = 1 / pXX(ITL) (the
//    percentile is inverted, never the reverse), E2E-normalised
//    interactivity = 1 / pXX(E2EL / OSL); QPS over full 1 s windows of
//    request ends only (compute_qps_stats); tokens {input, output_actual,
//    output_expected}; throughput over (last request_end_ns - first
//    request_start_ns) with key duration_seconds; cache
//    {theoretical_cache_hit_rate} from the aggregate's
//    theoretical_prefix_cache_hit (sum / count);
//  - server_metrics.py: the observed cache hit from the engine's Prometheus
//    counters (metrics/inferencex_server_metrics.h);
//  - process_agentic_result.py build_agg: the whole result file (hardware,
//    concurrency, TP/EP/..., request_accounting, request_metrics,
//    server_metrics, kv_cache_pool_tokens), then round_floats (5 decimals,
//    an integral float >= 1 written as an int).
// The gate (validate_agentic_result.py): errors / (successes + errors) <= 10 %.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/record.h"

namespace agentperf {

// trace id -> the recorded `out` of its top-level model calls (type n/s) in
// order: InferenceX's trace_metadata.load_trace_metadata, looked up by
// (conversation_id up to the first "::", turn_index), also for subagent
// records (an InferenceX quirk, kept).
using ExpectedOutputs = std::map<std::string, std::vector<std::int64_t>>;

struct InferenceXInputs {
  int gpus = 1;  // num_gpus of per_gpu throughput (InferenceX: TP * PP_SIZE * PCP_SIZE)
  std::int64_t theoretical_hit_blocks = 0;
  std::int64_t theoretical_total_blocks = 0;
  double max_error_rate = 0.10;
  const ExpectedOutputs* expected_outputs = nullptr;  // none: tokens.output_expected is {}
  const nlohmann::json* server_metrics = nullptr;     // server_metrics_export.json, if scraped
  std::string framework;                              // InferenceX's FRAMEWORK (adapter choice)
};

// The numbers a console line, a sweep row or a frontier reads, kept as
// values beside the JSON so nobody reads them back out of it by key.
struct InferenceXHeadline {
  double total_tput_per_gpu = 0, output_tput_per_gpu = 0;  // tokens/s/GPU
  double intvty_p50 = 0, e2e_norm_intvty_p50 = 0;            // tokens/s; 0 when no request streamed
  double ttft_p50_s = 0, e2el_p50_s = 0;
  // The engine's Prometheus overall prompt-cache hit over the profiling
  // window (server_metrics.cache.overall_cache_hit_rate), else the cached
  // tokens the server reported in its responses' usage; n/a (never 0) when
  // it reports none.
  std::optional<double> observed_cache_hit;
  double theoretical_cache_hit = 0;
  std::int64_t records_profiled = 0, records_error = 0;
  bool valid = false;  // InferenceX's gate: some success and error share <= max_error_rate
};

struct InferenceXAggregate {
  InferenceXHeadline headline;
  // The "inferencex" section of profile_export_aiperf.json: InferenceX's
  // request_metrics {qps, latency, tokens, throughput, cache} plus agentperf's
  // extras (throughput.num_gpus, cache.observed_cache_hit_rate and its
  // source, request_accounting, validity, server_metrics).
  nlohmann::ordered_json json;
  nlohmann::ordered_json request_metrics;   // exactly InferenceX's, unrounded
  nlohmann::ordered_json request_accounting;
  nlohmann::ordered_json server_metrics;    // InferenceX's server_metrics section
  std::vector<std::string> warnings;        // InferenceX's warnings
  std::int64_t successful = 0;
  // InferenceX's flat throughputs (tokens/s), absent below a positive duration:
  // build_agg divides them by its num_gpus into throughput.per_gpu.
  std::optional<double> total_tput, output_tput, input_tput;
};

InferenceXAggregate inferencex_aggregate(const std::vector<RequestRecord>& records, const InferenceXInputs& in);
// The JSON section alone.
inline nlohmann::ordered_json inferencex_request_metrics(const std::vector<RequestRecord>& records,
                                                         const InferenceXInputs& in) {
  return inferencex_aggregate(records, in).json;
}

// aggregation_common.round_floats: every finite float rounded to 5 decimals
// (Python's round: correctly rounded, ties to even), an integral result with
// |x| >= 1 becoming an int.
nlohmann::ordered_json inferencex_round_floats(const nlohmann::ordered_json& j);

// The metadata process_agentic_result reads from its environment, by
// InferenceX's variable names (RUNNER_TYPE, CONC, IMAGE, RECIPE_FINGERPRINT,
// MODEL, MODEL_PREFIX, FRAMEWORK, PRECISION, SPEC_DECODING, DISAGG,
// IS_MULTINODE, TP, EP_SIZE, DP_ATTENTION, PP_SIZE, DCP_SIZE, PCP_SIZE,
// KV_OFFLOADING, KV_OFFLOAD_BACKEND, KV_OFFLOAD_BACKEND_METADATA,
// TOTAL_CPU_DRAM_GB, ROUTER_METADATA, KV_P2P_TRANSFER, PREFILL_*/DECODE_*,
// RESULT_FILENAME). Unset = absent from the map.
using InferenceXEnv = std::map<std::string, std::string>;
// Every variable above that is set in this process's environment.
InferenceXEnv inferencex_env_from_process();
// The names build_agg reads (for --inferencex-env checks and the docs).
const std::vector<std::string>& inferencex_env_names();

// process_agentic_result.build_agg + round_floats: the whole InferenceX
// result file. `aggregate` is profile_export_aiperf.json (metadata.dataset
// is copied). Throws std::invalid_argument with InferenceX's message where
// it would exit (KV_OFFLOADING missing, inconsistent KV offload backend,
// non-positive PP/DCP/PCP, malformed *_METADATA JSON).
nlohmann::ordered_json inferencex_result(const InferenceXAggregate& ix, const nlohmann::ordered_json& aggregate,
                                         const InferenceXEnv& env);
// num_gpus as _gpu_shape computes it (single node: TP * PP_SIZE * PCP_SIZE).
int inferencex_num_gpus(const InferenceXEnv& env);

}  // namespace agentperf
