// Roofline step time for one engine forward, per TP rank (agentperf's own
// estimate; its coefficients live in the spec files):
//   t = max(bytes / (HBM bw x eff), FLOPs / (peak x eff)) + all-reduce + launch
// bytes: weights touched (dense part always; MoE experts touched by the
// step's tokens, E x (1 - (1 - k/E)^T)), KV read by attention, linear-
// attention state read+write; FLOPs: 2 x active params per token plus
// attention QK^T+PV over the context; all-reduce: 2 per layer, alpha +
// 2(P-1)/P x bytes / NVLink bw; launch: CUDA-graph replay when the decode
// batch fits --cuda-graph-max-bs, eager otherwise and for prefill.
// With a measured hardware profile (agentperf calibrate) the single
// efficiencies give way to measured curves: weights and GEMM math at the
// roofline fraction of a GEMM of T rows, the KV read at the fraction of a
// paged decode read of that many bytes, state traffic at the copy rate, and
// launches as kernels x measured per-kernel cost (docs/calibrate.md).
//
// The serial KV walk. vLLM's Triton unified attention (--attention-backend
// TRITON_ATTN; vllm/v1/attention/ops/triton_unified_attention.py @
// 00139433) splits a request's context over many workgroups (its "3D"
// flash-decoding launch) only when every query of the step is one token
// long: `use_3d` is false once max_seqlen_q > 1. A step with a speculative
// verify (1 + k tokens a request) or any prefill chunk takes the 2D launch,
// a grid of (query blocks, KV heads) in which one workgroup walks the whole
// context of its request tile by tile (vllm-project/vllm pull requests
// 51995, 53930: MTP "3x slower at 50K+"). Few requests cannot fill the GPU
// that way, so each such layer takes as long as one workgroup needs for the
// longest context in the step, at HardwareSpec::serial_kv_walk_bytes_per_s,
// whatever the HBM could stream: walk_s = layers x head bytes a token x
// longest context / rate, on top of the roofline (which still counts those
// bytes at full bandwidth: the overlap is at most the walked layers' share
// of the KV read). The EAGLE drafter's first forward (over the verified
// tokens) walks its own layers the same way when its backend is Triton's.
// Modelled where the GPU's rate is known (its spec) and the model's layers
// are GQA (ModelSpec::context_walk_layers); not modelled: the 2D launch that
// a batch of single-token queries larger than the 3D path's sequence
// threshold also takes.
// vLLM's MiniMax-M3 indexer on ROCm walks too, in chunks: its Triton decode
// scorer (`_decode_index_score_kernel`, vllm/models/minimax_m3/amd/ops/
// index_topk.py, used on gfx942 because the AITER indexer is gfx950-only:
// amd/indexer_aiter.py) launches (requests, chunks) workgroups with chunks =
// pow2floor(min(256, 512 / requests)), each scoring its share of the
// request's 128-token key blocks in turn. A sparse layer's scoring then
// takes the longest request's share at the same workgroup rate: few
// requests split the context 256 ways, ten only 32 ways, which is why its
// time grows with the batch long before the HBM is busy. Its prefill scorer
// (`_index_block_score_kernel`, same file) does not split the context at
// all: a grid of (64-query blocks, prefills x index heads), each workgroup
// scoring every key block from the request's start to its own last query.
// A chunk of a few thousand tokens over a 130k-token prefix is then some
// fifty workgroups each walking 130k keys in every sparse layer: hundreds of
// milliseconds a prefill step on an MI300X that the roofline (its FLOPs at
// the attention rate: about 20 ms) cannot see.
//
// The engine's own work around the kernels (sim/engine_costs.h: per-step and
// per-request costs, scales on each roofline part, MoE grouped-GEMM,
// linear-attention and all-reduce efficiencies) comes from EngineConfig's
// costs; neutral costs leave the pure roofline.
#pragma once
#include "sim/engine_config.h"
#include "sim/specs.h"

