// Exact-length text prompts and client-side output token counting.
#include "tokenizer/exact_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "load/load_runner.h"
#include "load/prompt_synth.h"
#include "load/request_builder.h"
#include "metrics/record_metrics.h"
#include "testserver/openai_scripts.h"
#include "testserver/scripted_server.h"
#include "trace/prompt_builder.h"
#include "trace/session_tree.h"

using namespace agentperf;
using agentperf::tokenizer::BpeTokenizer;
using agentperf::tokenizer::ExactTextBuilder;

namespace {
const BpeTokenizer& exact_qwen3() {
  static const BpeTokenizer t = BpeTokenizer::from_file(AGENTPERF_QWEN3_TOKENIZER_JSON);
  return t;
}
}  // namespace

TEST(ExactText, BlocksHaveExactLengthAloneAndJoined) {
  ExactTextBuilder b(exact_qwen3());
  EXPECT_GT(b.words().size(), 5000u);
  Rng rng(3);
  std::string joined;
  int total = 0;
  for (int n : {1, 7, 64, 512, 3}) {
    const std::string block = b.block(rng, n);
    EXPECT_EQ(exact_qwen3().count(block), static_cast<std::size_t>(n));
    joined += block;
    total += n;
  }
  EXPECT_EQ(exact_qwen3().count(joined), static_cast<std::size_t>(total));  // blocks never merge with neighbours
  // Also after a chat template header.
  EXPECT_EQ(exact_qwen3().count("<|im_start|>user\n" + b.block(rng, 100) + "<|im_end|>\n"), 100u + 5u);
}

TEST(ExactText, SynthesizedChatPromptsAreExactWithSharedPrefix) {
  ProfileConfig c;
  c.isl = {300, 40, 1};
  c.prefix_length = 128;
  c.num_prefix_groups = 2;
  c.tokenizer_path = AGENTPERF_QWEN3_TOKENIZER_JSON;
  auto exact = std::make_shared<const ExactTextBuilder>(exact_qwen3());
  PromptSynth synth(c, exact);
  RequestBuilder builder(c, "m", "/v1/chat/completions");
  for (std::uint64_t i = 0; i < 20; ++i) {
    auto p = synth.make(i);
    EXPECT_TRUE(p.exact);
    std::string body;
    for (const auto& seg : builder.build(p, "r", "c").body) body += *seg;
    const std::string content = nlohmann::json::parse(body)["messages"][0]["content"];
    EXPECT_EQ(exact_qwen3().count(content), static_cast<std::size_t>(p.isl)) << "request " << i;
    EXPECT_EQ(exact_qwen3().count(*p.prefix), 128u);
  }
}

TEST(ExactText, OutputTokensAreCountedOnTheClientWithoutUsage) {
  testserver::StreamScript s;
  s.tokens = 9;
  s.tokens_per_event = 3;  // several tokens per event: event counting would say 9, not 27
  s.include_usage = false;
  testserver::ScriptedServer server([&](const testserver::ReceivedRequest&) { return testserver::openai_stream_response(s); });
  server.start();
  ProfileConfig c;
  c.url = server.url();
  c.concurrency = 1;
  c.request_count = 3;
  c.isl = {50, 0, 1};
  c.tokenizer_path = AGENTPERF_QWEN3_TOKENIZER_JSON;
  c.quiet = true;
  LoadRunner runner(c, "m");
  auto result = runner.run();
  ASSERT_EQ(result.records.size(), 3u);
  std::string expected_text;
  for (int i = 0; i < 27; ++i) expected_text += " tok";
  for (const auto& r : result.records) {
    ASSERT_TRUE(r.ok());
    auto m = compute_metrics(r);
    EXPECT_EQ(m.osl_source, TokenSource::client_tokenizer);
    EXPECT_EQ(*m.osl, static_cast<std::int64_t>(exact_qwen3().count(expected_text)));
    EXPECT_EQ(m.isl_source, TokenSource::client_exact);
    EXPECT_TRUE(r.output_text.empty());  // not kept after counting
  }
}

TEST(ExactText, TracePromptsInTextFormAreExact) {
  auto t = trace::parse_weka_trace(
      R"({"id":"tt","block_size":64,"requests":[{"t":0,"in":150,"out":20,"hash_ids":[0,1,2]},{"t":9,"in":300,"out":5,"hash_ids":[0,1,2,3,4]}]})",
      "t");
  auto tree = trace::build_session_tree(t);
  trace::PromptBuilder b(t, 3, std::make_shared<const ExactTextBuilder>(exact_qwen3()));
  for (int k = 0; k < 2; ++k) {
    auto p = b.build(*tree.streams[0].turns[static_cast<std::size_t>(k)].call, {0, k});
    std::string text;
    for (const auto& piece : p.pieces) text += *piece;
    EXPECT_FALSE(p.token_ids);
    EXPECT_EQ(exact_qwen3().count(text), static_cast<std::size_t>(p.tokens)) << "turn " << k;
  }
}

#include <mutex>

#include "replay/replay_runner.h"

TEST(ExactText, ChatReplaySendsExactMessages) {
  const char* t3 = R"({"id":"C","block_size":64,"system_tokens":128,"requests":[
    {"t":0,"in":300,"out":70,"hash_ids":[0,1,2,3,4]},
    {"t":0.05,"in":520,"out":3,"hash_ids":[0,1,2,3,4,5,6,7,8]}]})";
  std::mutex mu;
  std::vector<std::string> bodies;
  testserver::ScriptedServer server([&](const testserver::ReceivedRequest& req) {
    {
      std::lock_guard lk(mu);
      bodies.push_back(req.body);
    }
    testserver::StreamScript s;
    s.tokens = 1;
    return testserver::openai_stream_response(s);
  });
  server.start();
  replay::ReplayConfig c;
  c.client.url = server.url();
  c.client.endpoint_type = EndpointType::chat;
  c.client.tokenizer_path = AGENTPERF_QWEN3_TOKENIZER_JSON;
  c.output.quiet = true;
  c.lanes = 1;
  c.duration_s = 0.3;
  c.warmup = false;
  c.benchmark_id = "b";
  std::vector<trace::WekaTrace> traces = {trace::parse_weka_trace(t3, "t")};
  auto res = replay::run_replay(c, traces, "m");
  ASSERT_GE(bodies.size(), 2u);
  auto j = nlohmann::json::parse(bodies[1]);  // turn 1 of the first play
  std::string roles;
  std::size_t tokens = 0;
  for (const auto& m : j["messages"]) {
    roles += m["role"].get<std::string>() + " ";
    tokens += exact_qwen3().count(m["content"].get<std::string>());
  }
  EXPECT_EQ(roles, "system user assistant user ");
  EXPECT_EQ(tokens, static_cast<std::size_t>(res.run.records[1].requested_isl));
  EXPECT_EQ(tokens, 520u + exact_qwen3().count(replay::cache_bust_marker("b", 0, 0, "C") + "\n\n"));
  EXPECT_EQ(j["messages"][1]["content"].get<std::string>().rfind("[rid:", 0), 0u);  // the marker opens the user turn
}
