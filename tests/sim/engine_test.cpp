// Scheduler, MTP and step-time behaviour with hand-computed expectations.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

using namespace agentperf::sim;

namespace {
std::shared_ptr<const std::vector<Token>> tokens(Token start, int n) {
  auto v = std::make_shared<std::vector<Token>>(static_cast<std::size_t>(n));
  std::iota(v->begin(), v->end(), start);
  return v;
}
EngineConfig dense_config() {
  EngineConfig c;
  c.tp = 1;
  c.chunked_prefill_size = 16384;
  c.max_prefill_tokens = 16384;
  return c;
}
Engine dense_engine(EngineConfig c = dense_config()) {
  return Engine(load_model_spec("qwen3-32b"), load_hardware_spec("h200"), c);
}
// Runs until the request finishes; returns its events.
std::vector<TokenEvent> run_until_done(Engine& e, std::uint64_t id, int* steps = nullptr) {
  std::vector<TokenEvent> evs;
  int n = 0;
  while (e.has_work()) {
    auto out = e.step();
    ++n;
    for (auto& ev : out.events)
      if (ev.id == id) evs.push_back(ev);
    if (!evs.empty() && evs.back().finished) break;
  }
  if (steps) *steps = n;
  return evs;
}
}  // namespace

TEST(Engine, OneRequestPrefillsThenDecodesOneTokenPerStep) {
  auto e = dense_engine();
  e.submit({1, tokens(1, 1000), 10});
  int steps = 0;
  auto evs = run_until_done(e, 1, &steps);
  ASSERT_EQ(evs.size(), 10u);
  EXPECT_TRUE(evs.front().first);
  EXPECT_EQ(evs.back().completion_tokens, 10);
  EXPECT_TRUE(evs.back().finished);
  EXPECT_EQ(steps, 10);  // 1 prefill (first token) + 9 decode
  EXPECT_EQ(evs.front().cached_tokens, 0);
}

TEST(Engine, SecondTurnHitsTheFirstTurnsPromptAndOutput) {
  auto e = dense_engine();
  auto turn1 = tokens(1, 1000);
  e.submit({1, turn1, 10});
  run_until_done(e, 1);
  // Turn 2 = turn 1 prompt + a recorded answer (different from what the
  // engine generated) + a new user message.
  auto turn2 = std::make_shared<std::vector<Token>>(*turn1);
  for (int i = 0; i < 300; ++i) turn2->push_back(50000 + i);
  e.submit({2, turn2, 5});
  auto evs = run_until_done(e, 2);
  ASSERT_FALSE(evs.empty());
  EXPECT_EQ(evs.front().cached_tokens, 1000);
  EXPECT_EQ(evs.front().prompt_tokens, 1300);
}

TEST(Engine, HitsArePageAligned) {
  auto c = dense_config();
  c.page_size = 64;
  auto e = dense_engine(c);
  auto p = tokens(1, 1000);
  e.submit({1, p, 4});
  run_until_done(e, 1);
  auto p2 = std::make_shared<std::vector<Token>>(*p);
  p2->push_back(77777);
  e.submit({2, p2, 4});
  auto evs = run_until_done(e, 2);
  EXPECT_EQ(evs.front().cached_tokens, 960);  // floor(1000 / 64) x 64
}

TEST(Engine, LongPromptsAreChunked) {
  auto e = dense_engine();
  e.submit({1, tokens(1, 40000), 2});
  int prefill_steps = 0;
  bool first = false;
  while (!first) {
    auto out = e.step();
    if (out.prefill) ++prefill_steps;
    for (auto& ev : out.events) first = first || ev.first;
  }
  EXPECT_EQ(prefill_steps, 3);  // 16384 + 16384 + 7232
}

TEST(Engine, PrefillRunsBeforeDecode) {
  auto e = dense_engine();
  e.submit({1, tokens(1, 100), 50});
  e.step();  // prefill of 1
  e.step();  // decode of 1
  e.submit({2, tokens(10000, 100), 50});
  auto out = e.step();
  EXPECT_TRUE(out.prefill);  // the new arrival is prefilled first, decode waits
}

