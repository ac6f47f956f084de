// The native BPE against golden encodings made by the reference JS
// tokenizer (tools/tokenizer-oracle/make_golden.mjs).
#include "tokenizer/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"

using agentperf::UserError;
using agentperf::tokenizer::BpeTokenizer;
using agentperf::tokenizer::TokenId;

namespace {
const BpeTokenizer& qwen3() {
  static const BpeTokenizer t = BpeTokenizer::from_file(AGENTPERF_QWEN3_TOKENIZER_JSON);
  return t;
}
}  // namespace

TEST(BpeTokenizer, MatchesTheReferenceOnTheGoldenCorpus) {
  const auto& tok = qwen3();
  std::ifstream in(AGENTPERF_TOKENIZER_GOLDEN);
  ASSERT_TRUE(in) << "missing " << AGENTPERF_TOKENIZER_GOLDEN;
  std::string line;
  int total = 0, passed = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    const std::string text = j["text"];
    const auto expected = j["ids"].get<std::vector<TokenId>>();
    const auto got = tok.encode(text);
    ++total;
    if (got == expected) ++passed;
    else ADD_FAILURE() << "text: " << nlohmann::json(text).dump() << "\nexpected " << nlohmann::json(expected).dump()
                       << "\ngot      " << nlohmann::json(got).dump();
    // Decoding gives the text back, NFC-normalized (only the combining-mark
    // line is not NFC already); re-encoding the decoded text is stable.
    const std::string back = tok.decode(got);
    if (text.rfind("Combining:", 0) != 0) {
      EXPECT_EQ(back, text);
    }
    EXPECT_EQ(tok.encode(back), got);
  }
  EXPECT_EQ(total, 200);
  std::printf("golden: %d of %d encodings equal the reference\n", passed, total);
}

TEST(BpeTokenizer, SpecialTokensAndRoundTrip) {
  const auto& tok = qwen3();
  EXPECT_EQ(tok.encode("<|im_start|>"), std::vector<TokenId>{151644});
  const std::string s = "x<|im_end|>\ny";
  auto ids = tok.encode(s);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids[1], 151645);
  EXPECT_EQ(tok.decode(ids), s);
  EXPECT_EQ(tok.token_string(tok.encode(" the").front()), "Ġthe");
}

TEST(BpeTokenizer, UnsupportedComponentsAreNamed) {
  auto expect_error = [](const std::string& json, const std::string& what) {
    try {
      BpeTokenizer::from_json(json, "t.json");
      ADD_FAILURE() << "accepted " << json;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("t.json"), std::string::npos) << e.what();
    }
  };
  expect_error("{not json", "not valid JSON");
  expect_error(R"({"normalizer":{"type":"Lowercase"},"pre_tokenizer":{"type":"ByteLevel"},"model":{"type":"BPE"}})",
               "unsupported normalizer 'Lowercase'");
  expect_error(R"({"pre_tokenizer":{"type":"Whitespace"},"model":{"type":"BPE"}})", "unsupported pre_tokenizer 'Whitespace'");
  expect_error(R"({"pre_tokenizer":{"type":"ByteLevel"},"model":{"type":"Unigram"}})", "unsupported model type 'Unigram'");
  expect_error(R"({"pre_tokenizer":{"type":"ByteLevel"},"decoder":{"type":"Metaspace"},"model":{"type":"BPE"}})",
               "unsupported decoder 'Metaspace'");
  expect_error(R"({"pre_tokenizer":{"type":"ByteLevel"},"model":{"type":"BPE","byte_fallback":true}})", "byte_fallback");
  expect_error(R"({"pre_tokenizer":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}})",
               "lacks the byte-level token");
  EXPECT_THROW(BpeTokenizer::from_file("/nonexistent/tokenizer.json"), UserError);
}

// Ids index dense tables, so they are bounded (< 2^24) before anything is
// sized by them: 2^40 was a std::bad_alloc naming nothing.
TEST(BpeTokenizer, HugeTokenIdsAreRefusedByName) {
  auto expect_error = [](const std::string& json, const std::string& what) {
    try {
      BpeTokenizer::from_json(json, "t.json");
      ADD_FAILURE() << "accepted " << json;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("t.json: " + what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("[0, 16777216)"), std::string::npos) << e.what();
    }
  };
  const std::string head = R"({"pre_tokenizer":{"type":"ByteLevel"},"model":{"type":"BPE","merges":[],"vocab":)";
  expect_error(head + R"({"a":1099511627776}}})", "model.vocab entry 'a' has id 1099511627776");
  expect_error(head + R"({"a":16777216}}})", "model.vocab entry 'a' has id 16777216");
  // Added tokens too (after a vocabulary that is otherwise complete).
  std::ifstream in(AGENTPERF_QWEN3_TOKENIZER_JSON);
  auto j = nlohmann::json::parse(in);
  ASSERT_TRUE(j["added_tokens"].is_array() && !j["added_tokens"].empty());
  j["added_tokens"][0]["id"] = 1099511627776LL;
  const std::string content = j["added_tokens"][0]["content"];
  expect_error(j.dump(), "added_tokens entry '" + content + "' has id 1099511627776");
  j["added_tokens"][0]["id"] = -3;
  expect_error(j.dump(), "added_tokens entry '" + content + "' has id -3");
}
