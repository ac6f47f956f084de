#include "sim/step_time.h"

#include "sim/hardware_profile.h"

#include <algorithm>
#include <cmath>

namespace agentperf::sim {

StepTimeModel::StepTimeModel(const ModelSpec& m, const HardwareSpec& hw, const EngineConfig& cfg)
    : m_(m), hw_(hw), cfg_(cfg) {}

double StepTimeModel::experts_touched(double tokens) const {
  if (!m_.moe) return 0;
  const double e = m_.moe->experts, k = m_.moe->top_k;
  return e * (1.0 - std::pow(1.0 - k / e, tokens));
}

double StepTimeModel::allreduce_s(double tokens, int count) const {
  const int p = std::max(1, cfg_.tp);
  if (p == 1) return 0;
  const double bytes = tokens * m_.hidden * 2.0;  // bf16 activations
  // Small messages are latency-bound: bandwidth efficiency m / (m + half).
  const double wire = 2.0 * (p - 1) / p * (bytes + cfg_.costs.allreduce_half_bytes);
  const double per = hw_.allreduce_alpha_s + wire / (hw_.nvlink_bandwidth * hw_.eff_nvlink);
  return per * count;
}

double StepTimeModel::routed_active_params() const {
  if (!m_.moe) return 0;
  const std::string& d = m_.compute_dtype;
  const double bytes_per_param = d == "fp4" ? 0.5 : d == "fp8" ? 1.0 : 2.0;
  return m_.moe->routed_weight_bytes / bytes_per_param * m_.moe->top_k / m_.moe->experts;
}

double StepTimeModel::launch_s(bool graph, int layers) const {
  if (const HardwareProfile* prof = hw_.profile.get()) {
    // Measured per-kernel costs times the kernels a forward issues.
    const double kernels = static_cast<double>(layers) * prof->kernels_per_layer;
    return graph ? prof->graph_launch_s + kernels * prof->graph_node_s : kernels * prof->kernel_launch_s;
  }
  return graph ? hw_.launch_cuda_graph_s : hw_.launch_eager_s;
}

StepTerms StepTimeModel::target_forward(const ForwardShape& s) const {
  const int p = std::max(1, cfg_.tp);
  const EngineCosts& c = cfg_.costs;
  StepTerms t;
  // Experts touched by the whole expert-parallel group's tokens (a DP-
  // attention group's other ranks' too: set_moe_peer_tokens).
  const double moe_tokens = s.tokens + moe_peer_tokens_;
  t.experts_touched = experts_touched(moe_tokens);
  const double moe_bytes = m_.moe ? t.experts_touched / m_.moe->experts * m_.moe->routed_weight_bytes : 0.0;
  t.weights_bytes = (m_.dense_weight_bytes + moe_bytes) / p;
  t.kv_bytes = m_.kv_read_bytes_rank(p, s.batch, s.kv_read_tokens);
  // Linear-attention layers read and write each request's state once per forward.
  t.state_bytes = 2.0 * s.batch * m_.state_bytes_per_request_rank(p);
  // A model whose late layers skip most prompt rows (ModelSpec::prefill_layers)
  // does that share of a full forward's per-token math on its prefill tokens;
  // the weights are still read whole (the late layers run on the tails).
  const double prefill_share = m_.prefill_work_share(s.prefill_tokens, s.batch - s.decode_requests);
  const double work_tokens = s.tokens - s.prefill_tokens * (1.0 - prefill_share);
  const double token_share = s.tokens > 0 ? work_tokens / s.tokens : 1.0;
  // Attention heads are split over TP; the indexer's are not (or not below
  // one head a rank: ModelSpec::index_heads_per_rank), so its part is
  // divided by the ranks it is actually shared by.
  const double index_flops = m_.indexer_flops(s.tokens, s.attn_pairs) * token_share;
  const double index_share =
      m_.attention.index_heads > 0 ? m_.index_heads_per_rank(p) / m_.attention.index_heads : 0.0;
  const double attn_flops =
      (m_.attention_flops(s.tokens, s.attn_pairs) * token_share - index_flops) / p + index_flops * index_share;
  t.flops = 2.0 * m_.active_params * work_tokens / p + attn_flops;
  // Attention over a prefix runs at its own rate (EngineCosts::prefix_attention_scale):
  // the prefix's share of the pairs is scaled on top of attention_scale.
  const double prefix_share = s.attn_pairs > 0 ? std::clamp(s.prefix_pairs / s.attn_pairs, 0.0, 1.0) : 0.0;
  const double attn_scale = c.attention_scale * (1.0 + (c.prefix_attention_scale - 1.0) * prefix_share);
  // Routed-expert math runs as grouped GEMMs whose efficiency falls with the
  // tokens each touched expert gets: the expert part of the GEMM time is
  // divided by tpe / (tpe + half).
  const double expert_flops = 2.0 * routed_active_params() * work_tokens / p;
  double expert_slowdown = 0;
  if (m_.moe && c.moe_half_tokens_per_expert > 0 && t.experts_touched > 0) {
    const double tpe = moe_tokens * m_.moe->top_k / t.experts_touched;
    expert_slowdown = c.moe_half_tokens_per_expert / std::max(tpe, 1e-9);
  }
  const double gemm_flops = t.flops - attn_flops + expert_flops * expert_slowdown;
  const double attn_rate = hw_.peak_for("bf16") * hw_.eff_attention;  // attention math, bf16
  if (const HardwareProfile* prof = hw_.profile.get()) {
    // Measured: weight streaming and GEMM math at the roofline fraction of a
    // GEMM with this many rows; the KV read at the fraction a paged decode
    // read of this many bytes achieved; state traffic at the copy rate.
    const double f_gemm = prof->gemm_fraction(hw_.math_dtype_for(m_.compute_dtype), s.tokens);
    const double f_kv = prof->kv_read.at(std::max(1.0, t.kv_bytes));
    const double bw = hw_.hbm_bandwidth;
    t.memory_s = c.weight_read_scale * t.weights_bytes / (bw * f_gemm) + c.kv_read_scale * t.kv_bytes / (bw * f_kv) +
                 t.state_bytes / (bw * hw_.eff_hbm);
    t.compute_s = c.gemm_scale * gemm_flops / (hw_.peak_for(m_.compute_dtype) * f_gemm) +
                  attn_scale * attn_flops / attn_rate;
  } else {
    const double bw = hw_.hbm_bandwidth * hw_.eff_hbm;
    t.memory_s = (c.weight_read_scale * t.weights_bytes + c.kv_read_scale * t.kv_bytes + t.state_bytes) / bw;
    const double gemm = hw_.peak_for(m_.compute_dtype) * hw_.eff_gemm;
    t.compute_s = c.gemm_scale * gemm_flops / gemm + attn_scale * attn_flops / attn_rate;
  }
  t.comm_s = allreduce_s(s.tokens, 2 * (m_.layers_full + m_.layers_linear));
  const bool graph = !s.prefill && s.batch <= cfg_.cuda_graph_max_bs;
  const int layers = m_.layers_full + m_.layers_linear;
  t.launch_s = launch_s(graph, layers);
  // The profile's per-layer fixed costs, at this platform's kernel latency
  // (HardwareSpec::layer_latency_scale_decode, _prefill).
  const double dec = hw_.layer_latency_scale_decode, pre = hw_.layer_latency_scale_prefill;
  const double moe_layer_s = !m_.moe ? 0.0 : dec * c.moe_layer_step_s + (s.prefill ? pre * c.moe_prefill_layer_s : 0.0);
  const double linear_prefill_s = s.prefill ? pre * c.linear_prefill_layer_s * m_.layers_linear : 0.0;
  t.engine_s = c.step_s + moe_layer_s * layers + linear_prefill_s + s.decode_requests * (c.request_s + c.attention_request_s * m_.layers_full +
                                               c.linear_decode_s * m_.layers_linear) +
               s.prefill_tokens * (c.prefill_token_s + c.linear_prefill_token_s * m_.layers_linear);
  t.walk_s = serial_walk_s(s.walked_context, m_.context_walk_layers(), m_.gqa_head_bytes_per_token()) +
             index_walk_s(s.decode_requests, s.longest_decode_context) + index_prefill_walk_s(s.longest_prefill_context);
  t.total_s = std::max(t.memory_s, t.compute_s) + t.comm_s + t.launch_s + t.engine_s + t.walk_s;
  return t;
}

double StepTimeModel::serial_walk_s(double context, int layers, double head_bytes) const {
  if (context <= 0 || layers <= 0 || hw_.serial_kv_walk_bytes_per_s <= 0) return 0;
  return layers * head_bytes * context / hw_.serial_kv_walk_bytes_per_s;
}

bool StepTimeModel::triton_indexer_on_rocm() const {
  return m_.attention.kind == AttentionLayout::Kind::sparse_gqa && cfg_.scheduler == SchedulerKind::vllm && hw_.rocm;
}

double StepTimeModel::index_walk_s(int decode_requests, double longest_decode_context) const {
  const auto& a = m_.attention;
  if (decode_requests <= 0 || longest_decode_context <= 0 || !triton_indexer_on_rocm()) return 0;
  // minimax_m3_index_decode's grid on gfx942 (TARGET_GRID 512): chunks a
  // request = the largest power of two <= min(256, 512 // requests); each
  // workgroup scores ceil(blocks / chunks) blocks of 128 keys, every index
  // head of its rank in turn.
  int chunks = 1;
  while (chunks * 2 <= std::min(256, 512 / decode_requests)) chunks *= 2;
  constexpr double kKeyBlock = 128;
  const double blocks = std::ceil(std::ceil(longest_decode_context / kKeyBlock) / chunks);
  const double key_bytes = static_cast<double>(a.index_dim) * a.index_dtype_bytes;
  return serial_walk_s(blocks * kKeyBlock, a.sparse_layers, key_bytes * m_.index_heads_per_rank(std::max(1, cfg_.tp)));
}

double StepTimeModel::index_prefill_walk_s(double longest_prefill_context) const {
  const auto& a = m_.attention;
  if (longest_prefill_context <= 0 || !triton_indexer_on_rocm()) return 0;
  // minimax_m3_index_score's grid: (query blocks of 64, prefills x index
  // heads of the rank); the workgroup of a chunk's last query block scores
  // every 128-key block up to the chunk's end, one after another, with one
  // index head. A step's chunks hold at most --max-num-batched-tokens / 64
  // such workgroups (256 at 16,384), one wave on a 304-CU MI300X: the
  // longest prefix + chunk sets the layer's time.
  constexpr double kKeyBlock = 128;
  const double keys = std::ceil(longest_prefill_context / kKeyBlock) * kKeyBlock;
  return serial_walk_s(keys, a.sparse_layers, static_cast<double>(a.index_dim) * a.index_dtype_bytes);
}

bool StepTimeModel::walks_context(bool multi_token_queries) const {
  return multi_token_queries && cfg_.scheduler == SchedulerKind::vllm &&
         uses_triton_unified_attention(cfg_.attention_backend);
}

double StepTimeModel::draft_walk_s(double walked_context) const {
  if (!m_.mtp || walked_context <= 0) return 0;
  const std::string& backend = cfg_.draft_attention_backend.empty() ? cfg_.attention_backend : cfg_.draft_attention_backend;
  if (!uses_triton_unified_attention(backend)) return 0;
  // The draft's layers are taken as GQA layers of the target's head shape
  // (the specs price the draft's KV as a target layer's).
  return serial_walk_s(walked_context, m_.context_walk_layers() > 0 ? m_.mtp->draft_kv_layers : 0,
                       m_.gqa_head_bytes_per_token());
}

StepTerms StepTimeModel::draft_forward(double tokens, double kv_read_tokens, int batch) const {
  StepTerms t;
  if (!m_.mtp) return t;
  const int p = std::max(1, cfg_.tp);
  const double share = m_.mtp->moe_share_of_weights;
  const double touched = m_.moe ? experts_touched(tokens + moe_peer_tokens_) / m_.moe->experts : 1.0;
  t.weights_bytes = m_.mtp->weight_bytes * ((1 - share) + share * touched) / p;
  t.kv_bytes = m_.draft_kv_read_bytes_rank(p, batch, kv_read_tokens);
  const double layers = m_.layers_full + m_.layers_linear;
  t.flops = 2.0 * m_.active_params / layers * tokens / p;
  if (const HardwareProfile* prof = hw_.profile.get()) {
    const double f_gemm = prof->gemm_fraction("bf16", tokens);
    const double f_kv = prof->kv_read.at(std::max(1.0, t.kv_bytes));
    t.memory_s = t.weights_bytes / (hw_.hbm_bandwidth * f_gemm) + t.kv_bytes / (hw_.hbm_bandwidth * f_kv);
    t.compute_s = t.flops / (hw_.peak_for("bf16") * f_gemm);
    t.launch_s = batch <= cfg_.cuda_graph_max_bs ? launch_s(true, 1) : launch_s(false, 1);
  } else {
    t.memory_s = (t.weights_bytes + t.kv_bytes) / (hw_.hbm_bandwidth * hw_.eff_hbm);
    t.compute_s = t.flops / (hw_.peak_for("bf16") * hw_.eff_gemm);
    t.launch_s = batch <= cfg_.cuda_graph_max_bs ? hw_.launch_cuda_graph_s * 0.25 : hw_.launch_eager_s / layers * 2;
  }
  t.comm_s = allreduce_s(tokens, 2);
  t.engine_s = m_.moe ? hw_.layer_latency_scale_decode * cfg_.costs.moe_layer_step_s : 0.0;  // the draft's one MoE layer
  t.total_s = std::max(t.memory_s, t.compute_s) + t.comm_s + t.launch_s + t.engine_s;
  return t;
}

void StepTimeModel::add_spec_decode(StepTerms& t, int batch, double sum_ctx, double walked_context) const {
  const int n = cfg_.spec.num_draft_tokens;
  // Verify keeps per-position linear-attention states: N intermediate writes.
  const double extra_state = static_cast<double>(batch) * n * m_.state_bytes_per_request_rank(std::max(1, cfg_.tp));
  t.state_bytes += extra_state;
  t.memory_s += extra_state / (hw_.hbm_bandwidth * hw_.eff_hbm);
  // S-1 draft forwards plus the draft-extend over the accepted tokens.
  const int drafts = std::max(0, cfg_.spec.num_steps - 1) + 1;
  double draft_s = 0;
  for (int i = 0; i < drafts; ++i) draft_s += draft_forward(batch, sum_ctx, batch).total_s;
  // The first draft forward runs over the verified tokens (1 + k a request):
  // with a Triton drafter it walks each context once more.
  const double draft_walk = draft_walk_s(walked_context);
  t.walk_s += draft_walk;
  t.total_s = std::max(t.memory_s, t.compute_s) + t.comm_s + t.launch_s + t.engine_s + t.walk_s + draft_s;
}

StepTerms StepTimeModel::decode_round(int batch, double sum_ctx) const { return mixed(batch, sum_ctx, 0, 0, 0, 0); }

StepTerms StepTimeModel::prefill(double new_tokens, double attn_pairs, double kv_read_tokens, int batch,
                                 double prefix_pairs) const {
  ForwardShape s;
  s.prefix_pairs = prefix_pairs;
  s.prefill = true;
  s.batch = batch;
  s.tokens = new_tokens;
  s.prefill_tokens = new_tokens;
  s.attn_pairs = attn_pairs;
  s.kv_read_tokens = kv_read_tokens;
  StepTerms t = target_forward(s);
  if (cfg_.spec.enabled && m_.mtp) t.total_s += draft_forward(new_tokens, kv_read_tokens, batch).total_s;
  t.total_s += hw_.per_step_cpu_s;
  return t;
}

StepTerms StepTimeModel::mixed(int batch, double sum_ctx, double new_tokens, double attn_pairs, double kv_read_tokens,
                               int prefill_batch, double prefix_pairs, double longest_decode,
                               double longest_prefill) const {
  const bool spec = cfg_.spec.enabled && m_.mtp && batch > 0;
  const int n = spec ? cfg_.spec.num_draft_tokens : 1;
  ForwardShape s;
  s.prefill = new_tokens > 0;
  s.batch = batch + prefill_batch;
  s.decode_requests = batch;
  s.prefill_tokens = new_tokens;
  s.tokens = static_cast<double>(batch) * n + new_tokens;
  s.kv_read_tokens = sum_ctx + kv_read_tokens;  // tree attention reads each request's KV once per verify
  s.attn_pairs = sum_ctx * n + attn_pairs;
  s.prefix_pairs = prefix_pairs;
  // A verify or a prefill chunk makes the step's longest query longer than one token.
  s.walked_context = walks_context(n > 1 || new_tokens > 0) ? std::max(longest_decode, longest_prefill) : 0;
  s.longest_decode_context = batch > 0 ? longest_decode : 0;
  s.longest_prefill_context = new_tokens > 0 ? longest_prefill : 0;
  StepTerms t = target_forward(s);
  if (spec) add_spec_decode(t, batch, sum_ctx, s.walked_context);
  if (cfg_.spec.enabled && m_.mtp && new_tokens > 0) {
    t.total_s += draft_forward(new_tokens, kv_read_tokens, prefill_batch).total_s;
    // The prefill's draft forward is the first one when no verify ran in this step.
    if (!spec) {
      const double w = draft_walk_s(s.walked_context);
      t.walk_s += w;
      t.total_s += w;
    }
  }
  t.total_s += hw_.per_step_cpu_s;
  return t;
}

}  // namespace agentperf::sim