TEST(Engine, ASchedulerRecvIntervalTakesRequestsInEveryNDecodeIterations) {
  EngineConfig c = dense_config();
  c.scheduler_recv_interval = 10;
  auto e = dense_engine(c);
  e.submit({1, tokens(1, 100), 200});
  EXPECT_TRUE(e.step().prefill);  // an idle engine takes a request in at once
  EXPECT_FALSE(e.step().prefill);  // the prefill's weight (1000) makes this one poll: nothing there
  e.submit({2, tokens(10000, 100), 50});
  // The counter restarted at the last poll: nine more decode iterations
  // bring it to 10, and the tenth iteration takes request 2 in.
  int decodes = 0;
  while (!e.step().prefill) {
    ++decodes;
    ASSERT_LT(decodes, 50);
    EXPECT_EQ(e.stats().waiting, 1);  // counted as waiting though not yet taken in
  }
  EXPECT_EQ(decodes, 9);
  // Right after that prefill the next iteration polls again.
  e.submit({3, tokens(20000, 100), 50});
  EXPECT_TRUE(e.step().prefill);
}

TEST(Engine, APrefillDecodeIntervalDefersTheNextPrefillsOwnIterations) {
  EngineConfig c = dense_config();
  c.prefill_decode_interval = 3;
  auto e = dense_engine(c);
  e.submit({1, tokens(1, 100), 50});
  EXPECT_TRUE(e.step().prefill);  // prefill of 1 arms the interval
  e.submit({2, tokens(10000, 100), 50});
  // Three iterations decode request 1 although request 2 waits, then it runs.
  for (int i = 0; i < 3; ++i) {
    const auto out = e.step();
    EXPECT_FALSE(out.prefill) << "iteration " << i;
    EXPECT_EQ(out.batch, 1) << "iteration " << i;
    EXPECT_TRUE(e.prefill_ready());
  }
  EXPECT_TRUE(e.step().prefill);
  // A gate decided elsewhere (a DP-attention group) overrides the engine's own.
  EXPECT_FALSE(e.step(StepGate{false, true}).prefill);
  e.submit({3, tokens(20000, 100), 50});
  EXPECT_TRUE(e.step(StepGate{true, true}).prefill);
  const auto idle = e.step(StepGate{false, false});
  EXPECT_EQ(idle.batch, 0);
  EXPECT_EQ(idle.duration_s, 0.0);
}

TEST(Engine, MaxRunningRequestsCapsTheBatch) {
  auto c = dense_config();
  c.max_running_requests = 3;
  auto e = dense_engine(c);
  for (std::uint64_t i = 0; i < 5; ++i) e.submit({i, tokens(static_cast<Token>(i * 1000), 50), 20});
  int max_batch = 0;
  for (int s = 0; s < 10; ++s) {
    auto out = e.step();
    if (!out.prefill) max_batch = std::max(max_batch, out.batch);
  }
  EXPECT_EQ(max_batch, 3);
  EXPECT_EQ(e.stats().waiting, 2);
  // The two left waiting were stopped by the cap, never by the pools.
  EXPECT_GT(e.stats().admission_blocked_running_cap, 0);
  EXPECT_EQ(e.stats().admission_blocked_kv, 0);
  EXPECT_STREQ(binding_pool(e.stats()), "running_cap");
}

TEST(Engine, AKvPoolTooSmallForTheQueueIsTheBindingPool) {
  // ~3,100 tokens of KV: two 1,000-token prompts with their reserved decode
  // tokens fill it, so the rest wait on the KV pool (not on the cap).
  auto c = dense_config();
  c.mem_fraction_static = 0.4372;
  auto e = dense_engine(c);
  ASSERT_LT(e.plan().kv_tokens, 6000);
  for (std::uint64_t i = 0; i < 6; ++i) e.submit({i, tokens(static_cast<Token>(i * 10000), 1000), 600});
  for (int s = 0; s < 5; ++s) e.step();
  const auto st = e.stats();
  EXPECT_GT(st.waiting, 0);
  EXPECT_GT(st.admission_blocked_kv, 0);
  EXPECT_EQ(st.admission_blocked_running_cap, 0);
  EXPECT_STREQ(binding_pool(st), "kv");
}

