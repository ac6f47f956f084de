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
};

struct StepTerms {
  double weights_bytes = 0, kv_bytes = 0, state_bytes = 0, flops = 0;
  double memory_s = 0, compute_s = 0, comm_s = 0, launch_s = 0, total_s = 0;
  double engine_s = 0;  // the engine's own per-step, per-request and per-token work (EngineCosts)
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
  // prefill work as in prefill().
  StepTerms mixed(int batch, double sum_ctx, double new_tokens, double attn_pairs, double kv_read_tokens,
                  int prefill_batch, double prefix_pairs = 0) const;

 private:
  double allreduce_s(double tokens, int count) const;
  // Parameters a token multiplies in the routed experts (top-k of them).
  double routed_active_params() const;
  // Adds the spec-decoding part of a decode round (intermediate states, drafts).
  void add_spec_decode(StepTerms& t, int batch, double sum_ctx) const;
  // Kernel-launch cost of a forward over `layers` layers: one graph replay, or eager launches.
  double launch_s(bool graph, int layers) const;
  const ModelSpec& m_;
  const HardwareSpec& hw_;
  EngineConfig cfg_;
};

}  // namespace agentperf::sim
