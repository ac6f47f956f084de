// The API server's front end: every prompt is templated and tokenized whole,
// one at a time per tokenizer worker (sim/front_end_queue.h).
#include "sim/front_end_queue.h"

#include <gtest/gtest.h>

#include "replay/virtual_replay.h"
#include "sim/engine.h"
#include "trace/synth.h"

using namespace agentperf;

namespace {
sim::EngineCosts costs(double fixed_s, double per_token_s) {
  sim::EngineCosts c;
  c.front_end_s = fixed_s;
  c.front_end_token_s = per_token_s;
  return c;
}
}  // namespace

TEST(FrontEndQueue, ServiceIsFixedPlusPerPromptToken) {
  sim::FrontEndQueue q(costs(0.02, 2e-6), 1);
  EXPECT_NEAR(q.service_s(100000), 0.02 + 0.2, 1e-12);
  // An idle worker starts at once: 100k tokens are handed on 220 ms later.
  const auto a = q.admit(1'000'000'000, 100000);
  EXPECT_EQ(a.start_ns, 1'000'000'000);
  EXPECT_EQ(a.done_ns, 1'000'000'000 + 220'000'000);
}

TEST(FrontEndQueue, OneWorkerTokenizesLongPromptsOneAfterAnother) {
  sim::FrontEndQueue q(costs(0, 1e-6), 1);
  // Three 100k-token prompts arriving together: each waits for the ones before.
  EXPECT_EQ(q.admit(0, 100000).done_ns, 100'000'000);
  const auto second = q.admit(0, 100000);
  EXPECT_EQ(second.start_ns, 100'000'000);  // waited for the first
  EXPECT_EQ(second.done_ns, 200'000'000);
  EXPECT_EQ(q.admit(0, 100000).done_ns, 300'000'000);
  // One arriving after the queue drained starts on arrival.
  EXPECT_EQ(q.admit(500'000'000, 1000).done_ns, 501'000'000);
}

TEST(FrontEndQueue, MoreWorkersServeInParallel) {
  sim::FrontEndQueue q(costs(0, 1e-6), 2);
  EXPECT_EQ(q.admit(0, 100000).done_ns, 100'000'000);
  EXPECT_EQ(q.admit(0, 100000).done_ns, 100'000'000);  // the second worker
  EXPECT_EQ(q.admit(0, 100000).done_ns, 200'000'000);  // the first worker again
}

TEST(FrontEndQueue, FreeFrontEndHandsOnAtArrival) {
  sim::FrontEndQueue q(costs(0, 0), 1);
  EXPECT_TRUE(q.free_of_cost());
  EXPECT_EQ(q.admit(42, 250000).done_ns, 42);
  EXPECT_EQ(q.admit(42, 250000).done_ns, 42);
}

// In a whole virtual-time replay the per-token cost lands in TTFT, and the
// breakdown's parts add up to the records' mean TTFT.
TEST(FrontEndQueue, ReplayTtftCarriesTheTokenizingOfEachWholePrompt) {
  trace::SynthOptions o;
  o.traces = 4;
  o.seed = 3;
  o.mean_turns = 8;
  o.system_tokens = 6000;
  o.mean_turn_input = 1500;
  o.mean_output = 100;
  o.max_context = 40000;
  o.subagent_probability = 0;
  const auto traces = trace::synthesize_traces(o);
  replay::ReplayConfig rc;
  rc.output.quiet = true;
  rc.lanes = 2;
  rc.duration_s = 60;
  rc.grace_s = 30;
  rc.benchmark_id = "front-end";
  auto run = [&](double per_token_s) {
    sim::EngineConfig cfg;
    cfg.costs = costs(0, per_token_s);
    sim::Engine e(sim::load_model_spec("qwen3-8b"), sim::load_hardware_spec("h200"), cfg);
    return replay::predict_replay(e, rc, traces);
  };
  const auto free = run(0), paid = run(10e-6);
  auto mean_ttft_and_isl = [](const replay::VirtualReplayResult& r) {
    double ttft = 0, isl = 0;
    int n = 0;
    for (const auto& rec : r.replay.run.records) {
      if (rec.phase != Phase::profiling || rec.error || rec.content_ns.empty()) continue;
      ttft += static_cast<double>(rec.content_ns.front() - rec.start_ns) / 1e9;
      isl += static_cast<double>(rec.usage_prompt_tokens.value_or(0));
      ++n;
    }
    return std::pair{ttft / n, isl / n};
  };
  const auto [ttft_free, isl_free] = mean_ttft_and_isl(free);
  const auto [ttft_paid, isl_paid] = mean_ttft_and_isl(paid);
  ASSERT_GT(isl_paid, 5000);
  // 10 us a token over prompts of ~isl tokens: at least that much more TTFT
  // (more when two lanes' prompts queue at the one worker).
  EXPECT_GT(ttft_paid - ttft_free, 0.9 * 10e-6 * isl_paid);
  const auto& b = paid.ttft_breakdown;
  ASSERT_GT(b.requests, 10);
  EXPECT_NEAR(b.front_end_s / b.requests, 10e-6 * isl_paid, 0.1 * 10e-6 * isl_paid);
  const double parts = (b.front_end_wait_s + b.front_end_s + b.scheduler_wait_s + b.first_step_s + b.network_s) / b.requests;
  EXPECT_NEAR(parts, ttft_paid, 0.02 * ttft_paid);
  EXPECT_EQ(free.ttft_breakdown.front_end_s, 0);
}