TEST(Engine, BindingPoolIsTheLimitMetMostWithRetractionsCountedForKv) {
  EngineStats s;
  EXPECT_STREQ(binding_pool(s), "none");
  s.admission_blocked_state = 5;
  s.admission_blocked_kv = 3;
  EXPECT_STREQ(binding_pool(s), "state");
  s.retractions = 3;  // 3 + 3 > 5
  EXPECT_STREQ(binding_pool(s), "kv");
  s.admission_blocked_running_cap = 7;
  EXPECT_STREQ(binding_pool(s), "running_cap");
}

TEST(Engine, TooLongPromptIsRejected) {
  auto e = dense_engine();
  e.submit({9, tokens(1, 131000), 1000});
  auto out = e.step();
  ASSERT_EQ(out.events.size(), 1u);
  ASSERT_TRUE(out.events[0].error.has_value());
  EXPECT_NE(out.events[0].error->find("maximum context length"), std::string::npos);
}

TEST(Engine, KvPressureRetractsAndEvicts) {
  // A tiny KV pool: 3 long requests cannot all decode to the end at once.
  auto c = dense_config();
  c.mem_fraction_static = 0.4372;  // (0.4372 x 150.75 - 65.5) GB / 131 kB ~ 3,100 tokens
  auto e = dense_engine(c);
  const auto kv = e.plan().kv_tokens;
  ASSERT_GT(kv, 1500);
  ASSERT_LT(kv, 6000);
  for (std::uint64_t i = 0; i < 3; ++i) e.submit({i, tokens(static_cast<Token>(i * 10000), 400), 1000});
  int finished = 0;
  for (int s = 0; s < 20000 && e.has_work(); ++s) {
    for (auto& ev : e.step().events) {
      EXPECT_FALSE(ev.error.has_value()) << *ev.error;
      finished += ev.finished;
    }
  }
  EXPECT_EQ(finished, 3);
  EXPECT_GT(e.stats().retractions, 0);
}

// The same tiny pool (~3,100 tokens) and six 500-token prompts that will
// each write 2,000 tokens. SGLang's PrefillAdder keeps room for the output
// (500 + 2,000 x new_token_ratio 0.7 = 1,900 a request): it starts fewer than
// six. vLLM V1 allocates only the prompt's tokens (6 x 500 = 3,000 fit): it
// starts all six in its first step, then preempts as their decodes outgrow
// the pool. Both finish every request.
TEST(Engine, VllmAdmitsWhatFitsNowAndPreemptsWhereSglangReservesTheOutput) {
  auto first_step_batch = [](SchedulerKind kind, std::int64_t* retractions) {
    auto c = dense_config();
    c.mem_fraction_static = 0.4372;
    c.scheduler = kind;
    auto e = dense_engine(c);
    EXPECT_GT(e.plan().kv_tokens, 3000);
    EXPECT_LT(e.plan().kv_tokens, 3600);
    for (std::uint64_t i = 0; i < 6; ++i) e.submit({i, tokens(static_cast<Token>(i * 10000), 500), 2000});
    const int first = e.step().batch;
    int finished = 0;
    for (int s = 0; s < 200000 && e.has_work(); ++s)
      for (auto& ev : e.step().events) {
        EXPECT_FALSE(ev.error.has_value()) << *ev.error;
        finished += ev.finished;
      }
    EXPECT_EQ(finished, 6);
    *retractions = e.stats().retractions;
    return first;
  };
  std::int64_t vllm_retractions = 0, sglang_retractions = 0;
  EXPECT_EQ(first_step_batch(SchedulerKind::vllm, &vllm_retractions), 6);
  EXPECT_GT(vllm_retractions, 0);
  EXPECT_LT(first_step_batch(SchedulerKind::sglang, &sglang_retractions), 6);
}

TEST(Engine, MtpAcceptLengthMatchesExpected) {
  auto c = dense_config();
  c.tp = 4;
  c.spec.enabled = true;
  c.spec.num_steps = 3;
  c.spec.accept_length = 3.39;
  Engine e(load_model_spec("qwen3.5-397b-a17b-nvfp4"), load_hardware_spec("b200"), c);
  int n3 = 0, n4 = 0, other = 0;
  for (int i = 0; i < 20000; ++i) {
    const int l = e.draw_accept_length();
    (l == 3 ? n3 : l == 4 ? n4 : other)++;
  }
  EXPECT_EQ(other, 0);  // match-expected: never 1 or 2
  EXPECT_NEAR(n4 / 20000.0, 0.39, 0.015);
  // A decode round emits the drawn length to every request.
  e.submit({1, tokens(1, 64), 200});
  e.step();  // prefill: 1 token
  auto out = e.step();
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_TRUE(out.events[0].new_tokens == 3 || out.events[0].new_tokens == 4);
  EXPECT_GT(e.stats().spec_verify_steps, 0);
}

