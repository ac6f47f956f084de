#include "net/openai_response.h"

#include <gtest/gtest.h>

using agentperf::RequestRecord;
using agentperf::net::OpenAIResponseParser;
using agentperf::net::SseParser;

namespace {
void feed(RequestRecord& rec, const std::string& stream) {
  OpenAIResponseParser oai(rec);
  SseParser sse;
  sse.feed(stream, [&](const agentperf::net::SseEvent& e) { oai.on_event(e); });
}
}  // namespace

TEST(OpenAIResponse, ChatStreamCountsContentAndReasoningAndUsage) {
  RequestRecord rec;
  feed(rec,
       "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
       "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n"
       "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n"
       "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" world\"},\"finish_reason\":\"stop\"}]}\n\n"
       "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":5,\"total_tokens\":17,"
       "\"prompt_tokens_details\":{\"cached_tokens\":8},\"completion_tokens_details\":{\"reasoning_tokens\":2}}}\n\n"
       "data: [DONE]\n\n");
  EXPECT_TRUE(rec.ok());
  EXPECT_TRUE(rec.saw_done);
  // The empty role-only chunk is not content; reasoning is.
  EXPECT_EQ(rec.content_ns.size(), 3u);
  EXPECT_EQ(rec.content_events, 2);
  EXPECT_EQ(rec.reasoning_events, 1);
  EXPECT_EQ(rec.usage_prompt_tokens, 12);
  EXPECT_EQ(rec.usage_completion_tokens, 5);
  EXPECT_EQ(rec.usage_cached_tokens, 8);
  EXPECT_EQ(rec.usage_reasoning_tokens, 2);
}

TEST(OpenAIResponse, VllmReasoningFieldCounts) {
  RequestRecord rec;
  feed(rec, "data: {\"choices\":[{\"delta\":{\"reasoning\":\"x\"}}]}\n\n");
  EXPECT_EQ(rec.reasoning_events, 1);
  EXPECT_EQ(rec.content_ns.size(), 1u);
}

TEST(OpenAIResponse, CompletionsTextStream) {
  RequestRecord rec;
  feed(rec, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: [DONE]\n\n");
  EXPECT_EQ(rec.content_events, 2);
  EXPECT_FALSE(rec.usage_prompt_tokens.has_value());
}

TEST(OpenAIResponse, SseErrorEventBecomes502) {
  RequestRecord rec;
  feed(rec, "data: {\"choices\":[{\"text\":\"a\"}]}\n\nevent: error\ndata: engine died\n\n");
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->code, 502);
  EXPECT_EQ(rec.error->type, "SSEResponseError");
  EXPECT_NE(rec.error->message.find("engine died"), std::string::npos);
}

TEST(OpenAIResponse, ErrorObjectInsideStream) {
  RequestRecord rec;
  feed(rec, "data: {\"error\":{\"message\":\"context length exceeded\",\"type\":\"BadRequestError\",\"code\":400}}\n\n");
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->code, 400);
  EXPECT_EQ(rec.error->type, "BadRequestError");
  EXPECT_EQ(rec.error->message, "context length exceeded");

  RequestRecord sglang;
  feed(sglang, "data: {\"object\":\"error\",\"message\":\"out of memory\",\"type\":\"InternalError\",\"code\":500}\n\n");
  ASSERT_FALSE(sglang.ok());
  EXPECT_EQ(sglang.error->code, 500);
  EXPECT_EQ(sglang.error->message, "out of memory");
}

TEST(OpenAIResponse, InvalidJsonIsAnError) {
  RequestRecord rec;
  feed(rec, "data: {not json\n\n");
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->type, "InvalidResponse");
  EXPECT_NE(rec.error->message.find("{not json"), std::string::npos);
}

TEST(OpenAIResponse, NonStreamedChatBody) {
  RequestRecord rec;
  OpenAIResponseParser oai(rec);
  std::string body =
      R"({"choices":[{"message":{"role":"assistant","content":"hi there"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}})";
  oai.on_body(body, 42);
  EXPECT_TRUE(rec.ok());
  ASSERT_EQ(rec.content_ns.size(), 1u);
  EXPECT_EQ(rec.content_ns[0], 42);
  EXPECT_EQ(rec.usage_completion_tokens, 2);
}

TEST(OpenAIResponse, HttpErrorUsesServerMessage) {
  auto e = OpenAIResponseParser::http_error(400, "Bad Request",
                                            R"({"object":"error","message":"max_tokens too large","code":400})");
  EXPECT_EQ(e.code, 400);
  EXPECT_EQ(e.type, "Bad Request");
  EXPECT_EQ(e.message, "HTTP 400: max_tokens too large");
  auto plain = OpenAIResponseParser::http_error(503, "Service Unavailable", "overloaded\n");
  EXPECT_EQ(plain.message, "HTTP 503 Service Unavailable: overloaded ");
}
