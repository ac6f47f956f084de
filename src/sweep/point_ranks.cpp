#include "sweep/point_ranks.h"

#include "common/error.h"

namespace agentperf::sweep {

PointRanks point_ranks(const recipe::PointEngine& pe, const sim::ModelSpec& model, const sim::HardwareSpec& hw,
                       const sim::EngineConfig& cfg) {
  PointRanks out;
  const sim::ModelSpec& rank_model = pe.model ? *pe.model : model;
  for (int i = 0; i < pe.dp * pe.workers; ++i) {
    out.owned.push_back(std::make_unique<sim::Engine>(rank_model, hw, cfg));
    out.ranks.push_back(out.owned.back().get());
  }
  const bool several = out.ranks.size() > 1;
  if (pe.dp > 1 && pe.workers == 1) {
    // One engine's DP-attention ranks behind the launcher's router:
    // InferenceX's SGLang DP arms start sglang_router with --policy
    // consistent_hashing --dp-aware and export
    // AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID, its vLLM DP arms
    // vllm-router --policy consistent_hash with
    // AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID
    // (benchmarks/single_node/agentic/glm5.2_fp4_b300_sglang_mtp.sh,
    // dsv4_fp4_b200_sglang_mtp.sh, dsv4_fp4_b200_vllm_mtp.sh @ 843c6254ff69).
    // So each conversation (a subagent is one of its own) goes where its
    // AIPerf correlation id hashes, with no load bound: the stream's key,
    // not the tree's (routing_headers off).
    out.routing_headers = false;
    out.options.policy = route::Policy::consistent_hash;
  } else {
    out.routing_headers = several;  // replicas behind a session-sticky router keyed on the session tree
    out.options.policy = several ? route::Policy::session_sticky : route::Policy::round_robin;
  }
  out.options.lockstep_ranks = pe.dp > 1 ? pe.dp : 1;
  return out;
}

PointRanks multinode_ranks(const std::vector<recipe::PointEngine>& pools, const sim::ModelSpec& model,
                           const sim::HardwareSpec& hw) {
  const recipe::PointEngine& prefill = pools.front();
  PointRanks out = point_ranks(prefill, model, hw, prefill.config);
  // point_ranks routes by session tree only over several engines; a lone
  // prefill engine in front of a decode pool routes nothing itself.
  if (pools.size() < 2) return out;
  if (!(hw.kv_transfer_bandwidth > 0))
    throw UserError("hardware spec '" + hw.name +
                    "' gives no kv_transfer_bandwidth_one_way: a disaggregated point sends each prompt's KV from its "
                    "prefill to its decode engine over that link (bytes/s, one way, per GPU)");
  PointRanks decode = point_ranks(pools[1], model, hw, pools[1].config);
  replay::VirtualReplayOptions::DecodePool pool;
  pool.engines = decode.ranks;
  pool.lockstep_ranks = decode.options.lockstep_ranks;
  pool.transfer_bytes_per_s = hw.kv_transfer_bandwidth * hw.eff_nvlink;
  out.options.decode = std::move(pool);
  for (auto& e : decode.owned) out.owned.push_back(std::move(e));
  return out;
}

}  // namespace agentperf::sweep