TEST(StepTime, DenseDecodeIsWeightBandwidthBound) {
  auto m = load_model_spec("qwen3-32b");
  auto hw = load_hardware_spec("h200");
  EngineConfig c;
  c.tp = 1;
  StepTimeModel st(m, hw, c);
  auto t = st.decode_round(1, 1000);
  const double bw = 4.8e12 * 0.85;
  EXPECT_DOUBLE_EQ(t.weights_bytes, 65.5e9);
  EXPECT_DOUBLE_EQ(t.kv_bytes, 1000 * 131072.0);
  EXPECT_NEAR(t.memory_s, (65.5e9 + 1000 * 131072.0) / bw, 1e-12);
  EXPECT_GT(t.memory_s, t.compute_s);
  EXPECT_NEAR(t.total_s, t.memory_s + 4e-4 + 3e-4, 1e-9);  // + CUDA-graph launch + CPU
  // Above --cuda-graph-max-bs the forward runs eagerly.
  auto eager = st.decode_round(65, 65 * 1000.0);
  EXPECT_NEAR(eager.launch_s, 3e-3, 1e-12);
}

TEST(StepTime, MoeExpertsTouchedAndTpAllReduce) {
  auto m = load_model_spec("qwen3.5-397b-a17b-nvfp4");
  auto hw = load_hardware_spec("b200");
  EngineConfig c;
  c.tp = 4;
  StepTimeModel st(m, hw, c);
  EXPECT_NEAR(st.experts_touched(8), 512 * (1 - std::pow(1 - 10.0 / 512, 8)), 1e-9);
  EXPECT_NEAR(st.experts_touched(8), 75, 1);     // by hand, uniform top-10 of 512
  EXPECT_NEAR(st.experts_touched(64), 367, 1);
  ForwardShape s;
  s.tokens = 4;
  s.batch = 4;
  auto t = st.target_forward(s);
  // 120 all-reduces of 4 x 4096 x 2 bytes at TP4
  const double per = 8e-6 + 2.0 * 3 / 4 * (4 * 4096 * 2.0) / (900e9 * 0.75);
  EXPECT_NEAR(t.comm_s, 120 * per, 1e-12);
}

TEST(Engine, HiCacheLoadsAnEvictedPrefixBackFromHost) {
  EngineConfig c;
  c.tp = 1;
  c.mem_fraction_static = 0.1103;  // (0.1103 x 150.75 - 16.4) GB / 73,728 B ~ 3,088 tokens
  c.hicache.enabled = true;
  c.hicache.ratio = 4;
  c.hicache.write_policy = WritePolicy::write_through;
  Engine e(load_model_spec("qwen3-8b"), load_hardware_spec("h200"), c);
  ASSERT_GT(e.plan().kv_tokens, 3000);
  ASSERT_LT(e.plan().kv_tokens, 3200);
  auto a = tokens(1, 1000);
  e.submit({1, a, 4});
  run_until_done(e, 1);
  for (std::uint64_t id = 2; id <= 4; ++id) {  // unrelated traffic pushes A off the device
    e.submit({id, tokens(static_cast<Token>(id * 100000), 1000), 4});
    run_until_done(e, id);
  }
  EXPECT_GT(e.cache().counters().device_evicted_tokens, 0);
  auto a2 = std::make_shared<std::vector<Token>>(*a);
  for (int i = 0; i < 200; ++i) a2->push_back(900000 + i);
  e.submit({5, a2, 4});
  auto evs = run_until_done(e, 5);
  EXPECT_EQ(evs.front().cached_tokens, 1000);
  EXPECT_EQ(e.stats().cached_tokens_host, 1000);
  EXPECT_GT(e.cache().counters().h2d_bytes, 0);
}