namespace agentperf::sim {

struct ForwardShape {
  bool prefill = false;      // any prefill tokens in the forward (no CUDA graph)
  double tokens = 0;         // tokens computed (prefill chunk tokens, or batch x verify width)
  int batch = 0;             // requests in the forward
  int decode_requests = 0;   // of them, requests decoding (per-request costs)
  double prefill_tokens = 0; // of the tokens, prefill tokens (per-token costs)
  double kv_read_tokens = 0; // context tokens whose KV attention reads (decode: sum of contexts)
  double attn_pairs = 0;     // sum over tokens of the context each attends to (prefill)
  double prefix_pairs = 0;   // of them, pairs whose key is in a cached or earlier-chunk prefix
  // The longest context one request of the forward attends over when the
  // forward takes a serial KV walk (above); 0 when it does not.
  double walked_context = 0;
  // The longest context of the forward's decode requests (the indexer's chunked walk).
  double longest_decode_context = 0;
  // The longest prefix + chunk of the forward's prefills (the indexer's prefill walk).
  double longest_prefill_context = 0;
};

struct StepTerms {
  double weights_bytes = 0, kv_bytes = 0, state_bytes = 0, flops = 0;
  double memory_s = 0, compute_s = 0, comm_s = 0, launch_s = 0, total_s = 0;
  double engine_s = 0;  // the engine's own per-step, per-request and per-token work (EngineCosts)
  double walk_s = 0;    // the serial KV walk of the target's (and drafter's) walked layers, in total_s
  double experts_touched = 0;
};

class StepTimeModel {
 public:
  StepTimeModel(const ModelSpec& m, const HardwareSpec& hw, const EngineConfig& cfg);
  // Distinct experts touched per MoE layer by T tokens (uniform routing).
  double experts_touched(double tokens) const;
  StepTerms target_forward(const ForwardShape& s) const;
  // One MTP draft forward over `tokens` tokens (the single MTP layer).
  StepTerms draft_forward(double tokens, double kv_read_tokens, int batch) const;
  // A whole decode round of `batch` requests with `sum_ctx` context tokens:
  // plain decode, or spec (S-1 drafts + verify of N tokens + draft extend).
  StepTerms decode_round(int batch, double sum_ctx) const;
  // `prefix_pairs`: the part of `attn_pairs` whose keys lie in the request's
  // prefix (cached, or computed by an earlier chunk), read from the paged KV.
  StepTerms prefill(double new_tokens, double attn_pairs, double kv_read_tokens, int batch,
                    double prefix_pairs = 0) const;
  // One forward mixing decode requests with prefill chunks (vLLM V1's
  // scheduler): `batch` decode requests over `sum_ctx` context tokens, plus
  // prefill work as in prefill(). `longest_decode` and `longest_prefill`:
  // the longest context a decode request attends over, and the longest
  // prefix + chunk of a prefill, for the serial KV walks.
  StepTerms mixed(int batch, double sum_ctx, double new_tokens, double attn_pairs, double kv_read_tokens,
                  int prefill_batch, double prefix_pairs = 0, double longest_decode = 0,
                  double longest_prefill = 0) const;
  // Whether a vLLM step of this shape takes the serial KV walk (above): the
  // Triton unified attention and a query over one token long.
  bool walks_context(bool multi_token_queries) const;
  // DP attention (sim/lockstep_group.h): the tokens the other ranks of the
  // group put through the MoE layers in the same forward. The MoE is one
  // expert-parallel group across the ranks, so a rank reads the weights of
  // its experts that any rank's tokens reach: the experts a forward touches
  // are counted over its own tokens plus these (0: a plain engine).
  void set_moe_peer_tokens(double tokens) { moe_peer_tokens_ = tokens > 0 ? tokens : 0; }

 private:
  double allreduce_s(double tokens, int count) const;
  // Parameters a token multiplies in the routed experts (top-k of them).
  double routed_active_params() const;
  // Adds the spec-decoding part of a decode round (intermediate states,
  // drafts; the first draft forward's serial walk over `walked_context`).
  void add_spec_decode(StepTerms& t, int batch, double sum_ctx, double walked_context = 0) const;
  // One workgroup's walk over `context` tokens in `layers` layers of
  // `head_bytes` a token (0 where the GPU's walk rate is not known).
  double serial_walk_s(double context, int layers, double head_bytes) const;
  // The drafter's first forward's walk (0 unless its backend walks).
  double draft_walk_s(double walked_context) const;
  // Whether the step's indexer is vLLM's Triton MiniMax-M3 one on ROCm
  // (a sparse GQA model under the vLLM scheduler on an AMD GPU).
  bool triton_indexer_on_rocm() const;
  // vLLM's Triton MiniMax-M3 indexer on ROCm: the chunked walk of the
  // longest decode context's index keys in every sparse layer.
  double index_walk_s(int decode_requests, double longest_decode_context) const;
  // The same indexer's prefill scorer: the walk of the longest prefill's
  // index keys up to its chunk's end, in every sparse layer.
  double index_prefill_walk_s(double longest_prefill_context) const;
  // Kernel-launch cost of a forward over `layers` layers: one graph replay, or eager launches.
  double launch_s(bool graph, int layers) const;
  const ModelSpec& m_;
  const HardwareSpec& hw_;
  EngineConfig cfg_;
  double moe_peer_tokens_ = 0;
};

}  // namespace agentperf::sim
