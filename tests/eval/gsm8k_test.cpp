// GSM8K extraction and scoring on recorded answers, and the whole check
// against a local server that answers some questions right.
#include "eval/gsm8k.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "eval/eval_runner.h"
#include "testserver/scripted_server.h"

using namespace agentperf;
using namespace agentperf::eval;
using namespace std::chrono_literals;

TEST(Gsm8k, StrictAndFlexibleExtractionLikeLmEval) {
  EXPECT_EQ(extract_strict("so 40 + 2 = 42.\n#### 1,234"), "1234");
  EXPECT_EQ(extract_strict("#### -7"), "-7");
  EXPECT_FALSE(extract_strict("The answer is 42.").has_value());
  EXPECT_EQ(extract_flexible("The answer is 42."), "42");
  EXPECT_EQ(extract_flexible("She paid $18. Then 3 more, so $21."), "21");
  EXPECT_EQ(extract_flexible("costs $1,020 in total"), "1020");
  EXPECT_FALSE(extract_flexible("no digits here").has_value());
  EXPECT_EQ(normalize_number("$1,000."), "1000");
  EXPECT_EQ(normalize_number("42.0"), "42.0");  // lm-eval does not equate 42.0 and 42
}

TEST(Gsm8k, ScoresRecordedAnswers) {
  Gsm8kItem item{"q", "... #### 12", "12"};
  auto both = score(item, "24 + 18 = 42, 42 - 30 = 12.\n#### 12");
  EXPECT_TRUE(both.strict);
  EXPECT_TRUE(both.flexible);
  auto flex = score(item, "So she has 12 muffins left.");
  EXPECT_FALSE(flex.strict);
  EXPECT_TRUE(flex.flexible);
  auto wrong = score(item, "#### 12\nActually it is 13.");  // strict reads 12, the last number is 13
  EXPECT_TRUE(wrong.strict);
  EXPECT_FALSE(wrong.flexible);
  EXPECT_FALSE(score(item, "#### 13").strict);
}

TEST(Gsm8k, LoadsTheSampleAndRejectsBadLines) {
  auto items = load_gsm8k(AGENTPERF_GSM8K_SAMPLE);
  ASSERT_EQ(items.size(), 12u);
  EXPECT_EQ(items[0].target, "12");
  EXPECT_EQ(items[6].target, "85");
  const auto bad = std::filesystem::temp_directory_path() / "agentperf_gsm8k_bad.jsonl";
  std::ofstream(bad) << R"({"question":"q","answer":"a"})" << "\n";
  try {
    load_gsm8k(bad.string());
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(":1: 'answer' has no final '#### N' line"), std::string::npos) << e.what();
  }
  std::filesystem::remove(bad);
}

TEST(Gsm8k, FewShotPromptShapes) {
  auto items = load_gsm8k(AGENTPERF_GSM8K_SAMPLE);
  std::vector<Gsm8kItem> shots(items.begin(), items.begin() + 2);
  const auto p = completion_prompt(shots, items[5]);
  EXPECT_EQ(p.rfind("Question: " + items[0].question + "\nAnswer: " + items[0].answer + "\n\n", 0), 0u);
  EXPECT_TRUE(p.size() > 8 && p.substr(p.size() - 8) == "\nAnswer:");
  auto m = chat_messages(shots, items[5]);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[1].first, "assistant");
  EXPECT_EQ(m[4].second, "Question: " + items[5].question + "\nAnswer:");
}

TEST(Gsm8k, EndToEndAgainstAServerThatKnowsSomeAnswers) {
  auto items = load_gsm8k(AGENTPERF_GSM8K_SAMPLE);
  std::vector<Gsm8kItem> shots(items.begin(), items.begin() + 2);
  std::vector<Gsm8kItem> questions(items.begin() + 2, items.end());  // 10 questions
  // Right for the first 7 questions, wrong for the other 3.
  std::map<std::string, std::string> answers;
  for (std::size_t i = 0; i < questions.size(); ++i)
    answers[questions[i].question] = i < 7 ? "Let me work it out.\n#### " + questions[i].target : "#### 999";
  testserver::ScriptedServer server([&](const testserver::ReceivedRequest& req) {
    auto j = nlohmann::json::parse(req.body);
    std::string last = j["messages"].back()["content"];
    last = last.substr(10, last.size() - 10 - 8);  // strip "Question: " and "\nAnswer:"
    EXPECT_EQ(j["temperature"], 0);
    EXPECT_EQ(j["messages"].size(), 5u);
    testserver::ScriptedResponse r;
    r.framing = testserver::ScriptedResponse::Framing::content_length;
    r.headers = {{"Content-Type", "application/json"}};
    const nlohmann::json out = {{"choices", {{{"message", {{"role", "assistant"}, {"content", answers[last]}}}}}}};
    r.steps.push_back({0ns, out.dump()});
    return r;
  });
  server.start();
  EvalConfig cfg;
  cfg.client.url = server.url();
  cfg.concurrency = 4;
  auto res = run_gsm8k(cfg, questions, shots, "m");
  EXPECT_DOUBLE_EQ(res.strict, 0.7);
  EXPECT_DOUBLE_EQ(res.flexible, 0.7);
  EXPECT_EQ(res.errors, 0u);
  ASSERT_EQ(res.records.size(), 10u);
  EXPECT_TRUE(res.records[0].score.strict);
  EXPECT_FALSE(res.records[9].score.flexible);
}
