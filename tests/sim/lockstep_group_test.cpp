// DP-attention ranks step together (sim/lockstep_group.h): a long prefill
// on one rank holds the decode of the other for as long as it lasts, where
// independent replicas leave it alone; a group whose ranks decode side by
// side steps no slower than its slowest rank.
#include "sim/lockstep_group.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>

using namespace agentperf;

namespace {

std::unique_ptr<sim::Engine> rank() {
  return std::make_unique<sim::Engine>(sim::load_model_spec("qwen3-8b"), sim::load_hardware_spec("h200"),
                                       sim::EngineConfig{});
}

sim::SimRequestSpec request(std::uint64_t id, int prompt_tokens, int max_new_tokens) {
  auto prompt = std::make_shared<std::vector<sim::Token>>(static_cast<std::size_t>(prompt_tokens));
  std::iota(prompt->begin(), prompt->end(), static_cast<sim::Token>(id * 1000003));
  return {id, prompt, max_new_tokens, 0};
}

RequestRecord record() {
  RequestRecord r;
  r.phase = Phase::profiling;
  return r;
}

// Rank 0 decodes a short request from t = 0; at 50 ms rank 1 gets a 30k
// token prompt (Qwen3-8B's context is 40k). Returns rank 0's longest gap between streamed chunks (ns)
// and rank 1's prefill time (its TTFT, ns).
std::pair<std::int64_t, std::int64_t> run(bool lockstep) {
  auto e0 = rank(), e1 = rank();
  sim::VirtualClient c0(*e0, 0, 0), c1(*e1, 0, 0);
  std::unique_ptr<sim::LockstepGroup> group;
  if (lockstep) group = std::make_unique<sim::LockstepGroup>(std::vector<sim::VirtualClient*>{&c0, &c1});
  c0.send(0, record(), request(1, 200, 400));
  std::vector<sim::VirtualClient::Finished> done;
  std::int64_t t = 0;
  bool sent = false;
  for (int guard = 0; done.size() < 2 && guard < 1000000; ++guard) {
    if (!sent && t >= 50'000'000) {
      c1.send(t, record(), request(2, 30000, 4));
      sent = true;
    }
    std::int64_t next = std::min(c0.next_event_ns(), c1.next_event_ns());
    if (group) next = std::min(next, group->next_step_start());
    if (!sent) next = std::min<std::int64_t>(next, 50'000'000);
    t = std::max(t + 1, next);
    if (group) group->advance_to(t);
    for (auto* c : {&c0, &c1})
      for (auto& f : c->advance_to(t)) done.push_back(std::move(f));
  }
  EXPECT_EQ(done.size(), 2u);
  std::int64_t gap = 0, ttft = 0;
  for (const auto& f : done) {
    const auto& r = f.rec;
    EXPECT_FALSE(r.error) << r.error->message;
    if (r.content_ns.empty()) continue;
    if (f.id == 1)
      for (std::size_t k = 1; k < r.content_ns.size(); ++k) gap = std::max(gap, r.content_ns[k] - r.content_ns[k - 1]);
    else
      ttft = r.content_ns.front() - r.start_ns;
  }
  return {gap, ttft};
}

}  // namespace

TEST(LockstepGroup, AnotherRanksPrefillHoldsThisRanksDecode) {
  const auto [free_gap, free_ttft] = run(false);
  const auto [lock_gap, lock_ttft] = run(true);
  // Replicas: rank 0's decode steps are short whatever rank 1 does.
  EXPECT_LT(free_gap, free_ttft / 10) << free_gap << " " << free_ttft;
  // Lockstep: one of rank 0's gaps spans rank 1's prefill step(s): at least
  // the longest prefill step of a 30k prompt (chunked, so a part of the TTFT).
  EXPECT_GT(lock_gap, 10 * free_gap) << lock_gap << " " << free_gap;
  EXPECT_GT(lock_gap, free_ttft / 8) << lock_gap << " " << free_ttft;
  // Rank 1's own prefill is not sped up by being in a group.
  EXPECT_GE(lock_ttft, free_ttft);
}
