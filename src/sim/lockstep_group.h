// The DP-attention ranks of one engine, stepping together.
//
// With DP attention (SGLang --enable-dp-attention, vLLM's data-parallel
// attention with expert parallelism) each rank holds its own requests, KV
// pool and radix cache and runs attention on its own batch, but the MoE
// layers are one expert-parallel group across all ranks: every forward pass
// meets the other ranks at each MoE layer's all-to-all, so every rank runs
// a forward pass whenever any rank has work (an idle rank runs an empty
// "idle batch" to take part) and a step ends when the slowest rank's ends.
// A rank whose batch holds a long prefill therefore holds every other
// rank's decode for that long: the TPOT of a DP-attention deployment grows
// with the prefills anywhere in the group, not only on its own rank.
// (SGLang, python/sglang/srt/managers/scheduler_dp_attn_mixin.py at
// 01ac0074: before each forward, prepare_mlp_sync_batch_raw all-gathers
// every rank's token count, and when any rank has tokens a rank without a
// batch gets get_idle_batch() and runs with the others; a rank that
// extends (prefills) also takes the whole group off its decode CUDA graphs
// for that step, through the gathered forward mode.)
//
// Modelled: every rank's step starts at one time, when the group is free
// and any rank has work (a request that reaches its rank's scheduler mid
// step waits for the group's next step); the step lasts as long as the
// longest rank's step, computed on that rank's own batch; ranks without
// work run nothing (their idle batch is taken as free). The MoE layers
// are one expert-parallel group, so a rank reads the weights of its experts
// that any rank's tokens reach: each rank's step counts the experts touched
// by its own tokens plus the other ranks' (StepTimeModel::
// set_moe_peer_tokens), the other ranks' as their running requests' decode
// tokens at the step's start (a peer's prefill tokens are left out: a step
// with a prefill lasts as long as that rank's, whose own tokens reach
// nearly every expert). The expert math
// stays each rank's own tokens' (balanced routing gives a rank about as
// many assignments as it sends). What is not modelled: the all-to-all's own
// time, and decode ranks leaving their CUDA graphs while another rank
// prefills.
//
// Which ranks may prefill in a step is the group's decision, as SGLang
// makes it once per scheduler iteration on every rank alike:
// - --prefill-decode-interval N: after an iteration in which any rank
//   prefilled, the next N iterations prefill nowhere, chunk continuations
//   included (scheduler.py _should_defer_prefill / _arm_prefill_decode_-
//   interval, sglang pull request 35017: with DP attention the gathered
//   is_extend_in_batch re-arms every rank together).
// - --enable-prefill-delayer: the ranks all-gather whether each is ready to
//   prefill; while some are and some are not, no rank prefills, for at most
//   max_delay_passes - 1 iterations in a row (default 30), then all may; a
//   rank mid-way through a chunked prefill continues regardless. When every
//   rank is ready they still wait, within the same cap, while the fullest
//   rank's free running slots are fewer than the largest prefill batch any
//   rank admitted in its last 16 prefills (the "slot condition"; its
//   optional watermark and queue triggers are off by default and not
//   modelled). (python/sglang/srt/managers/prefill_delayer.py
//   @ 5d2c83e6bb27, _negotiate_should_allow_prefill_pure; the
//   "mid-chunk rank prefills this pass regardless" rule in
//   schedule_policy.py @ 87d7c8d4fe03, PrefillAdder.add_one_req.)
// - With speculative decoding, a prefill step and a decode step are never
//   mixed across ranks: when any rank prefills, the others run an idle
//   batch and their decode waits for the next step (dp_attn.py @
//   5d2c83e6bb27, prepare_mlp_sync_batch_raw: the prefill batch is synced
//   first "so prefill and decode batches will not be mixed"). Without it,
//   decode ranks run their decode in the prefill's step.
// An iteration that runs no forward on any rank still costs the engine's
// per-step scheduler time (EngineCosts::step_s), so deferred passes with
// nothing to decode pass quickly, as the real scheduler loop's do.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/virtual_client.h"

namespace agentperf::sim {

class LockstepGroup {
 public:
  // The clients of one engine's ranks (not owned; they outlive the group).
  explicit LockstepGroup(std::vector<VirtualClient*> ranks);

  // The group's next step start (kNever when no rank has work or anything
  // on the way to its scheduler).
  std::int64_t next_step_start() const;
  // Runs every group step that starts at or before t. The ends these steps
  // produce are collected through each rank's own advance_to().
  void advance_to(std::int64_t t);
  std::int64_t steps() const { return steps_; }
  // Iterations in which a ready rank was held by the delayer or the interval.
  std::int64_t delayed_passes() const { return delayed_passes_; }
  std::int64_t deferred_passes() const { return deferred_passes_; }

 private:
  // Who may prefill this iteration, counting the interval down and the
  // delayer's passes up.
  enum class PrefillVerdict { allow, delay /* mid-chunk ranks only */, defer /* nobody */ };
  PrefillVerdict prefill_verdict(const std::vector<bool>& ready);
  // The delayer's slot condition, with every rank ready.
  bool too_few_slots() const;

  std::vector<VirtualClient*> ranks_;
  int interval_ = 0;            // --prefill-decode-interval
  bool delayer_ = false;        // --enable-prefill-delayer
  int delayer_max_passes_ = 30;
  bool no_mixing_ = false;      // speculative decoding: prefill and decode never share a step
  double idle_pass_s_ = 0;      // an iteration without a forward
  int deferred_left_ = 0;
  // Per rank, the batch sizes of its last kPrefillBsWindow prefills
  // (SGLANG_PREFILL_DELAYER_MAX_PREFILL_BS_WINDOW_SIZE, default 16).
  static constexpr std::size_t kPrefillBsWindow = 16;
  std::vector<std::vector<int>> prefill_bs_;
  int delayed_in_row_ = 0;
  std::int64_t free_at_ = 0;
  std::int64_t steps_ = 0;
  std::int64_t delayed_passes_ = 0, deferred_passes_ = 0;
};

}  // namespace agentperf::sim
