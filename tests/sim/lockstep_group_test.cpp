// DP-attention ranks step together (sim/lockstep_group.h): a long prefill
// on one rank holds the decode of the other for as long as it lasts, where
// independent replicas leave it alone; a group whose ranks decode side by
// side steps no slower than its slowest rank. The group decides who may
// prefill: --enable-prefill-delayer holds a ready rank while another is not
// ready, --prefill-decode-interval keeps every rank from prefilling for N
// iterations after a prefill, and with speculative decoding no rank decodes
// in a step where another prefills.
#include "sim/lockstep_group.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
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

namespace {

// Rank 0 decodes a 600-token answer from t = 0; at 200 ms (long after any
// deferral its own prefill started) rank 1 gets a `prompt`-token request. Every step of the group is recorded.
constexpr std::int64_t kArrival = 200'000'000;

struct GroupRun {
  std::vector<std::int64_t> rank0_events;  // rank 0's streamed chunks (ns)
  std::int64_t rank1_first = 0;            // rank 1's first token (ns)
  std::int64_t rank1_ttft = 0;
  std::int64_t delayed = 0, deferred = 0;
  // Rank 0's median gap between chunks before rank 1's request: one decode step.
  std::int64_t decode_step() const {
    std::vector<std::int64_t> gaps;
    for (std::size_t k = 1; k < rank0_events.size() && rank0_events[k] < kArrival; ++k)
      gaps.push_back(rank0_events[k] - rank0_events[k - 1]);
    if (gaps.empty()) return 0;
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
    return gaps[gaps.size() / 2];
  }
};

GroupRun run_group(const std::string& model, const sim::EngineConfig& cfg, int prompt) {
  auto e0 = std::make_unique<sim::Engine>(sim::load_model_spec(model), sim::load_hardware_spec("h200"), cfg);
  auto e1 = std::make_unique<sim::Engine>(sim::load_model_spec(model), sim::load_hardware_spec("h200"), cfg);
  sim::VirtualClient c0(*e0, 0, 0), c1(*e1, 0, 0);
  sim::LockstepGroup group({&c0, &c1});
  c0.send(0, record(), request(1, 200, 600));
  std::vector<sim::VirtualClient::Finished> done;
  std::int64_t t = 0;
  bool sent = false;
  for (int guard = 0; done.size() < 2 && guard < 1000000; ++guard) {
    if (!sent && t >= kArrival) {
      c1.send(t, record(), request(2, prompt, 4));
      sent = true;
    }
    std::int64_t next = std::min({c0.next_event_ns(), c1.next_event_ns(), group.next_step_start()});
    if (!sent) next = std::min<std::int64_t>(next, kArrival);
    t = std::max(t + 1, next);
    group.advance_to(t);
    for (auto* c : {&c0, &c1})
      for (auto& f : c->advance_to(t)) done.push_back(std::move(f));
  }
  EXPECT_EQ(done.size(), 2u);
  GroupRun out;
  for (const auto& f : done) {
    EXPECT_FALSE(f.rec.error) << f.rec.error->message;
    if (f.id == 1) out.rank0_events = f.rec.content_ns;
    if (f.id == 2 && !f.rec.content_ns.empty()) {
      out.rank1_first = f.rec.content_ns.front();
      out.rank1_ttft = out.rank1_first - f.rec.start_ns;
    }
  }
  out.delayed = group.delayed_passes();
  out.deferred = group.deferred_passes();
  return out;
}

// What holding rank 1 cost it: its TTFT over the unheld run's, between `lo`
// and `hi` of rank 0's decode steps (each held iteration is one of them).
void expect_ttft_added_in_decode_steps(const GroupRun& base, const GroupRun& held, int lo, int hi) {
  const std::int64_t step = held.decode_step();
  ASSERT_GT(step, 0);
  const std::int64_t added = held.rank1_ttft - base.rank1_ttft;
  EXPECT_GE(added, lo * step) << added << " ns added, decode step " << step;
  EXPECT_LE(added, hi * step) << added << " ns added, decode step " << step;
}

}  // namespace

TEST(LockstepGroup, ThePrefillDelayerHoldsAReadyRankForAtMostItsPasses) {
  sim::EngineConfig plain;
  sim::EngineConfig delayer = plain;
  delayer.prefill_delayer = true;  // 30 passes by default
  const GroupRun base = run_group("qwen3-8b", plain, 2000);
  const GroupRun held = run_group("qwen3-8b", delayer, 2000);
  // Each rank's prefill finds the other with none to offer, so it waits the
  // whole cap: 29 delayed iterations for rank 0's own first prefill (rank 1
  // idle, each pass one scheduler iteration) and 29 for rank 1's, each of
  // those one of rank 0's decode steps, then it runs.
  EXPECT_EQ(base.delayed, 0);
  EXPECT_EQ(held.delayed, 58);
  expect_ttft_added_in_decode_steps(base, held, 27, 31);
}

