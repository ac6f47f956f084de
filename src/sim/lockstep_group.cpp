#include "sim/lockstep_group.h"

#include <algorithm>

namespace agentperf::sim {

LockstepGroup::LockstepGroup(std::vector<VirtualClient*> ranks) : ranks_(std::move(ranks)) {
  for (auto* r : ranks_) r->join_lockstep();
}

std::int64_t LockstepGroup::next_step_start() const {
  std::int64_t ready = VirtualClient::kNever;
  for (const auto* r : ranks_) ready = std::min(ready, r->ready_at());
  return ready == VirtualClient::kNever ? ready : std::max(free_at_, ready);
}

void LockstepGroup::advance_to(std::int64_t t) {
  std::vector<StepOutcome> outs(ranks_.size());
  for (std::int64_t s = next_step_start(); s <= t; s = next_step_start()) {
    double longest = 0;
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      outs[i] = ranks_[i]->begin_step(s);
      longest = std::max(longest, outs[i].duration_s);
    }
    // A step always moves time on, so a stuck group cannot spin in place.
    const std::int64_t end = s + std::max<std::int64_t>(1, static_cast<std::int64_t>(longest * 1e9));
    for (std::size_t i = 0; i < ranks_.size(); ++i) ranks_[i]->end_step(s, end, outs[i]);
    free_at_ = end;
    ++steps_;
  }
}

}  // namespace agentperf::sim
