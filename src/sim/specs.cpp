#include "sim/specs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_reader.h"
#include "sim/builtin_specs.h"
#include "sim/hardware_profile.h"

namespace agentperf::sim {
namespace {
using json = nlohmann::json;

std::pair<json, std::string> read_spec(const std::string& name_or_path,
                                       const std::map<std::string, std::string>& builtins, const char* kind) {
  if (auto it = builtins.find(name_or_path); it != builtins.end())
    return {json::parse(it->second), "built-in " + std::string(kind) + " spec '" + name_or_path + "'"};
  if (!std::filesystem::exists(name_or_path)) {
    std::string known;
    for (const auto& [k, v] : builtins) known += (known.empty() ? "" : ", ") + k;
    throw UserError(std::string("unknown ") + kind + " spec '" + name_or_path + "': not a built-in (" + known +
                    ") and no such file");
  }
  std::ifstream in(name_or_path);
  return {parse_json(in, name_or_path), name_or_path};
}
}  // namespace

double ModelSpec::total_weight_bytes() const {
  return dense_weight_bytes + other_weight_bytes + (moe ? moe->routed_weight_bytes : 0.0);
}

int ModelSpec::kv_heads_per_rank(int tp) const { return std::max(1, kv_heads / std::max(1, tp)); }

double ModelSpec::prefill_work_share(double prefill_tokens, double prefill_requests) const {
  const int layers = layers_full + layers_linear;
  if (prefill_layers <= 0 || prefill_layers >= layers || prefill_tokens <= 0) return 1.0;
  // Every prompt row runs the first prefill_layers; the rest run only on
  // each request's last prefill_tail_tokens rows.
  const double run_all = static_cast<double>(prefill_layers) / layers;
  const double tail_rows = std::min(prefill_tokens, std::max(0.0, prefill_requests) * prefill_tail_tokens);
  return run_all + (1.0 - run_all) * tail_rows / prefill_tokens;
}

bool ModelSpec::capped_reads() const {
  return attention.kind == AttentionLayout::Kind::compressed || attention.kind == AttentionLayout::Kind::sparse_gqa ||
         attention.sparse_mla();
}

double ModelSpec::gqa_bytes_per_token_layer_rank(int tp) const {
  return 2.0 * kv_heads_per_rank(tp) * head_dim * kv_dtype_bytes;
}

double ModelSpec::kv_bytes_per_token_layer_rank(int tp) const {
  switch (attention.kind) {
    case AttentionLayout::Kind::mla:  // not sharded: every rank holds the whole latent
      if (attention.fp8_scaled_latent && kv_dtype_bytes == 1)
        return attention.kv_lora_rank + attention.kv_lora_rank / 128 * 4 + attention.qk_rope_head_dim * 2 +
               attention.extra_bytes_per_layer;
      return static_cast<double>(attention.kv_lora_rank + attention.qk_rope_head_dim) * kv_dtype_bytes +
             attention.extra_bytes_per_layer;
    case AttentionLayout::Kind::compressed:
    case AttentionLayout::Kind::sparse_gqa:
      return kv_bytes_per_token_rank(tp) / layers_full;
    default:
      return gqa_bytes_per_token_layer_rank(tp);
  }
}

int ModelSpec::kv_growing_layers() const {
  return attention.kind == AttentionLayout::Kind::sliding_window ? layers_full - attention.windowed_layers
                                                                  : layers_full;
}

int ModelSpec::context_walk_layers() const {
  switch (attention.kind) {
    case AttentionLayout::Kind::gqa:
    case AttentionLayout::Kind::sliding_window: return kv_growing_layers();
    case AttentionLayout::Kind::sparse_gqa: return layers_full - attention.sparse_layers;
    default: return 0;
  }
}

double ModelSpec::kv_bytes_per_token_rank(int tp) const {
  const auto& a = attention;
  switch (a.kind) {
    case AttentionLayout::Kind::compressed: {
      // SGLang DSV4PoolConfigurator._get_bytes_per_full_token
      // (python/sglang/srt/model_executor/pool_configurator.py @ 003fca802738):
      // the raw-window pool holds swa_full_tokens_ratio x full tokens in every
      // layer; CSA layers a row and an indexer key per csa_ratio tokens, HCA
      // layers a row per hca_ratio tokens; the CSA compressor states (kv and
      // score, 2 x 2 x dim fp32, for the attention row and the indexer key)
      // ring_size per raw-window page of `window` tokens. The row is one MQA
      // latent: every rank holds it whole, whatever the TP.
      const double L = layers_full, row = a.entry_bytes;
      const double csa_state = 2.0 * 2 * (head_dim + a.index_dim) * 4;
      // Only the layers owning a cache store (csa_cache_layers).
      const double owners = a.csa_owning_layers();
      return a.swa_full_tokens_ratio * row * L + row / a.csa_ratio * owners + row / a.hca_ratio * a.hca_layers +
             static_cast<double>(a.indexer_bytes) / a.csa_ratio * owners +
             a.swa_full_tokens_ratio * a.csa_state_ring / a.window * csa_state * owners;
    }
    case AttentionLayout::Kind::sparse_gqa:
      // SGLang DefaultPoolConfigurator._compute_cell_size, MiniMax sparse
      // branch (pool_configurator.py @ 003fca802738): GQA K+V in every layer,
      // one index key (K only) per sparse layer, single-head, on every rank.
      return layers_full * gqa_bytes_per_token_layer_rank(tp) +
             static_cast<double>(a.sparse_layers) * a.index_dim * a.index_dtype_bytes;
    default:
      return kv_growing_layers() * kv_bytes_per_token_layer_rank(tp);
  }
}

double ModelSpec::draft_kv_bytes_per_token_rank(int tp) const {
  if (!mtp) return 0;
  return mtp->draft_kv_layers * kv_bytes_per_token_layer_rank(tp);
}

double ModelSpec::state_bytes_per_request_rank(int tp) const {
  if (!hybrid()) return 0;
  const auto& l = *linear;
  const double conv = static_cast<double>(l.conv_dim) / tp * (l.conv_kernel - 1) * l.conv_dtype_bytes;
  const double ssm = static_cast<double>(l.v_heads) / tp * l.v_dim * l.k_dim * l.ssm_dtype_bytes;
  return (conv + ssm) * layers_linear;
}

double ModelSpec::window_kv_bytes_per_request_rank(int tp) const {
  if (attention.kind == AttentionLayout::Kind::compressed)
    return static_cast<double>(layers_full) * attention.window * attention.entry_bytes;
  if (attention.kind != AttentionLayout::Kind::sliding_window) return 0;
  return static_cast<double>(attention.windowed_layers) * attention.window * kv_bytes_per_token_layer_rank(tp);
}

double ModelSpec::compress_state_pool_bytes_rank(std::int64_t max_running) const {
  const auto& a = attention;
  if (a.kind != AttentionLayout::Kind::compressed || a.hca_layers == 0) return 0;
  // SGLang DSV4PoolConfigurator._get_c128_state_fixed_bytes (offline c128):
  // ring_size rows per request slot (max_running + 1 slots) + ring + 1,
  // rounded up to 128 rows, of (kv, score) x head_dim fp32, per HCA layer.
  const double slots = static_cast<double>(max_running) + 1;
  const double rows = std::ceil((slots * a.hca_state_ring + a.hca_state_ring + 1) / 128.0) * 128.0;
  return rows * 2.0 * head_dim * 4 * a.hca_layers;
}

double ModelSpec::kv_read_bytes_rank(int tp, double requests, double context_tokens) const {
  const auto& a = attention;
  if (!capped_reads()) return context_tokens * kv_bytes_per_token_rank(tp);
  if (requests <= 0 || context_tokens <= 0) return 0;
  const double c = context_tokens / requests;  // each request at the mean context
  double per_request = 0;
  if (a.kind == AttentionLayout::Kind::compressed) {
    // Every layer reads its raw window; CSA layers that score the indexer
    // read every indexer key, every CSA layer the top-k rows; HCA layers
    // read every compressed row.
    const double row = a.entry_bytes, csa_rows = c / a.csa_ratio;
    const double topk_rows = std::min(csa_rows, static_cast<double>(a.csa_topk));
    per_request = layers_full * std::min(c, static_cast<double>(a.window)) * row +
                  a.csa_scoring_layers() * csa_rows * a.indexer_bytes + a.csa_layers * topk_rows * row +
                  a.hca_layers * c / a.hca_ratio * row;
  } else if (a.sparse_mla()) {
    // A layer that scores reads every index key; every layer reads the
    // latents (with their scales and rope part) of the top-k tokens.
    const SparseMlaRead r = sparse_mla_read(tp, c);
    per_request = scoring_layers() * r.index_keys + layers_full * r.top_k_latents;
  } else {
    // Dense layers read the whole context; sparse layers every index key and
    // the GQA KV of the selected blocks.
    const double kv = gqa_bytes_per_token_layer_rank(tp);
    const double topk_tokens = std::min(c, static_cast<double>(a.topk_tokens));
    per_request = (layers_full - a.sparse_layers) * c * kv +
                  a.sparse_layers * (c * a.index_dim * a.index_dtype_bytes + topk_tokens * kv);
  }
  return per_request * requests;
}

double ModelSpec::draft_kv_read_bytes_rank(int tp, double requests, double context_tokens) const {
  if (!mtp || kv_growing_layers() == 0) return 0;
  if (!capped_reads()) return context_tokens * draft_kv_bytes_per_token_rank(tp);
  if (attention.sparse_mla() && requests > 0 && context_tokens > 0) {
    // The MTP layer runs its own indexer (GLM-5.2's index_share_for_mtp_iteration
    // shares it across the draft's steps, not with the target's layers):
    // one scoring layer's reads.
    const SparseMlaRead r = sparse_mla_read(tp, context_tokens / requests);
    return requests * mtp->draft_kv_layers * (r.index_keys + r.top_k_latents);
  }
  // The draft's layers read as the average target layer does.
  return kv_read_bytes_rank(tp, requests, context_tokens) * mtp->draft_kv_layers / layers_full;
}

double ModelSpec::attention_flops_per_query(double ctx) const {
  const auto& a = attention;
  // Per (query, key) pair: 2 FLOPs per multiply-add over QK^T (head_dim) and
  // PV (head_dim) for every query head; the indexer's scores on top
  // (indexer_flops_per_query).
  const double pair = 4.0 * q_heads * head_dim;
  if (a.kind == AttentionLayout::Kind::compressed) {
    // K = V = the one latent row (MQA over head_dim).
    const double csa_rows = ctx / a.csa_ratio;
    return layers_full * std::min(ctx, static_cast<double>(a.window)) * pair +
           a.csa_layers * std::min(csa_rows, static_cast<double>(a.csa_topk)) * pair +
           a.hca_layers * ctx / a.hca_ratio * pair + indexer_flops_per_query(ctx);
  }
  if (a.kind == AttentionLayout::Kind::sparse_gqa)
    return (layers_full - a.sparse_layers) * ctx * pair +
           a.sparse_layers * std::min(ctx, static_cast<double>(a.topk_tokens)) * pair + indexer_flops_per_query(ctx);
  if (a.sparse_mla())  // absorbed MLA over the top-k, and the indexer over the whole context
    return layers_full * std::min(ctx, static_cast<double>(a.topk_tokens)) * mla_pair() + indexer_flops_per_query(ctx);
  return ctx * attention_flops_per_token_per_ctx();
}

double ModelSpec::indexer_flops_per_query(double ctx) const {
  // Per scored row: 2 FLOPs per multiply-add over index_dim for every index head.
  const auto& a = attention;
  const double index_pair = 2.0 * a.index_heads * a.index_dim;
  if (a.kind == AttentionLayout::Kind::compressed) return a.csa_scoring_layers() * ctx / a.csa_ratio * index_pair;
  if (a.kind == AttentionLayout::Kind::sparse_gqa) return a.sparse_layers * ctx * index_pair;
  if (a.sparse_mla()) return scoring_layers() * ctx * index_pair;
  return 0;
}

ModelSpec::SparseMlaRead ModelSpec::sparse_mla_read(int tp, double context) const {
  const double latent = kv_bytes_per_token_layer_rank(tp) - attention.index_key_bytes;
  return {context * attention.index_key_bytes, std::min(context, static_cast<double>(attention.topk_tokens)) * latent};
}

int ModelSpec::scoring_layers() const {
  return attention.index_layers > 0 ? attention.index_layers : layers_full;
}

double ModelSpec::indexer_flops(double query_tokens, double attn_pairs) const {
  if (!capped_reads() || query_tokens <= 0 || attn_pairs <= 0) return 0;
  return query_tokens * indexer_flops_per_query(attn_pairs / query_tokens);
}

double ModelSpec::index_heads_per_rank(int tp) const {
  const double heads = attention.index_heads;
  if (attention.kind == AttentionLayout::Kind::sparse_gqa) return std::max(1.0, heads / std::max(1, tp));
  return heads;
}

double ModelSpec::mla_pair() const {
  // Absorbed MLA (decode, and SGLang's absorbed extend): per head, QK^T over
  // the latent plus the rope part (kv_lora_rank + qk_rope_head_dim) and PV
  // over the latent (kv_lora_rank), 2 FLOPs per multiply-add.
  const double r = attention.kv_lora_rank, rope = attention.qk_rope_head_dim;
  return 2.0 * q_heads * ((r + rope) + r);
}

double ModelSpec::attention_flops(double query_tokens, double attn_pairs) const {
  if (!capped_reads()) return attention_flops_per_token_per_ctx() * attn_pairs;
  if (query_tokens <= 0 || attn_pairs <= 0) return 0;
  return query_tokens * attention_flops_per_query(attn_pairs / query_tokens);
}

double ModelSpec::attention_flops_per_token_per_ctx() const {
  const auto& a = attention;
  if (a.sparse_mla()) return 2.0 * a.index_heads * a.index_dim * scoring_layers();  // past the top-k: the indexer
  if (mla()) return mla_pair() * layers_full;
  const double pair = 4.0 * q_heads * head_dim, index_pair = 2.0 * a.index_heads * a.index_dim;
  if (a.kind == AttentionLayout::Kind::compressed)  // past the window and the top-k: indexer and HCA rows
    return a.csa_scoring_layers() * index_pair / a.csa_ratio + a.hca_layers * pair / a.hca_ratio;
  if (a.kind == AttentionLayout::Kind::sparse_gqa)  // past the top-k: dense layers and index keys
    return (layers_full - a.sparse_layers) * pair + a.sparse_layers * index_pair;
  return pair * kv_growing_layers();
}

std::string HardwareSpec::math_dtype_for(const std::string& dtype) const {
  static const std::vector<std::string> order = {"fp4", "fp8", "bf16"};
  auto it = std::find(order.begin(), order.end(), dtype);
  for (; it != order.end(); ++it)
    if (peak_flops.count(*it)) return *it;
  if (!peak_flops.empty()) return peak_flops.begin()->first;
  return dtype;
}

double HardwareSpec::peak_for(const std::string& dtype) const {
  if (auto p = peak_flops.find(math_dtype_for(dtype)); p != peak_flops.end()) return p->second;
  return 1e15;
}

double HardwareSpec::host_link_rate(double page_bytes) const {
  if (profile && !profile->host_link_h2d.empty()) return host_link_bandwidth * profile->host_link_h2d.at(page_bytes);
  return host_link_bandwidth * eff_host_link;
}

namespace {
// Plausible magnitudes, in the file's units (bytes, bytes/s, FLOP/s,
// seconds). They exist to catch a number written in other units (GB instead
// of bytes, ms instead of s), which would otherwise pass as a valid but
// absurd spec; a real chip or model is orders of magnitude inside them.
constexpr double kMinWeightBytes = 1e6, kMaxWeightBytes = 1e14;
constexpr double kMinHbmBytes = 1e9, kMaxHbmBytes = 1e13;
constexpr double kMinBandwidth = 1e8, kMaxBandwidth = 1e15;
constexpr double kMinPeakFlops = 1e12, kMaxPeakFlops = 1e18;
constexpr double kMaxOverheadS = 0.1;  // a launch or per-step overhead of 100 ms is already absurd

// A number within [lo, hi] of `unit`; the error names the unit, since an
// out-of-range value here is usually one written in the wrong unit.
double quantity(const JsonReader& f, std::string_view path, double lo, double hi, const char* unit) {
  const double v = f.number(path);
  if (!(v >= lo && v <= hi))
    f.fail(path, "must be in [" + format_json_number(lo) + ", " + format_json_number(hi) + "] " + unit);
  return v;
}
double quantity_or(const JsonReader& f, std::string_view path, double fallback, double lo, double hi,
                   const char* unit) {
  return f.has(path) ? quantity(f, path, lo, hi, unit) : fallback;
}

// The dtypes the simulator knows peaks and GEMM math for.
bool known_dtype(const std::string& d) { return d == "bf16" || d == "fp8" || d == "fp4"; }
}  // namespace

ModelSpec load_model_spec(const std::string& name_or_path) {
  auto [j, source] = read_spec(name_or_path, builtin_model_json(), "model");
  const JsonReader f(j, source);
  // Like recipes, a spec names every key it uses: a misspelt key would
  // otherwise leave its field at the default without a word.
  f.reject_unknown_keys({"name", "served_model_name", "family", "notes", "layers_full_attention", "layers_linear_attention",
                         "hidden_size", "q_heads", "kv_heads", "head_dim", "kv_dtype_bytes", "linear_attention", "moe",
                         "mtp", "attention", "dense_weight_bytes", "other_weight_bytes", "dp_attention_replicated_bytes",
                         "active_params", "compute_dtype", "weights_without_mx",
                         "max_context", "prefill_layers", "prefill_tail_tokens"});
  const auto pos = JsonRange::positive();
  const auto dtype_bytes = JsonRange::between(1, 8);
  ModelSpec m;
  m.name = f.string("name");
  if (m.name.empty()) f.fail("name", "must be a non-empty string");
  m.served_model_name = f.string_or("served_model_name", m.name);
  m.family = f.string_or("family", m.name);
  if (f.has("notes")) (void)f.string("notes");
  m.layers_full = f.integer("layers_full_attention", pos);
  m.layers_linear = f.integer_or("layers_linear_attention", 0, JsonRange::between(0, 100000));
  m.hidden = f.integer("hidden_size", pos);
  m.q_heads = f.integer("q_heads", pos);
  m.kv_heads = f.integer("kv_heads", JsonRange::between(1, m.q_heads));
  m.head_dim = f.integer("head_dim", pos);
  m.kv_dtype_bytes = f.integer("kv_dtype_bytes", dtype_bytes);
  m.dense_weight_bytes = quantity(f, "dense_weight_bytes", kMinWeightBytes, kMaxWeightBytes, "bytes");
  m.other_weight_bytes = quantity_or(f, "other_weight_bytes", 0.0, 0, kMaxWeightBytes, "bytes");
  m.dp_attention_replicated_bytes = quantity_or(f, "dp_attention_replicated_bytes", 0.0, 0, kMaxWeightBytes, "bytes");
  if (m.dp_attention_replicated_bytes > m.dense_weight_bytes)
    f.fail("dp_attention_replicated_bytes", "must be part of dense_weight_bytes (at most " +
                                                std::to_string(static_cast<long long>(m.dense_weight_bytes)) + ")");
  m.active_params = quantity(f, "active_params", kMinWeightBytes, kMaxWeightBytes, "parameters");
  m.compute_dtype = f.string_or("compute_dtype", "bf16");
  if (!known_dtype(m.compute_dtype)) f.fail("compute_dtype", "must be one of bf16, fp8, fp4");
  if (f.has("weights_without_mx")) {
    const JsonReader w = f.object("weights_without_mx");
    w.reject_unknown_keys({"dense_weight_bytes", "routed_weight_bytes", "compute_dtype", "notes"});
    ModelSpec::WeightsWithoutMx x;
    x.dense_weight_bytes = quantity(w, "dense_weight_bytes", kMinWeightBytes, kMaxWeightBytes, "bytes");
    if (f.has("moe"))
      x.routed_weight_bytes = quantity(w, "routed_weight_bytes", kMinWeightBytes, kMaxWeightBytes, "bytes");
    else if (w.has("routed_weight_bytes"))
      w.fail("routed_weight_bytes", "needs the spec's \"moe\" (a dense model has no routed experts)");
    x.compute_dtype = w.string_or("compute_dtype", "bf16");
    if (!known_dtype(x.compute_dtype)) w.fail("compute_dtype", "must be one of bf16, fp8, fp4");
    m.weights_without_mx = x;
  }
  m.max_context = f.integer("max_context", pos);
  m.prefill_layers =
      f.integer_or("prefill_layers", 0, JsonRange::between(1, std::max(1, m.layers_full + m.layers_linear)));
  m.prefill_tail_tokens = f.integer_or("prefill_tail_tokens", 0, JsonRange::between(0, 1 << 24));
  if (f.has("prefill_tail_tokens") && m.prefill_layers == 0)
    f.fail("prefill_tail_tokens", "needs prefill_layers (the layers every prompt token runs)");
  if (f.has("attention")) {
    const JsonReader at = f.object("attention");
    const std::string kind = at.string("kind");
    AttentionLayout a;
    if (kind == "gqa") {
      at.reject_unknown_keys({"kind"});
    } else if (kind == "mla") {
      at.reject_unknown_keys({"kind", "kv_lora_rank", "qk_rope_head_dim", "extra_bytes_per_layer", "topk_tokens",
                              "index_heads", "index_dim", "index_key_bytes", "index_layers"});
      a.kind = AttentionLayout::Kind::mla;
      a.kv_lora_rank = at.integer("kv_lora_rank", JsonRange::between(1, 65536));
      a.qk_rope_head_dim = at.integer("qk_rope_head_dim", JsonRange::between(0, 4096));
      a.extra_bytes_per_layer = at.integer_or("extra_bytes_per_layer", 0, JsonRange::between(0, 65536));
      // Sparse MLA (DSA): all four, or none.
      if (at.has("topk_tokens") || at.has("index_heads") || at.has("index_dim") || at.has("index_key_bytes")) {
        a.topk_tokens = at.integer("topk_tokens", JsonRange::between(1, 1 << 30));
        a.index_heads = at.integer("index_heads", JsonRange::between(1, 1 << 20));
        a.index_dim = at.integer("index_dim", JsonRange::between(1, 1 << 20));
        a.index_key_bytes = at.integer("index_key_bytes", JsonRange::between(1, 1 << 20));
        if (a.index_key_bytes > a.extra_bytes_per_layer)
          at.fail("index_key_bytes", "must be part of extra_bytes_per_layer (" +
                                         std::to_string(a.extra_bytes_per_layer) + ")");
        a.index_layers = at.integer_or("index_layers", 0, JsonRange::between(1, std::max(1, m.layers_full)));
      } else if (at.has("index_layers")) {
        at.fail("index_layers", "needs topk_tokens, index_heads, index_dim and index_key_bytes (a sparse MLA layout)");
      }
    } else if (kind == "sliding_window") {
      at.reject_unknown_keys({"kind", "window", "windowed_layers"});
      a.kind = AttentionLayout::Kind::sliding_window;
      a.window = at.integer("window", JsonRange::between(1, 1 << 24));
      // At least one layer must keep the whole context: the KV pool is sized per token.
      a.windowed_layers = at.integer("windowed_layers", JsonRange::between(1, std::max(1, m.layers_full - 1)));
      if (a.windowed_layers >= m.layers_full)
        at.fail("windowed_layers", "must be less than layers_full_attention (" + std::to_string(m.layers_full) + ")");
    } else if (kind == "compressed") {
      at.reject_unknown_keys({"kind", "window", "entry_bytes", "csa_layers", "csa_ratio", "csa_topk", "indexer_bytes",
                              "hca_layers", "hca_ratio", "swa_full_tokens_ratio", "csa_state_ring", "hca_state_ring",
                              "index_heads", "index_dim", "csa_cache_layers", "csa_index_layers",
                              "swa_cap_sizing"});
      a.kind = AttentionLayout::Kind::compressed;
      const auto small = JsonRange::between(1, 1 << 20);
      a.window = at.integer("window", small);
      a.entry_bytes = at.integer("entry_bytes", small);
      a.csa_layers = at.integer("csa_layers", JsonRange::between(0, m.layers_full));
      a.csa_ratio = at.integer("csa_ratio", small);
      a.csa_topk = at.integer("csa_topk", small);
      a.indexer_bytes = at.integer("indexer_bytes", JsonRange::between(0, 1 << 20));
      a.hca_layers = at.integer("hca_layers", JsonRange::between(0, m.layers_full));
      a.hca_ratio = at.integer("hca_ratio", small);
      if (a.csa_layers + a.hca_layers > m.layers_full)
        at.fail("hca_layers", "with csa_layers must be at most layers_full_attention (" +
                                  std::to_string(m.layers_full) + ")");
      a.swa_full_tokens_ratio = at.number("swa_full_tokens_ratio", JsonRange::fraction());
      a.swa_cap_sizing = at.boolean_or("swa_cap_sizing", false);
      a.csa_state_ring = at.integer("csa_state_ring", JsonRange::between(0, 1 << 20));
      a.hca_state_ring = at.integer("hca_state_ring", small);
      // Shared caches, counted at csa_ratio (a ratio-1 layer at csa_ratio 2 counts 2).
      a.csa_cache_layers = at.integer_or("csa_cache_layers", 0, JsonRange::between(1, 4 * m.layers_full));
      a.csa_index_layers = at.integer_or("csa_index_layers", 0, JsonRange::between(1, 4 * m.layers_full));
      a.index_heads = at.integer("index_heads", small);
      a.index_dim = at.integer("index_dim", small);
    } else if (kind == "sparse_gqa") {
      at.reject_unknown_keys({"kind", "sparse_layers", "index_heads", "index_dim", "index_dtype_bytes", "topk_tokens"});
      a.kind = AttentionLayout::Kind::sparse_gqa;
      a.sparse_layers = at.integer("sparse_layers", JsonRange::between(1, m.layers_full));
      a.index_heads = at.integer("index_heads", JsonRange::between(1, 1 << 20));
      a.index_dim = at.integer("index_dim", JsonRange::between(1, 1 << 20));
      a.index_dtype_bytes = at.integer("index_dtype_bytes", dtype_bytes);
      a.topk_tokens = at.integer("topk_tokens", JsonRange::between(1, 1 << 30));
    } else {
      at.fail("kind", "must be one of gqa, mla, sliding_window, compressed, sparse_gqa");
    }
    m.attention = a;
  }
  if (f.has("linear_attention") && m.layers_linear == 0)
    f.fail("linear_attention", "must be absent when layers_linear_attention is 0", "an object");
  if (m.layers_linear > 0) {
    const JsonReader la = f.object("linear_attention");
    la.reject_unknown_keys(
        {"conv_dim", "conv_kernel", "conv_dtype_bytes", "v_heads", "v_dim", "k_dim", "ssm_dtype_bytes"});
    LinearAttentionSpec l;
    l.conv_dim = la.integer("conv_dim", pos);
    l.conv_kernel = la.integer("conv_kernel", JsonRange::between(1, 1024));
    l.conv_dtype_bytes = la.integer_or("conv_dtype_bytes", 2, dtype_bytes);
    l.v_heads = la.integer("v_heads", pos);
    l.v_dim = la.integer("v_dim", pos);
    l.k_dim = la.integer("k_dim", pos);
    l.ssm_dtype_bytes = la.integer_or("ssm_dtype_bytes", 2, dtype_bytes);
    m.linear = l;
  }
  if (f.has("moe")) {
    const JsonReader mo = f.object("moe");
    mo.reject_unknown_keys({"experts", "top_k", "routed_weight_bytes"});
    MoeSpec moe;
    moe.experts = mo.integer("experts", pos);
    moe.top_k = mo.integer("top_k", JsonRange::between(1, moe.experts));
    moe.routed_weight_bytes = quantity(mo, "routed_weight_bytes", kMinWeightBytes, kMaxWeightBytes, "bytes");
    m.moe = moe;
  }
  if (f.has("mtp")) {
    const JsonReader mt = f.object("mtp");
    mt.reject_unknown_keys({"weight_bytes", "draft_kv_layers", "moe_share_of_weights", "own_embed_head_bytes"});
    MtpSpec mtp;
    mtp.weight_bytes = quantity(mt, "weight_bytes", kMinWeightBytes, kMaxWeightBytes, "bytes");
    mtp.draft_kv_layers = mt.integer_or("draft_kv_layers", 1, JsonRange::between(0, 64));
    mtp.moe_share_of_weights = mt.number_or("moe_share_of_weights", 0.0, JsonRange::between(0, 1));
    mtp.own_embed_head_bytes = quantity_or(mt, "own_embed_head_bytes", 0.0, 0, kMaxWeightBytes, "bytes");
    m.mtp = mtp;
  }
  return m;
}

HardwareSpec load_hardware_spec(const std::string& name_or_path) {
  auto [j, source] = read_spec(name_or_path, builtin_hardware_json(), "hardware");
  const JsonReader f(j, source);
  f.reject_unknown_keys({"name", "notes", "hbm_bytes", "hbm_usable_bytes", "hbm_bandwidth", "peak_flops",
                         "nvlink_bandwidth_one_way", "host_link_bandwidth", "kv_transfer_bandwidth_one_way", "efficiency",
                         "allreduce_alpha_s", "launch_overhead_s", "platform", "layer_latency_scale",
                         "serial_kv_walk_bytes_per_s"});
  const auto fraction = JsonRange::fraction();
  HardwareSpec h;
  h.name = f.string("name");
  if (h.name.empty()) f.fail("name", "must be a non-empty string");
  if (f.has("platform")) {
    h.platform = f.string("platform");
    static const std::map<std::string, std::pair<bool, int>> platforms = {
        {"cuda_sm80", {false, 80}},   {"cuda_sm90", {false, 90}},   {"cuda_sm100", {false, 100}},
        {"cuda_sm103", {false, 103}}, {"cuda_sm120", {false, 120}}, {"rocm_gfx942", {true, 0}},
        {"rocm_gfx950", {true, 0}}};
    const auto it = platforms.find(h.platform);
    if (it == platforms.end())
      f.fail("platform", "must be one of cuda_sm80, cuda_sm90, cuda_sm100, cuda_sm103, cuda_sm120, rocm_gfx942, "
                         "rocm_gfx950");
    h.rocm = it->second.first;
    h.cuda_sm = it->second.second;
  }
  if (f.has("notes")) (void)f.string("notes");
  h.hbm_bytes = quantity(f, "hbm_bytes", kMinHbmBytes, kMaxHbmBytes, "bytes");
  // Usable may exceed hbm_bytes: datasheets count GB, the allocator GiB.
  h.hbm_usable_bytes = quantity_or(f, "hbm_usable_bytes", h.hbm_bytes, kMinHbmBytes, kMaxHbmBytes, "bytes");
  h.hbm_bandwidth = quantity(f, "hbm_bandwidth", kMinBandwidth, kMaxBandwidth, "bytes/s");
  const JsonReader peaks = f.object("peak_flops", true);
  peaks.reject_unknown_keys({"bf16", "fp8", "fp4"});
  // bf16 is required: attention always runs bf16 math, and a missing peak
  // would otherwise silently borrow another precision's.
  if (!peaks.has("bf16")) peaks.fail("bf16", "must be given (attention runs bf16 math)");
  for (const auto& [dtype, peak] : peaks.entries())
    h.peak_flops[dtype] = quantity(peak, "", kMinPeakFlops, kMaxPeakFlops, "FLOP/s");
  h.nvlink_bandwidth = quantity(f, "nvlink_bandwidth_one_way", kMinBandwidth, kMaxBandwidth, "bytes/s");
  h.host_link_bandwidth = quantity(f, "host_link_bandwidth", kMinBandwidth, kMaxBandwidth, "bytes/s");
  if (f.has("kv_transfer_bandwidth_one_way"))
    h.kv_transfer_bandwidth = quantity(f, "kv_transfer_bandwidth_one_way", kMinBandwidth, kMaxBandwidth, "bytes/s");
  if (f.has("serial_kv_walk_bytes_per_s"))
    h.serial_kv_walk_bytes_per_s = quantity(f, "serial_kv_walk_bytes_per_s", kMinBandwidth, kMaxBandwidth, "bytes/s");
  f.reject_unknown_keys({"hbm", "gemm", "attention", "nvlink", "host_link"}, "efficiency");
  h.eff_hbm = f.number("efficiency.hbm", fraction);
  h.eff_gemm = f.number("efficiency.gemm", fraction);
  h.eff_attention = f.number("efficiency.attention", fraction);
  h.eff_nvlink = f.number("efficiency.nvlink", fraction);
  h.eff_host_link = f.number("efficiency.host_link", fraction);
  h.allreduce_alpha_s = quantity(f, "allreduce_alpha_s", 0, kMaxOverheadS, "seconds");
  if (f.has("layer_latency_scale")) {
    f.reject_unknown_keys({"decode", "prefill"}, "layer_latency_scale");
    h.layer_latency_scale_decode = f.number_or("layer_latency_scale.decode", 1.0, JsonRange::between(0.05, 20));
    h.layer_latency_scale_prefill = f.number_or("layer_latency_scale.prefill", 1.0, JsonRange::between(0.05, 20));
  }
  f.reject_unknown_keys({"cuda_graph", "eager", "per_step_cpu"}, "launch_overhead_s");
  h.launch_cuda_graph_s = quantity(f, "launch_overhead_s.cuda_graph", 0, kMaxOverheadS, "seconds");
  h.launch_eager_s = quantity(f, "launch_overhead_s.eager", 0, kMaxOverheadS, "seconds");
  h.per_step_cpu_s = quantity(f, "launch_overhead_s.per_step_cpu", 0, kMaxOverheadS, "seconds");
  return h;
}

const std::vector<std::string>& hardware_coefficient_names() {
  static const std::vector<std::string> names = {
      "efficiency.hbm",           "efficiency.gemm",          "efficiency.attention",
      "allreduce_alpha_s",        "launch_overhead_s.cuda_graph", "launch_overhead_s.per_step_cpu",
      "layer_latency_scale.decode", "layer_latency_scale.prefill", "layer_latency_scale"};
  return names;
}

namespace {
// The spec's field a coefficient names ("layer_latency_scale", both scales,
// reads as the decode one).
double* hardware_field(HardwareSpec& hw, const std::string& name) {
  if (name == "efficiency.hbm") return &hw.eff_hbm;
  if (name == "efficiency.gemm") return &hw.eff_gemm;
  if (name == "efficiency.attention") return &hw.eff_attention;
  if (name == "allreduce_alpha_s") return &hw.allreduce_alpha_s;
  if (name == "launch_overhead_s.cuda_graph") return &hw.launch_cuda_graph_s;
  if (name == "launch_overhead_s.per_step_cpu") return &hw.per_step_cpu_s;
  if (name == "layer_latency_scale.decode" || name == "layer_latency_scale") return &hw.layer_latency_scale_decode;
  if (name == "layer_latency_scale.prefill") return &hw.layer_latency_scale_prefill;
  throw std::out_of_range("'" + name + "' is not a hardware coefficient");
}
}  // namespace

double hardware_coefficient(const HardwareSpec& hw, const std::string& name) {
  return *hardware_field(const_cast<HardwareSpec&>(hw), name);  // only read
}

void set_hardware_coefficient(HardwareSpec& hw, const std::string& name, double value) {
  *hardware_field(hw, name) = value;
  if (name == "layer_latency_scale") hw.layer_latency_scale_prefill = value;
}

std::pair<double, double> hardware_coefficient_range(const std::string& name) {
  HardwareSpec probe;
  (void)hardware_field(probe, name);  // an unknown name throws
  if (name.rfind("layer_latency_scale", 0) == 0) return {0.05, 20.0};
  return name.rfind("efficiency.", 0) == 0 ? std::pair{0.02, 1.0} : std::pair{1e-6, 0.05};
}

HardwareSpec load_hardware_spec(const std::string& name_or_path, const std::string& profile_path) {
  HardwareSpec h = load_hardware_spec(name_or_path);
  if (!profile_path.empty()) attach_hardware_profile(h, load_hardware_profile(profile_path));
  return h;
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> out;
  for (const auto& [k, v] : builtin_model_json()) out.push_back(k);
  return out;
}
std::vector<std::string> builtin_hardware_names() {
  std::vector<std::string> out;
  for (const auto& [k, v] : builtin_hardware_json()) out.push_back(k);
  return out;
}

}  // namespace agentperf::sim