TEST(Engine, WithoutHiCacheTheEvictedPrefixIsRecomputed) {
  EngineConfig c;
  c.tp = 1;
  c.mem_fraction_static = 0.1103;
  Engine e(load_model_spec("qwen3-8b"), load_hardware_spec("h200"), c);
  auto a = tokens(1, 1000);
  e.submit({1, a, 4});
  run_until_done(e, 1);
  for (std::uint64_t id = 2; id <= 4; ++id) {
    e.submit({id, tokens(static_cast<Token>(id * 100000), 1000), 4});
    run_until_done(e, id);
  }
  auto a2 = std::make_shared<std::vector<Token>>(*a);
  a2->push_back(900000);
  e.submit({5, a2, 4});
  EXPECT_EQ(run_until_done(e, 5).front().cached_tokens, 0);
}

// Disaggregated decode (SGLang's decode server): a request whose prompt KV
// arrived from a prefill engine computes none of it, streams the prefill's
// first token from an iteration that runs no forward, then decodes; the
// decode engine keeps no radix cache.
TEST(Engine, ATransferredRequestComputesNoneOfItsPromptAndStreamsItsFirstTokenAtOnce) {
  auto e = dense_engine();
  SimRequestSpec s{1, tokens(1, 20000), 10};
  s.kv_transferred = true;
  s.cached_tokens = 15000;
  e.submit(s);
  auto first = e.step();
  ASSERT_EQ(first.events.size(), 1u);
  EXPECT_TRUE(first.events[0].first);
  EXPECT_EQ(first.events[0].new_tokens, 1);
  EXPECT_EQ(first.events[0].cached_tokens, 15000);
  EXPECT_EQ(first.events[0].prompt_tokens, 20000);
  EXPECT_FALSE(first.prefill);
  EXPECT_EQ(e.stats().kv_used, 20001);  // the whole prompt and the first token
  int steps = 0;
  auto rest = run_until_done(e, 1, &steps);
  EXPECT_EQ(steps, 9);  // nine decode rounds for the other nine tokens
  ASSERT_FALSE(rest.empty());
  EXPECT_TRUE(rest.back().finished);
  EXPECT_EQ(rest.back().completion_tokens, 10);
  const auto st = e.stats();
  EXPECT_EQ(st.computed_prefill_tokens_total, 0);
  EXPECT_EQ(st.prefill_steps, 0);
  EXPECT_EQ(st.generation_tokens_total, 9);  // the first token is the prefill engine's
  EXPECT_EQ(st.kv_used, 0);
  EXPECT_EQ(e.cache().counters().device_tokens, 0);  // nothing kept
  // The same request on an aggregated engine prefills its first
  // 16,384-token chunk first.
  auto agg = dense_engine();
  agg.submit({1, tokens(1, 20000), 10});
  EXPECT_TRUE(agg.step().prefill);
  EXPECT_EQ(agg.stats().computed_prefill_tokens_total, 16384);
}

TEST(Engine, ATransferredRequestWaitsForRoomForItsPromptAndTheReservedDecodeTokens) {
  // SGLang pre-allocates the prompt plus 512 reserved decode tokens, beyond
  // what the running requests keep for their own (at most 512 each).
  auto c = dense_config();
  c.max_total_tokens = 30000;
  auto e = dense_engine(c);
  ASSERT_EQ(e.plan().kv_tokens, 30000);
  SimRequestSpec a{1, tokens(1, 20000), 1000};
  a.kv_transferred = true;
  SimRequestSpec b{2, tokens(100000, 9000), 1000};
  b.kv_transferred = true;
  e.submit(a);
  e.submit(b);
  // A takes 20,001 tokens and keeps 512; B needs 9,001 + 512 = 9,513 of the
  // 30,000 - 20,001 - 512 = 9,487 left: it waits until A ends.
  auto first = e.step();
  ASSERT_EQ(first.events.size(), 1u);
  EXPECT_EQ(first.events[0].id, 1u);
  EXPECT_EQ(e.transferred_waiting(), 1);
  EXPECT_GT(e.stats().admission_blocked_kv, 0);
  bool a_done = false, b_first = false;
  while (e.has_work() && !b_first) {
    for (const auto& ev : e.step().events) {
      if (ev.id == 1 && ev.finished) a_done = true;
      if (ev.id == 2 && ev.first) {
        EXPECT_TRUE(a_done) << "B started before A ended";
        b_first = true;
      }
    }
  }
  EXPECT_TRUE(b_first);
  // With room for both (9,000 tokens less), B starts in the first iteration too.
  auto roomy = dense_engine(c);
  SimRequestSpec small = b;
  small.prompt_len = 8900;  // 8,901 + 512 = 9,413 <= 9,487
  roomy.submit(a);
  roomy.submit(small);
  EXPECT_EQ(roomy.step().events.size(), 2u);
}

