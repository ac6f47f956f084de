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
// work run nothing (their idle batch is taken as free). What is not: the
// all-to-all's own time, MoE work over the whole group's tokens (each
// rank's step costs its own tokens' expert work), and decode ranks leaving
// their CUDA graphs while another rank prefills.
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

 private:
  std::vector<VirtualClient*> ranks_;
  std::int64_t free_at_ = 0;
  std::int64_t steps_ = 0;
};

}  // namespace agentperf::sim