TEST(LockstepGroup, APrefillDecodeIntervalSpacesEveryChunkOfAPrefill) {
  sim::EngineConfig plain;
  plain.chunked_prefill_size = 4096;
  plain.max_prefill_tokens = 4096;
  sim::EngineConfig spaced = plain;
  spaced.prefill_decode_interval = 10;
  // 12k tokens: three chunks, and between each two the group's next ten
  // iterations prefill nowhere (rank 0 decodes through them).
  const GroupRun base = run_group("qwen3-8b", plain, 12000);
  const GroupRun held = run_group("qwen3-8b", spaced, 12000);
  EXPECT_EQ(base.deferred, 0);
  EXPECT_EQ(held.deferred, 20);
  expect_ttft_added_in_decode_steps(base, held, 18, 22);
}

TEST(LockstepGroup, WithSpeculativeDecodingNoRankDecodesWhileAnotherPrefills) {
  sim::EngineConfig cfg;
  cfg.tp = 8;  // a GLM-4.6 rank holds an eighth of the weights
  const GroupRun plain = run_group("glm-4.6-fp8", cfg, 3000);
  cfg.spec.enabled = true;
  const GroupRun spec = run_group("glm-4.6-fp8", cfg, 3000);
  auto decoded_at = [](const GroupRun& r, std::int64_t t) {
    return std::find(r.rank0_events.begin(), r.rank0_events.end(), t) != r.rank0_events.end();
  };
  ASSERT_GT(plain.rank1_first, 0);
  ASSERT_GT(spec.rank1_first, 0);
  // Without speculation rank 0 decodes in the step of rank 1's prefill (its
  // chunk lands at the prefill's end); with it, rank 0 sits that step out.
  EXPECT_TRUE(decoded_at(plain, plain.rank1_first));
  EXPECT_FALSE(decoded_at(spec, spec.rank1_first));
  // And rank 0's next chunk comes one decode round after the prefill.
  const auto after = std::upper_bound(spec.rank0_events.begin(), spec.rank0_events.end(), spec.rank1_first);
  ASSERT_NE(after, spec.rank0_events.end());
  EXPECT_LE(*after - spec.rank1_first, 2 * spec.decode_step());
}

namespace {

// Two ranks, each decoding one 400-token answer from t = 0, in lockstep or
// as replicas; rank 0's median gap between streamed chunks (ns).
std::int64_t rank0_decode_step(const std::string& model, bool lockstep) {
  const sim::EngineConfig cfg;
  auto e0 = std::make_unique<sim::Engine>(sim::load_model_spec(model), sim::load_hardware_spec("h200"), cfg);
  auto e1 = std::make_unique<sim::Engine>(sim::load_model_spec(model), sim::load_hardware_spec("h200"), cfg);
  sim::VirtualClient c0(*e0, 0, 0), c1(*e1, 0, 0);
  std::unique_ptr<sim::LockstepGroup> group;
  if (lockstep) group = std::make_unique<sim::LockstepGroup>(std::vector<sim::VirtualClient*>{&c0, &c1});
  c0.send(0, record(), request(1, 200, 400));
  c1.send(0, record(), request(2, 200, 400));
  std::vector<sim::VirtualClient::Finished> done;
  std::int64_t t = 0;
  for (int guard = 0; done.size() < 2 && guard < 1000000; ++guard) {
    std::int64_t next = std::min(c0.next_event_ns(), c1.next_event_ns());
    if (group) next = std::min(next, group->next_step_start());
    t = std::max(t + 1, next);
    if (group) group->advance_to(t);
    for (auto* c : {&c0, &c1})
      for (auto& f : c->advance_to(t)) done.push_back(std::move(f));
  }
  EXPECT_EQ(done.size(), 2u);
  std::vector<std::int64_t> gaps;
  for (const auto& f : done)
    if (f.id == 1)
      for (std::size_t k = 1; k < f.rec.content_ns.size(); ++k) gaps.push_back(f.rec.content_ns[k] - f.rec.content_ns[k - 1]);
  if (gaps.empty()) return 0;
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  return gaps[gaps.size() / 2];
}

}  // namespace

// The MoE layers of a DP-attention group are one expert-parallel group: a
// rank reads the weights of every expert of its own that the other ranks'
// tokens reach, not only its own tokens' experts. Qwen3-30B-A3B (128
// experts, top 8): one token touches 8 experts, two about 15.5, so a rank
// decoding one request beside another reads nearly twice the expert bytes
// it would alone, and its decode step is longer; a dense model's is not.
TEST(LockstepGroup, EachRankReadsTheExpertsTheOtherRanksTokensReach) {
  const std::int64_t moe_free = rank0_decode_step("qwen3-30b-a3b", false);
  const std::int64_t moe_lock = rank0_decode_step("qwen3-30b-a3b", true);
  ASSERT_GT(moe_free, 0);
  EXPECT_GT(static_cast<double>(moe_lock), 1.2 * static_cast<double>(moe_free)) << moe_lock << " " << moe_free;
  EXPECT_LT(static_cast<double>(moe_lock), 2.0 * static_cast<double>(moe_free)) << moe_lock << " " << moe_free;
  const std::int64_t dense_free = rank0_decode_step("qwen3-8b", false);
  const std::int64_t dense_lock = rank0_decode_step("qwen3-8b", true);
  EXPECT_NEAR(static_cast<double>(dense_lock), static_cast<double>(dense_free), 0.01 * static_cast<double>(dense_free));
}
