// InferenceX's server-metrics section, natively: the observed prompt-cache
// hit rates, KV-cache usage, KV offload and token totals of an engine, from
// AIPerf's server_metrics_export.json (counters as their increase over the
// profiling window, `stats.total`). Follows github.com/SemiAnalysisAI/InferenceX
// @ 843c6254ff69, utils/agentic/aggregation/server_metrics.py
// (compute_server_metrics), backends/base.py (empty_server_metrics,
// apply_profile_totals, counter_int), backends/{dynamo_vllm,atom,sglang,vllm}.py
// (detect_backend order: dynamo-vllm, atom, sglang, vllm) and
// aggregation_common.py (sum_stat, gauge_stat, sum_by_label, rate,
// normalize_fraction).
//
// Differences, on purpose:
//  - an export whose metrics no adapter knows (llama.cpp's `llamacpp:`,
//    TensorRT-LLM's `trtllm:`) makes InferenceX raise "Unsupported agentic
//    server metrics backend"; here the section stays empty (adapter "none")
//    and the message goes into `warnings`, so a run is never lost over it;
//  - the engines' logs (server_log_metrics.py, the GPU KV pool size) are not
//    read: kv_cache.gpu_total_tokens is SGLang's max_total_num_tokens gauge
//    or null.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace agentperf {

struct InferenceXServerMetrics {
  nlohmann::ordered_json nested;      // InferenceX's agg["server_metrics"]
  std::vector<std::string> warnings;  // InferenceX's agg["warnings"]
  // server_overall_cache_hit_rate: the observed prompt-cache hit, n/a when
  // the engine reports no cached tokens (no such counter in the export).
  std::optional<double> overall_cache_hit_rate;
};

// `export_json`: server_metrics_export.json (or null/empty: none scraped).
// `framework`: InferenceX's FRAMEWORK (dynamo-* picks the Dynamo adapter).
// `isl`/`osl`: the successful profiling records' token counts (the totals
// InferenceX falls back to when the engine exports none).
InferenceXServerMetrics inferencex_server_metrics(const nlohmann::json& export_json, const std::string& framework,
                                                  const std::vector<std::int64_t>& isl,
                                                  const std::vector<std::int64_t>& osl, std::size_t records);

}  // namespace agentperf