// DSpark drafts a block of 5 tokens in one forward: a round accepts up to 6,
// so a golden acceptance length of 3.51 is drawn as 3 or 4, not cut to the
// 2 a one-step chain could accept.
TEST(Engine, ABlockDrafterAcceptsPastItsSingleDraftForward) {
  auto c = dense_config();
  c.tp = 4;
  c.spec.enabled = true;
  c.spec.num_steps = 1;
  c.spec.block_size = 5;
  c.spec.num_draft_tokens = 6;
  c.spec.accept_length = 3.51;
  Engine e(load_model_spec("deepseek-v4.1-flash-fp4"), load_hardware_spec("b200"), c);
  double sum = 0;
  for (int i = 0; i < 20000; ++i) sum += e.draw_accept_length();
  EXPECT_NEAR(sum / 20000, 3.51, 0.02);
  c.spec.block_size = 0;  // a one-step chain
  Engine chain(load_model_spec("deepseek-v4.1-flash-fp4"), load_hardware_spec("b200"), c);
  for (int i = 0; i < 100; ++i) EXPECT_LE(chain.draw_accept_length(), 2);
}

// DeepSeek-V4.1 under SGLang with --max-running-requests and no
// --swa-full-tokens-ratio keeps a bounded count of window tails: a
// conversation whose tail another conversation's inserts evicted is
// recomputed although its KV is still cached; with room for the tails it is
// served from the cache.
TEST(Engine, EvictedWindowTailsCostTheReuseOfCachedPrefixes) {
  auto run = [](int tails) {
    auto c = dense_config();
    c.tp = 4;
    c.max_running_requests = 2;
    c.swa_prefix_tails = tails;
    Engine e(load_model_spec("deepseek-v4.1-flash-fp4"), load_hardware_spec("b200"), c);
    auto a = tokens(1, 1000);
    e.submit({1, a, 4});
    run_until_done(e, 1);
    e.submit({2, tokens(200000, 1000), 4});  // another conversation
    run_until_done(e, 2);
    auto a2 = std::make_shared<std::vector<Token>>(*a);
    for (int i = 0; i < 300; ++i) a2->push_back(50000 + i);
    e.submit({3, a2, 4});
    const auto cached = run_until_done(e, 3).front().cached_tokens;
    return std::make_pair(cached, e.stats());
  };
  const auto [scarce, scarce_stats] = run(1);
  EXPECT_EQ(scarce, 0);
  EXPECT_EQ(scarce_stats.swa_tail_lost_tokens, 1000);
  EXPECT_GE(scarce_stats.swa_tails_evicted, 1);
  EXPECT_GT(scarce_stats.kv_evictable, 1000);  // the full KV stayed cached
  EXPECT_STREQ(binding_pool(scarce_stats), "swa_tails");
  const auto [ample, ample_stats] = run(8);
  EXPECT_EQ(ample, 1000);
  EXPECT_EQ(ample_stats.swa_tail_lost_tokens, 0);
}

// Chunked prefill leaves a tail at every chunk boundary (SGLang's
// cache_unfinished_req): a 10,000-token prompt in 4,096-token chunks takes
// three, two at its boundaries and one at its end, and its finish one more.
TEST(Engine, EveryChunkBoundaryTakesAWindowTail) {
  auto c = dense_config();
  c.tp = 4;
  c.max_running_requests = 2;
  c.chunked_prefill_size = 4096;
  c.max_prefill_tokens = 4096;
  c.swa_prefix_tails = 100;
  Engine e(load_model_spec("deepseek-v4.1-flash-fp4"), load_hardware_spec("b200"), c);
  e.submit({1, tokens(1, 10000), 4});
  run_until_done(e, 1);
  EXPECT_EQ(e.cache().counters().device_states, 4);
}
