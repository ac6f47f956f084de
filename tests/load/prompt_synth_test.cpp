#include "load/prompt_synth.h"

#include <gtest/gtest.h>

#include "load/request_builder.h"

using namespace agentperf;

namespace {
int count_items(const std::string& s, char sep) {
  if (s.empty()) return 0;
  return 1 + static_cast<int>(std::count(s.begin(), s.end(), sep));
}
ProfileConfig token_config() {
  ProfileConfig c;
  c.endpoint_type = EndpointType::completions;
  c.isl = {300, 0, 1};
  c.osl = {20, 0, 1};
  c.seed = 7;
  return c;
}
}  // namespace

TEST(PromptSynth, TokenIdPromptsHaveExactLength) {
  auto c = token_config();
  PromptSynth synth(c);
  auto p = synth.make(0);
  EXPECT_TRUE(p.exact);
  EXPECT_EQ(p.isl, 300);
  EXPECT_EQ(count_items(*p.suffix, ','), 300);
  EXPECT_EQ(p.osl, 20);
}

TEST(PromptSynth, SharedPrefixIsIdenticalWithinAGroupAndSharedNotCopied) {
  auto c = token_config();
  c.prefix_length = 100;
  c.num_prefix_groups = 2;
  PromptSynth synth(c);
  auto a = synth.make(0), b = synth.make(1), a2 = synth.make(2);
  EXPECT_EQ(a.prefix_group, 0);
  EXPECT_EQ(b.prefix_group, 1);
  EXPECT_EQ(a2.prefix_group, 0);
  EXPECT_EQ(a.prefix.get(), a2.prefix.get());  // the same buffer, not a copy
  EXPECT_NE(*a.prefix, *b.prefix);
  EXPECT_NE(*a.suffix, *a2.suffix);
  EXPECT_EQ(count_items(*a.prefix, ','), 100);
  EXPECT_EQ(count_items(*a.suffix, ','), 200);  // ISL counts the prefix
}

TEST(PromptSynth, DeterministicBySeedAndIndex) {
  auto c = token_config();
  c.isl = {300, 50, 1};
  PromptSynth s1(c), s2(c);
  EXPECT_EQ(*s1.make(5).suffix, *s2.make(5).suffix);
  EXPECT_EQ(s1.make(5).isl, s2.make(5).isl);
  c.seed = 8;
  PromptSynth s3(c);
  EXPECT_NE(*s1.make(5).suffix, *s3.make(5).suffix);
}

TEST(PromptSynth, LengthDistributionMatchesMeanAndStddev) {
  auto c = token_config();
  c.isl = {1000, 100, 1};
  PromptSynth synth(c);
  double sum = 0, sq = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    double v = synth.make(static_cast<std::uint64_t>(i)).isl;
    sum += v;
    sq += v * v;
  }
  const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 1000, 6);
  EXPECT_NEAR(sd, 100, 5);
}

TEST(RequestBuilder, BodyIsValidJsonWithPromptAndFields) {
  auto c = token_config();
  c.prefix_length = 10;
  c.num_prefix_groups = 1;
  c.isl = {25, 0, 1};
  c.extra_inputs = {{"ignore_eos", "true"}};
  c.headers = {{"X-Custom", "1"}};
  c.api_key = "secret";
  PromptSynth synth(c);
  RequestBuilder builder(c, "my-model", "/v1/completions");
  auto req = builder.build(synth.make(0), "rid", "cid");
  std::string body;
  for (const auto& seg : req.body) body += *seg;
  auto j = nlohmann::json::parse(body);
  EXPECT_EQ(j["model"], "my-model");
  EXPECT_EQ(j["stream"], true);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  EXPECT_EQ(j["ignore_eos"], true);
  EXPECT_EQ(j["max_tokens"], 20);
  EXPECT_EQ(j["prompt"].size(), 25u);
  bool auth = false, custom = false;
  for (const auto& [k, v] : req.headers) {
    if (k == "Authorization") auth = v == "Bearer secret";
    if (k == "X-Custom") custom = v == "1";
  }
  EXPECT_TRUE(auth);
  EXPECT_TRUE(custom);
}

TEST(RequestBuilder, ChatTextPromptAndMaxTokensOverride) {
  ProfileConfig c;
  c.isl = {40, 0, 1};
  c.extra_inputs = {{"max_completion_tokens", "5"}};
  PromptSynth synth(c);
  RequestBuilder builder(c, "m", "/v1/chat/completions");
  auto req = builder.build(synth.make(3), "r", "c");
  std::string body;
  for (const auto& seg : req.body) body += *seg;
  auto j = nlohmann::json::parse(body);
  EXPECT_EQ(j["messages"][0]["role"], "user");
  const std::string content = j["messages"][0]["content"];
  EXPECT_EQ(count_items(content, ' '), 40);
  EXPECT_FALSE(j.contains("max_tokens"));
  EXPECT_EQ(j["max_completion_tokens"], 5);
}
