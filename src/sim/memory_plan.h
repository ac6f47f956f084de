// How the engine splits GPU memory (and host DRAM with HiCache) into pools,
// following SGLang's sizing code (github.com/sgl-project/sglang,
// python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
// @ 226149ac457b, handle_max_mamba_cache; host pools in
// python/sglang/srt/mem_cache/pool_host/base.py @ 712c06178f7f):
//   rest = usable HBM - weights/rank - usable HBM x (1 - mem_fraction_static)
//   hybrid models: mamba budget = rest x r / (1 + r), r = mamba_full_memory_ratio;
//     slots = floor(budget / (state x (1 + D / ratio))) with spec decoding (D draft
//     tokens), else floor(budget / state); verify intermediates for
//     min(max_running, slots / ratio) requests x D states
//   KV tokens = (rest - intermediates - slots x state) / (KV + draft KV bytes per token)
//   compressed attention (DeepSeek-V4; pool_configurator.py @ 003fca802738,
//     DSV4PoolConfigurator): KV per full token is the whole DSV4 pool's
//     (raw-window pool at swa_full_tokens_ratio, CSA/HCA rows, indexer keys,
//     CSA compressor states), and the HCA compressor states for
//     max_running_requests are taken from the budget first
//   host (per rank, per pool): KV tokens = floor(H x 1e9 / KV bytes per token), Mamba
//     slots = floor(H x 1e9 / state); with H = 0, device tokens x hicache_ratio.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine_config.h"
#include "sim/specs.h"

namespace agentperf::sim {

struct MemoryPlan {
  double weights_bytes_rank = 0;
  double reserved_bytes = 0;
  double rest_bytes = 0;
  double kv_bytes_per_token_rank = 0;     // target KV
  double draft_kv_bytes_per_token_rank = 0;
  double state_bytes_per_request_rank = 0;
  double mamba_budget_bytes = 0;
  std::int64_t mamba_slots = 0;            // device state slots (running + cached checkpoints)
  std::int64_t intermediate_state_requests = 0;
  double intermediate_bytes = 0;
  double compress_state_bytes = 0;          // compressed attention: fixed pool of HCA compressor states
  double kv_budget_bytes = 0;
  std::int64_t kv_tokens = 0;              // device KV pool, tokens (page-aligned)
  std::int64_t max_running_requests = 0;   // after the memory caps
  std::int64_t host_kv_tokens = 0;
  std::int64_t host_mamba_slots = 0;
  double host_bytes_rank = 0;              // all host pools of one rank
  std::vector<std::string> derivation;     // one line per step, for plan output and docs
};

// Throws UserError when the model does not fit (weights above the budget,
// no room for KV).
MemoryPlan plan_memory(const ModelSpec& m, const HardwareSpec& hw, const EngineConfig& cfg);

// The model as the engine serves it: the spec with the engine's
// --kv-cache-dtype in place of its own KV element size (the KV pool, the
// attention reads and the HiCache transfers all follow it).
ModelSpec served_model(ModelSpec m, const EngineConfig& cfg);

}  // namespace agentperf::sim
