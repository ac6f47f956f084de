#include "sim/memory_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/error.h"

namespace agentperf::sim {
namespace {
std::string fmt(const char* f, double a = 0, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}
constexpr double GiB = 1024.0 * 1024 * 1024;
constexpr double MiB = 1024.0 * 1024;
}  // namespace

ModelSpec rank_model(const ModelSpec& spec, int gpus, int attention_tp, bool dp_attention) {
  ModelSpec m = spec;
  const double k = static_cast<double>(std::max(1, attention_tp)) / std::max(1, gpus);
  const double replicated = dp_attention ? m.dp_attention_replicated_bytes : 0.0;
  m.dense_weight_bytes = (m.dense_weight_bytes - replicated) * k + replicated;
  m.other_weight_bytes *= k;
  if (m.moe) m.moe->routed_weight_bytes *= k;
  if (m.mtp) {
    m.mtp->weight_bytes *= k;
    m.mtp->own_embed_head_bytes *= k;
  }
  return m;
}

bool dsa_fp8_scaled_latent(const EngineConfig& cfg, const HardwareSpec& hw) {
  auto resolved = [&](const std::string& backend) {
    if (backend != "auto") return backend;
    if (hw.rocm) return std::string("tilelang");
    return std::string(hw.cuda_sm >= 100 ? "trtllm" : "flashmla_kv");
  };
  const std::string prefill = resolved(cfg.dsa_prefill_backend), decode = resolved(cfg.dsa_decode_backend);
  if (prefill == "trtllm" || decode == "trtllm") return false;
  auto raw_on_rocm = [](const std::string& b) { return b == "tilelang" || b == "aiter"; };
  if (hw.rocm && (raw_on_rocm(prefill) || raw_on_rocm(decode))) return false;
  return true;
}

bool swa_cap_sizing(const ModelSpec& m, const EngineConfig& cfg) {
  return m.attention.kind == AttentionLayout::Kind::compressed && m.attention.swa_cap_sizing &&
         cfg.scheduler == SchedulerKind::sglang && cfg.swa_full_tokens_ratio <= 0 && cfg.max_running_requests > 0 &&
         cfg.chunked_prefill_size > 0;
}

ModelSpec served_model(ModelSpec m, const EngineConfig& cfg, const HardwareSpec& hw) {
  if (cfg.kv_cache_dtype_bytes > 0) m.kv_dtype_bytes = cfg.kv_cache_dtype_bytes;
  // The raw-window pool: by the command's ratio, or cap-sized (a fixed pool
  // the plan reserves, so no per-token share).
  if (m.attention.kind == AttentionLayout::Kind::compressed) {
    if (swa_cap_sizing(m, cfg))
      m.attention.swa_full_tokens_ratio = 0;
    else if (cfg.swa_full_tokens_ratio > 0)
      m.attention.swa_full_tokens_ratio = cfg.swa_full_tokens_ratio;
  }
  // vLLM on gfx942 finds no MX kernel for an MX checkpoint (its MXFP8 MoE
  // oracle falls through to EMULATION, and the MX linear kernels require
  // gfx95x) and, by default (VLLM_MXFP8_EMULATION_DEQUANT_AT_LOAD), turns
  // the weights into BF16 once at load: model_executor/layers/quantization/
  // modelopt.py and fused_moe/oracle/mxfp8.py in github.com/vllm-project/vllm,
  // main of 2026-09. They are then that large in HBM and in every read.
  if (m.weights_without_mx && cfg.scheduler == SchedulerKind::vllm && hw.platform == "rocm_gfx942") {
    m.dense_weight_bytes = m.weights_without_mx->dense_weight_bytes;
    if (m.moe) m.moe->routed_weight_bytes = m.weights_without_mx->routed_weight_bytes;
    m.compute_dtype = m.weights_without_mx->compute_dtype;
  }
  if (m.attention.sparse_mla()) m.attention.fp8_scaled_latent = dsa_fp8_scaled_latent(cfg, hw);
  return m;
}

MemoryPlan plan_memory(const ModelSpec& as_specified, const HardwareSpec& hw, const EngineConfig& cfg) {
  const ModelSpec m = served_model(as_specified, cfg, hw);
  MemoryPlan p;
  const int tp = std::max(1, cfg.tp);
  const bool spec = cfg.spec.enabled && m.mtp;
  auto& d = p.derivation;

  // With MTP, the draft's weights count against the static budget (SGLang
  // loads target and draft weights before it sizes the pools:
  // python/sglang/srt/managers/scheduler.py init_memory_pools, and
  // pool_configurator.py @ 003fca802738, "draft weights are now counted"),
  // including the draft's own embedding and LM head, which are freed only
  // after the pools exist, when the draft takes the target's
  // (speculative/eagle_worker_v2.py init_lm_head -> set_embed_and_head):
  // that memory ends up unused, but the pools are already smaller by it.
  const double draft = spec ? m.mtp->weight_bytes + m.mtp->own_embed_head_bytes : 0.0;
  const double weights = m.total_weight_bytes() + draft;
  p.weights_bytes_rank = weights / tp;
  if (spec && m.mtp->own_embed_head_bytes > 0)
    d.push_back(fmt("draft (MTP) weights %.2f GB, incl. its own embed + lm_head %.2f GB resident while the pools are sized",
                    draft / 1e9, m.mtp->own_embed_head_bytes / 1e9));
  p.reserved_bytes = hw.hbm_usable_bytes * (1.0 - cfg.mem_fraction_static);
  p.rest_bytes = hw.hbm_usable_bytes - p.weights_bytes_rank - p.reserved_bytes;
  d.push_back(fmt("weights per rank = %.1f GB / TP%.0f = %.2f GiB", weights / 1e9, tp, p.weights_bytes_rank / GiB));
  d.push_back(fmt("reserved (1 - mem_fraction_static %.2f) x %.1f GiB usable HBM = %.2f GiB", cfg.mem_fraction_static,
                  hw.hbm_usable_bytes / GiB, p.reserved_bytes / GiB));
  d.push_back(fmt("rest = %.2f - %.2f - %.2f = %.2f GiB", hw.hbm_usable_bytes / GiB, p.weights_bytes_rank / GiB,
                  p.reserved_bytes / GiB, p.rest_bytes / GiB));
  if (p.rest_bytes <= 0)
    throw UserError(fmt("model does not fit: weights need %.1f GiB per rank but only %.1f GiB of HBM is left after the "
                        "%.0f%% reserve; use a larger TP or mem_fraction_static",
                        p.weights_bytes_rank / GiB, (hw.hbm_usable_bytes - p.reserved_bytes) / GiB,
                        (1 - cfg.mem_fraction_static) * 100));

  p.kv_bytes_per_token_rank = m.kv_bytes_per_token_rank(tp);
  p.draft_kv_bytes_per_token_rank = spec ? m.draft_kv_bytes_per_token_rank(tp) : 0.0;
  p.state_bytes_per_request_rank = m.state_bytes_per_request_rank(tp);
  const auto& at = m.attention;
  const bool cap_sized = swa_cap_sizing(as_specified, cfg);
  if (at.kind == AttentionLayout::Kind::compressed)
    d.push_back((cap_sized
                     ? std::string("KV per full token per rank = (raw windows cap-sized, below)")
                     : fmt("KV per full token per rank = %.2f x %.0f B raw window rows x %.0f layers",
                           at.swa_full_tokens_ratio, at.entry_bytes, m.layers_full)) +
                fmt(" + (%.0f B row + %.0f B index key) / %.0f x %.0f CSA layers", at.entry_bytes, at.indexer_bytes,
                    at.csa_ratio, at.csa_owning_layers()) +
                (at.csa_owning_layers() != at.csa_layers ? " owning a cache (the others share them)" : "") +
                fmt(" + %.0f B / %.0f x %.0f HCA layers + CSA compressor states (ring %.0f)", at.entry_bytes,
                    at.hca_ratio, at.hca_layers, at.csa_state_ring) +
                fmt(" = %.0f B, SGLang DSV4 pool, not split over TP (+ %.0f B draft KV)", p.kv_bytes_per_token_rank,
                    p.draft_kv_bytes_per_token_rank));
  else if (at.kind == AttentionLayout::Kind::sparse_gqa)
    d.push_back(fmt("KV per token per rank = %.0f layers x 2 x %.0f KV heads x %.0f x %.0f B", m.layers_full,
                    m.kv_heads_per_rank(tp), m.head_dim, m.kv_dtype_bytes) +
                fmt(" + %.0f sparse layers x %.0f x %.0f B index key (not split over TP)", at.sparse_layers,
                    at.index_dim, at.index_dtype_bytes) +
                fmt(" = %.0f B (+ %.0f B draft KV)", p.kv_bytes_per_token_rank, p.draft_kv_bytes_per_token_rank));
  else if (m.mla())
    d.push_back((m.attention.fp8_scaled_latent && m.kv_dtype_bytes == 1
                     ? fmt("KV per token per rank = %.0f layers x ((%.0f latent + %.0f scale + %.0f x 2 B rope)",
                           m.layers_full, m.attention.kv_lora_rank, m.attention.kv_lora_rank / 128 * 4,
                           m.attention.qk_rope_head_dim) +
                           " FP8 scaled layout"
                     : fmt("KV per token per rank = %.0f layers x ((%.0f latent + %.0f rope) x %.0f B", m.layers_full,
                           m.attention.kv_lora_rank, m.attention.qk_rope_head_dim, m.kv_dtype_bytes)) +
                fmt(" + %.0f B", m.attention.extra_bytes_per_layer) +
                (m.attention.sparse_mla() ? " index key" : "") + "), MLA, not split over TP" +
                fmt(" = %.0f B (+ %.0f B draft KV)", p.kv_bytes_per_token_rank, p.draft_kv_bytes_per_token_rank));
  else
    d.push_back(fmt("KV per token per rank = %.0f layers x 2 x %.0f KV heads x %.0f x %.0f B", m.kv_growing_layers(),
                    m.kv_heads_per_rank(tp), m.head_dim, m.kv_dtype_bytes) +
                fmt(" = %.0f B (+ %.0f B draft KV)", p.kv_bytes_per_token_rank, p.draft_kv_bytes_per_token_rank));
  if (m.attention.kind == AttentionLayout::Kind::sliding_window)
    d.push_back(fmt("+ %.0f sliding-window layers capped at %.0f tokens: %.1f MiB per request per rank (not charged "
                    "to the pool)",
                    m.attention.windowed_layers, m.attention.window, m.window_kv_bytes_per_request_rank(tp) / MiB));

  double kv_budget = p.rest_bytes;
  const std::int64_t requested_running = cfg.max_running_requests > 0 ? cfg.max_running_requests : 1 << 20;
  p.max_running_requests = requested_running;
  if (m.hybrid()) {
    const double r = cfg.mamba_full_memory_ratio;
    const double state = p.state_bytes_per_request_rank;
    const int D = spec ? cfg.spec.num_draft_tokens : 0;
    const int ratio = std::max(1, cfg.mamba_running_ratio);
    d.push_back(fmt("state per request per rank = %.1f MiB (conv + SSM over the linear-attention layers)", state / MiB));
    if (cfg.max_mamba_cache_size > 0) {  // --max-mamba-cache-size: the slots as given
      p.mamba_slots = cfg.max_mamba_cache_size;
      p.mamba_budget_bytes = static_cast<double>(p.mamba_slots) * state;
      d.push_back("mamba slots = " + std::to_string(p.mamba_slots) +
                  fmt(" (--max-mamba-cache-size) x %.1f MiB = %.2f GiB", state / MiB, p.mamba_budget_bytes / GiB));
    } else {
      p.mamba_budget_bytes = p.rest_bytes * r / (1 + r);
      p.mamba_slots = static_cast<std::int64_t>(std::floor(p.mamba_budget_bytes / (state * (1.0 + double(D) / ratio))));
      d.push_back(fmt("mamba budget = rest x %.2f / %.2f = %.2f GiB", r, 1 + r, p.mamba_budget_bytes / GiB));
      d.push_back(fmt("mamba slots = floor(%.2f GiB / (%.1f MiB x (1 + %.0f/%.0f)))", p.mamba_budget_bytes / GiB,
                      state / MiB, D, ratio) +
                  " = " + std::to_string(p.mamba_slots));
    }
    p.intermediate_state_requests = std::min<std::int64_t>(requested_running, p.mamba_slots / ratio);
    p.intermediate_bytes = state * static_cast<double>(p.intermediate_state_requests) * D;
    kv_budget = p.rest_bytes - p.intermediate_bytes - static_cast<double>(p.mamba_slots) * state;
    p.max_running_requests = std::min<std::int64_t>(requested_running, p.mamba_slots / ratio);
    d.push_back("verify intermediates for min(max_running " +
                (cfg.max_running_requests > 0 ? std::to_string(cfg.max_running_requests) : std::string("unset")) +
                ", slots/" + std::to_string(ratio) + ") = " + std::to_string(p.intermediate_state_requests) +
                fmt(" requests x %.0f states = %.2f GiB", D, p.intermediate_bytes / GiB));
  }
  const double per_token = p.kv_bytes_per_token_rank + p.draft_kv_bytes_per_token_rank;
  if (at.kind == AttentionLayout::Kind::compressed) {
    if (!cap_sized)
      d.push_back(fmt("(raw windows: %.0f layers x %.0f rows x %.0f B = %.1f MiB per request per rank, in the pool "
                      "above)",
                      m.layers_full, at.window, at.entry_bytes, m.window_kv_bytes_per_request_rank(tp) / MiB));
    // SGLang DSV4PoolConfigurator.calculate_pool_sizes: the HCA compressor
    // states are a fixed pool for max_running_requests slots, taken from the
    // budget first; without --max-running-requests SGLang sizes it for
    // clamp(full tokens / context x 512, 2048, 4096) requests (at most half
    // the full tokens).
    std::int64_t requests = cfg.max_running_requests;
    if (requests <= 0) {
      const double full = std::floor(kv_budget / per_token);
      const double estimated = std::clamp(std::floor(full / std::max(1, m.max_context) * 512), 2048.0, 4096.0);
      requests = static_cast<std::int64_t>(std::min(estimated, std::floor(full / 2)));
    }
    p.compress_state_bytes = m.compress_state_pool_bytes_rank(requests);
    kv_budget -= p.compress_state_bytes;
    if (cap_sized) {
      const std::int64_t page = std::max(1, cfg.page_size), window = at.window, running = cfg.max_running_requests;
      const std::int64_t D = spec ? cfg.spec.num_draft_tokens : 1;
      const std::int64_t decode_alloc = spec ? 2 * std::max<std::int64_t>(cfg.spec.num_steps, D) : page;
      const std::int64_t per_request = window + 128 * D + page + decode_alloc;
      const std::int64_t cap = per_request * running + 2 * std::int64_t(cfg.chunked_prefill_size) + page;
      p.swa_prefix_tails = cfg.swa_prefix_tails >= 0 ? cfg.swa_prefix_tails : 4 * running;
      const std::int64_t slots = cap + p.swa_prefix_tails * (window + page);
      p.swa_slots = (slots + page - 1) / page * page;
      // A slot is a raw row in every layer, with the CSA compressor states
      // that ride on raw-window pages.
      const double slot_bytes = at.entry_bytes * static_cast<double>(m.layers_full) +
                                static_cast<double>(at.csa_state_ring) / at.window * 2.0 * 2 *
                                    (m.head_dim + at.index_dim) * 4 * at.csa_owning_layers();
      p.swa_bytes = static_cast<double>(p.swa_slots) * slot_bytes;
      kv_budget -= p.swa_bytes;
      d.push_back("raw-window pool, cap-sized (no --swa-full-tokens-ratio): " + std::to_string(running) +
                  " running x (" + std::to_string(window) + " window + 128 x " + std::to_string(D) + " draft + " +
                  std::to_string(page) + " page + " + std::to_string(decode_alloc) + " decode) + 2 x " +
                  std::to_string(cfg.chunked_prefill_size) + " chunk + " + std::to_string(page) + " + " +
                  std::to_string(p.swa_prefix_tails) + " prefix tails" +
                  (cfg.swa_prefix_tails >= 0 ? " (--swa-prefix-tails)" : " (4 x max_running)") + " x (" +
                  std::to_string(window) + " + " + std::to_string(page) + ") = " + std::to_string(p.swa_slots) +
                  fmt(" slots x %.0f B = %.2f GiB", slot_bytes, p.swa_bytes / GiB));
    }
    d.push_back("HCA compressor states for " + std::to_string(requests) +
                (cfg.max_running_requests > 0 ? " requests" : " requests (SGLang's estimate, max_running unset)") +
                fmt(" + 1: %.0f rows each of %.0f B x %.0f HCA layers = %.2f GiB", at.hca_state_ring,
                    2.0 * m.head_dim * 4, at.hca_layers, p.compress_state_bytes / GiB));
  }
  p.kv_budget_bytes = kv_budget;
  std::int64_t tokens = kv_budget > 0 ? static_cast<std::int64_t>(std::floor(kv_budget / per_token)) : 0;
  const int page = std::max(1, cfg.page_size);
  tokens = tokens / page * page;
  p.kv_tokens = tokens;
  d.push_back(fmt("KV pool = %.2f GiB / %.0f B per token", kv_budget / GiB, per_token) + " = " +
              std::to_string(p.kv_tokens) + " tokens");
  // --max-total-tokens caps the pool below what memory allows (SGLang
  // ModelRunner.init_memory_pool: max_total_num_tokens = min(the profiled
  // count, server_args.max_total_tokens)).
  if (cfg.max_total_tokens > 0 && cfg.max_total_tokens < p.kv_tokens) {
    p.kv_tokens = cfg.max_total_tokens / page * page;
    d.push_back("KV pool capped by --max-total-tokens at " + std::to_string(p.kv_tokens) + " tokens");
  }
  if (p.kv_tokens < page * 16)
    throw UserError(fmt("no room for the KV cache: %.2f GiB left after weights and state pools", kv_budget / GiB));
  if (m.hybrid() && p.max_running_requests < 1)
    throw UserError("no room for linear-attention state slots: the model cannot run a single request");

  if (cfg.hicache.enabled) {
    if (cfg.hicache.size_gb > 0) {
      const double H = cfg.hicache.size_gb * 1e9;
      p.host_kv_tokens = static_cast<std::int64_t>(std::floor(H / p.kv_bytes_per_token_rank)) / page * page;
      p.host_mamba_slots = m.hybrid() ? static_cast<std::int64_t>(std::floor(H / p.state_bytes_per_request_rank)) : 0;
      p.host_bytes_rank = H * (m.hybrid() ? 2.0 : 1.0) +
                          static_cast<double>(p.host_kv_tokens) * p.draft_kv_bytes_per_token_rank;
      d.push_back(fmt("host KV = floor(%.0f GB / %.0f B), whole pages = ", cfg.hicache.size_gb, p.kv_bytes_per_token_rank) +
                  std::to_string(p.host_kv_tokens) + " tokens per rank");
      if (m.hybrid())
        d.push_back(fmt("host Mamba = floor(%.0f GB / %.1f MiB) = ", cfg.hicache.size_gb,
                        p.state_bytes_per_request_rank / MiB) +
                    std::to_string(p.host_mamba_slots) + " slots per rank");
    } else {
      p.host_kv_tokens = static_cast<std::int64_t>(static_cast<double>(p.kv_tokens) * cfg.hicache.ratio) / page * page;
      p.host_mamba_slots = static_cast<std::int64_t>(static_cast<double>(p.mamba_slots) * cfg.hicache.ratio);
      p.host_bytes_rank = static_cast<double>(p.host_kv_tokens) * per_token +
                          static_cast<double>(p.host_mamba_slots) * p.state_bytes_per_request_rank;
      d.push_back(fmt("host KV = device tokens x hicache_ratio %.1f = ", cfg.hicache.ratio) +
                  std::to_string(p.host_kv_tokens) + " tokens per rank");
    }
    if (p.draft_kv_bytes_per_token_rank > 0)
      d.push_back(fmt("draft host KV = host KV tokens x %.0f B = %.2f GB per rank", p.draft_kv_bytes_per_token_rank,
                      static_cast<double>(p.host_kv_tokens) * p.draft_kv_bytes_per_token_rank / 1e9));
  }
  return p;
}

}  // namespace agentperf::sim
