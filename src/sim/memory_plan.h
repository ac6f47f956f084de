// How the engine splits GPU memory (and host DRAM with HiCache) into pools,
// following SGLang's sizing code (github.com/sgl-project/sglang,
// python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
// @ 226149ac457b, handle_max_mamba_cache; host pools in
// python/sglang/srt/mem_cache/pool_host/base.py @ 712c06178f7f):
//   rest = usable HBM - weights/rank - usable HBM x (1 - mem_fraction_static)
//   hybrid models: mamba budget = rest x r / (1 + r), r = mamba_full_memory_ratio;
//     slots = floor(budget / (state x (1 + D / ratio))) with spec decoding (D draft
//     tokens), else floor(budget / state); verify intermediates for
//     min(max_running, slots / ratio) requests x D states; --max-mamba-cache-size N
//     sets slots = N outright (the same intermediates, for min(max_running, N / ratio))
//   KV tokens = (rest - intermediates - slots x state) / (KV + draft KV bytes per token)
//   compressed attention (DeepSeek-V4; pool_configurator.py @ 003fca802738,
//     DSV4PoolConfigurator): KV per full token is the whole DSV4 pool's
//     (raw-window pool at swa_full_tokens_ratio, CSA/HCA rows, indexer keys,
//     CSA compressor states), and the HCA compressor states for
//     max_running_requests are taken from the budget first
//   compressed attention with a cap-sized raw-window pool (swa_cap_sizing below):
//     the raw windows leave the per-token bytes and become a fixed pool of
//     SWA slots = the request cap + swa_prefix_tails x (window + page), each
//     slot a row in every layer, taken from the budget first
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
  // Cap-sized raw-window pool (swa_cap_sizing): its slots and bytes, and how
  // many cached prefix tails it keeps (-1: the pool is not cap-sized and
  // does not limit prefix reuse).
  std::int64_t swa_slots = 0;
  double swa_bytes = 0;
  std::int64_t swa_prefix_tails = -1;
  double kv_budget_bytes = 0;
  std::int64_t kv_tokens = 0;              // device KV pool, tokens (page-aligned)
  std::int64_t max_running_requests = 0;   // after the memory caps
  std::int64_t host_kv_tokens = 0;
  std::int64_t host_mamba_slots = 0;
  double host_bytes_rank = 0;              // all host pools of one rank
  std::vector<std::string> derivation;     // one line per step, for plan output and docs
};

// Whether SGLang sizes the model's raw sliding-window pool in cap mode
// (github.com/sgl-project/sglang, python/sglang/srt/model_executor/
// pool_configurator.py of the DeepSeek-V4.1 branch, merged as pull request
// 38798: DSV4PoolConfigurator._resolve_swa_cap_tokens). The model's
// overrides leave --swa-full-tokens-ratio unset for DeepSeek-V4.1 (the
// spec's swa_cap_sizing), and the configurator then reserves
//   slots = ceil_page(max_running x (window + 128 x D + page + decode_alloc)
//                     + 2 x chunked_prefill_size + page
//                     + swa_prefix_tails x (window + page))
// where 128 is SGLANG_SWA_EVICTION_INTERVAL's default, D the verified draft
// tokens (1 without speculation), decode_alloc 2 x max(steps, D) with
// speculation (the overlap scheduler) and a page without, and
// swa_prefix_tails --swa-prefix-tails or 4 x max_running_requests. It needs
// a running cap and a chunk size; an explicit --swa-full-tokens-ratio
// sizes the pool by ratio instead. A cached prefix is reusable only while
// its last window still holds slots, so the tails bound prefix reuse
// (sim/radix_cache.h): InferenceX pull requests 3346 and 3347 found
// DeepSeek-V4.1-Flash losing its AgentX prefix hits to this bound "while
// full-context KV remained available".
bool swa_cap_sizing(const ModelSpec& m, const EngineConfig& cfg);

// Throws UserError when the model does not fit (weights above the budget,
// no room for KV).
MemoryPlan plan_memory(const ModelSpec& m, const HardwareSpec& hw, const EngineConfig& cfg);

// The spec as one rank of an engine on `gpus` GPUs whose KV and attention
// are sharded over `attention_tp` (EngineConfig::tp) sees it: its weights
// scaled so that weights / attention_tp is what the rank holds, 1/gpus of
// them, except that under DP attention the spec's
// dp_attention_replicated_bytes (the attention and the embedding) are held
// at 1/attention_tp: (total - r) / gpus + r / attention_tp.
ModelSpec rank_model(const ModelSpec& m, int gpus, int attention_tp, bool dp_attention);

// Whether SGLang stores a DSA model's FP8 latents in FlashMLA's scaled
// layout (656 B for a 512 + 64 latent) rather than raw (576 B). SGLang
// (github.com/sgl-project/sglang, python/sglang/srt/model_executor/
// model_runner_kv_cache_mixin.py @ 226149ac457b, calculate_mla_kv_cache_dim)
// keeps the raw layout when either DSA backend is trtllm, and on ROCm when
// either is tilelang or aiter; every other backend reads the scaled one.
// "auto" resolves as SGLang's _set_default_dsa_backends (server_args.py)
// does for an FP8 cache: trtllm on compute capability 10 and above
// (Blackwell), flashmla_kv on Hopper; on ROCm it is taken as TileLang,
// which InferenceX's ROCm launchers name explicitly. The published pools
// agree: 152.51 GiB for 2,965,312 tokens on a GB300 prefill rank and
// 169.98 GiB for "3.3M" on B300 (GLM-5.2 FP8 KV, no backend flag on B300)
// are 78 x (576 + 132) B a token, not 78 x (656 + 132) (docs/sim.md,
// "KV layout").
bool dsa_fp8_scaled_latent(const EngineConfig& cfg, const HardwareSpec& hw);

// The model as the engine serves it on `hw`: the spec with the engine's
// --kv-cache-dtype in place of its own KV element size (the KV pool, the
// attention reads and the HiCache transfers all follow it) and, for a DSA
// model, the latent layout its DSA backend stores.
ModelSpec served_model(ModelSpec m, const EngineConfig& cfg, const HardwareSpec& hw);

}  // namespace agentperf::sim
