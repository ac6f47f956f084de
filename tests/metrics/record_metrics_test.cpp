#include "metrics/record_metrics.h"

#include <gtest/gtest.h>

using namespace agentperf;

namespace {
RequestRecord streamed_record() {
  RequestRecord r;
  r.streamed = true;
  r.start_ns = 1'000'000'000;
  r.ack_ns = r.start_ns + 1'000'000;
  // content at +100 ms, then every 20 ms, 6 events
  for (int i = 0; i < 6; ++i) r.content_ns.push_back(r.start_ns + 100'000'000 + i * 20'000'000);
  r.end_ns = r.content_ns.back() + 5'000'000;  // usage + [DONE] 5 ms later
  r.content_events = 6;
  r.requested_isl = 128;
  r.prompt_exact = true;
  r.scheduled_ns = r.start_ns - 2'000'000;
  return r;
}
}  // namespace

TEST(RecordMetrics, AiperfDefinitionsWithClientCounts) {
  auto r = streamed_record();
  auto m = compute_metrics(r);
  EXPECT_DOUBLE_EQ(*m.ttft_ms, 100.0);
  EXPECT_DOUBLE_EQ(*m.ttst_ms, 20.0);
  EXPECT_DOUBLE_EQ(*m.request_latency_ms, 200.0);  // last content, not stream end
  ASSERT_EQ(*m.osl, 6);
  EXPECT_EQ(m.osl_source, TokenSource::client_chunks);
  EXPECT_DOUBLE_EQ(*m.itl_ms, (200.0 - 100.0) / 5);
  EXPECT_DOUBLE_EQ(*m.full_itl_ms, (205.0 - 100.0) / 5);
  EXPECT_DOUBLE_EQ(*m.tokens_per_sec_per_user, 50.0);
  ASSERT_EQ(m.inter_chunk_ms.size(), 5u);
  EXPECT_DOUBLE_EQ(m.inter_chunk_ms[0], 20.0);
  EXPECT_EQ(*m.isl, 128);
  EXPECT_EQ(m.isl_source, TokenSource::client_exact);
  EXPECT_DOUBLE_EQ(*m.send_lateness_ms, 2.0);
  EXPECT_DOUBLE_EQ(*m.http_req_waiting_ms, 1.0);
}

TEST(RecordMetrics, ServerUsageWinsAndReasoningCountsInOsl) {
  auto r = streamed_record();
  r.usage_prompt_tokens = 130;
  r.usage_completion_tokens = 11;  // the server batched several tokens per event
  r.usage_reasoning_tokens = 3;
  auto m = compute_metrics(r);
  EXPECT_EQ(*m.isl, 130);
  EXPECT_EQ(m.isl_source, TokenSource::server_usage);
  EXPECT_EQ(*m.osl, 11);
  EXPECT_EQ(*m.output_token_count, 8);
  EXPECT_EQ(*m.reasoning_token_count, 3);
  EXPECT_DOUBLE_EQ(*m.itl_ms, 100.0 / 10);
}

TEST(RecordMetrics, SingleTokenHasNoItl) {
  auto r = streamed_record();
  r.content_ns.resize(1);
  r.content_events = 1;
  auto m = compute_metrics(r);
  EXPECT_TRUE(m.ttft_ms.has_value());
  EXPECT_FALSE(m.itl_ms.has_value());
  EXPECT_FALSE(m.ttst_ms.has_value());
}

TEST(RecordMetrics, ErrorRecordsKeepOnlyInputSide) {
  auto r = streamed_record();
  r.error = ErrorInfo{500, "Internal Server Error", "boom"};
  auto m = compute_metrics(r);
  EXPECT_FALSE(m.ttft_ms.has_value());
  EXPECT_EQ(*m.isl, 128);
}
