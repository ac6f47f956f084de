#include "sim/lockstep_group.h"

#include <algorithm>
#include <iterator>

namespace agentperf::sim {

LockstepGroup::LockstepGroup(std::vector<VirtualClient*> ranks) : ranks_(std::move(ranks)) {
  for (auto* r : ranks_) r->join_lockstep();
  if (!ranks_.empty()) {
    // Every rank of a group runs with the same flags.
    const EngineConfig& c = ranks_.front()->engine_config();
    interval_ = c.prefill_decode_interval;
    delayer_ = c.prefill_delayer;
    delayer_max_passes_ = std::max(1, c.prefill_delayer_max_passes);
    no_mixing_ = c.spec.enabled && c.scheduler == SchedulerKind::sglang;
    idle_pass_s_ = c.costs.step_s;
  }
  prefill_bs_.resize(ranks_.size());
}

bool LockstepGroup::too_few_slots() const {
  std::int64_t fullest = 0, cap = 0;
  int largest_prefill = 0;
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    fullest = std::max(fullest, ranks_[i]->running_count());
    cap = std::max(cap, ranks_[i]->max_running());
    for (int b : prefill_bs_[i]) largest_prefill = std::max(largest_prefill, b);
  }
  return cap - fullest < largest_prefill;
}

std::int64_t LockstepGroup::next_step_start() const {
  std::int64_t ready = VirtualClient::kNever;
  for (const auto* r : ranks_) ready = std::min(ready, r->ready_at());
  return ready == VirtualClient::kNever ? ready : std::max(free_at_, ready);
}

LockstepGroup::PrefillVerdict LockstepGroup::prefill_verdict(const std::vector<bool>& ready) {
  const auto n_ready = std::count(ready.begin(), ready.end(), true);
  if (deferred_left_ > 0) {
    --deferred_left_;
    if (n_ready > 0) ++deferred_passes_;
    return PrefillVerdict::defer;
  }
  const bool all_ready = n_ready == static_cast<std::ptrdiff_t>(ready.size());
  if (!delayer_ || n_ready == 0 || (all_ready && !too_few_slots())) {
    delayed_in_row_ = 0;
    return PrefillVerdict::allow;
  }
  // Some ranks are ready and some are not (or all are, without the running
  // slots for a usual prefill batch): wait, up to the cap.
  if (delayed_in_row_ < delayer_max_passes_ - 1) {
    ++delayed_in_row_;
    ++delayed_passes_;
    return PrefillVerdict::delay;
  }
  delayed_in_row_ = 0;
  return PrefillVerdict::allow;
}

void LockstepGroup::advance_to(std::int64_t t) {
  const std::size_t n = ranks_.size();
  std::vector<StepOutcome> outs(n);
  std::vector<bool> ready(n), ran(n);
  for (std::int64_t s = next_step_start(); s <= t; s = next_step_start()) {
    for (std::size_t i = 0; i < n; ++i) {
      ranks_[i]->deliver_until(s);
      ready[i] = ranks_[i]->prefill_ready();
    }
    // The MoE layers are one expert-parallel group: each rank's step reads
    // its experts that the other ranks' decode tokens reach too. (A peer's
    // prefill tokens are left out: a step with a prefill lasts as long as
    // that rank's step, whose own tokens reach nearly every expert.)
    double decode_tokens = 0;
    for (const auto* r : ranks_) decode_tokens += r->decode_tokens_per_step();
    for (auto* r : ranks_) r->set_moe_peer_tokens(decode_tokens - r->decode_tokens_per_step());
    const PrefillVerdict verdict = prefill_verdict(ready);
    // Ranks that may prefill step first: with speculative decoding, whether
    // any of them did decides whether the others may decode (a rank that
    // was free to prefill but admitted nothing then steps again, as those).
    bool any_prefill = false;
    std::fill(ran.begin(), ran.end(), false);
    for (std::size_t i = 0; i < n; ++i) {
      outs[i] = StepOutcome{};
      const bool may_prefill = ready[i] && (verdict == PrefillVerdict::allow ||
                                            (verdict == PrefillVerdict::delay && ranks_[i]->mid_chunk()));
      if (!may_prefill) continue;
      outs[i] = ranks_[i]->begin_step(s, StepGate{true, !no_mixing_});
      ran[i] = outs[i].prefill || !no_mixing_;
      if (outs[i].prefill) {
        auto& w = prefill_bs_[i];
        if (w.size() == kPrefillBsWindow) w.erase(w.begin());
        w.push_back(outs[i].batch);
      }
      any_prefill = any_prefill || outs[i].prefill;
    }
    double longest = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!ran[i]) {
        std::vector<TokenEvent> earlier = std::move(outs[i].events);  // a first try's refusals
        outs[i] = ranks_[i]->begin_step(s, StepGate{false, !(no_mixing_ && any_prefill)});
        outs[i].events.insert(outs[i].events.begin(), std::make_move_iterator(earlier.begin()),
                              std::make_move_iterator(earlier.end()));
      }
      any_prefill = any_prefill || outs[i].prefill;
      longest = std::max(longest, outs[i].duration_s);
    }
    if (any_prefill) deferred_left_ = interval_;
    // A step always moves time on, so a stuck group cannot spin in place; an
    // iteration with no forward anywhere costs the scheduler's pass.
    if (longest <= 0) longest = idle_pass_s_;
    const std::int64_t end = s + std::max<std::int64_t>(1, static_cast<std::int64_t>(longest * 1e9));
    for (std::size_t i = 0; i < n; ++i) ranks_[i]->end_step(s, end, outs[i]);
    free_at_ = end;
    ++steps_;
  }
}

}  // namespace agentperf::sim
