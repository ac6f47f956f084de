#include "metrics/record_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "metrics/export.h"

using namespace agentperf;

namespace {
// Records covering every optional part of a line: streamed and not, errors
// with and without codes, warnings, retries, server timings, odd strings.
std::vector<RequestRecord> varied_records() {
  std::vector<RequestRecord> out;
  std::mt19937_64 rng(7);
  const std::vector<std::string> strings = {"",
                                            "plain-id-123",
                                            "quote\" and \\ backslash",
                                            "tab\tnew\nline\r\x01\x1f",
                                            "utf8 caf\xc3\xa9 \xe2\x9c\x93",
                                            "broken \xc3 utf8 \xff\xfe end",
                                            "del \x7f char"};
  for (int i = 0; i < 400; ++i) {
    RequestRecord r;
    r.request_index = i;
    r.x_request_id = strings[rng() % strings.size()];
    r.x_correlation_id = strings[rng() % strings.size()];
    r.conversation_id = std::to_string(i);
    r.session_num = static_cast<std::int64_t>(rng() % 1000);
    r.turn_index = static_cast<int>(rng() % 7);
    if (rng() % 2) r.root_correlation_id = strings[rng() % strings.size()];
    if (rng() % 3 == 0) {
      r.agent_depth = 1;
      r.parent_correlation_id = strings[rng() % strings.size()];
    }
    r.worker_id = static_cast<int>(rng() % 64);
    r.phase = rng() % 5 ? Phase::profiling : Phase::warmup;
    r.start_ns = 1'000'000'000 + static_cast<std::int64_t>(rng() % 1'000'000'000);
    r.start_wall_ns = 1'700'000'000'000'000'000 + static_cast<std::int64_t>(rng() % 1'000'000'000);
    r.credit_issued_ns = r.start_ns - static_cast<std::int64_t>(rng() % 1000);
    r.scheduled_ns = rng() % 2 ? r.credit_issued_ns : 0;
    r.ack_ns = rng() % 4 ? r.start_ns + static_cast<std::int64_t>(rng() % 5'000'000) : 0;
    r.streamed = rng() % 4 != 0;
    const int events = static_cast<int>(rng() % 200);
    std::int64_t t = r.start_ns + 1'000'000;
    for (int k = 0; k < events; ++k) r.content_ns.push_back(t += static_cast<std::int64_t>(rng() % 30'000'000) + 1);
    r.content_events = events;
    r.end_ns = t + static_cast<std::int64_t>(rng() % 100'000);
    r.http_status = rng() % 6 ? 200 : 500;
    r.requested_isl = static_cast<std::int64_t>(rng() % 300'000);
    r.requested_osl = static_cast<std::int64_t>(rng() % 2000);
    if (rng() % 3) r.usage_prompt_tokens = static_cast<std::int64_t>(rng() % 300'000);
    if (rng() % 3) r.usage_completion_tokens = events + static_cast<std::int64_t>(rng() % 3);
    if (rng() % 3) r.usage_cached_tokens = static_cast<std::int64_t>(rng() % 1000);
    if (rng() % 5 == 0) {
      r.was_cancelled = true;
      r.cancellation_ns = r.end_ns;
    }
    if (rng() % 7 == 0) {
      r.retries = 1;
      r.retry_start_ns = r.start_ns + 1000;
    }
    if (rng() % 5 == 0) r.warning = strings[rng() % strings.size()];
    if (rng() % 6 == 0) r.burst_events = static_cast<int>(rng() % 50);
    if (rng() % 4 == 0) {
      ServerTimings st;
      if (rng() % 2) st.prompt_n = static_cast<std::int64_t>(rng() % 5000);
      if (rng() % 2) st.prompt_ms = std::ldexp(static_cast<double>(rng() % 100000), -static_cast<int>(rng() % 40));
      if (rng() % 2) st.predicted_n = 17;
      if (rng() % 2) st.predicted_ms = rng() % 2 ? 1e17 : (rng() % 2 ? std::numeric_limits<double>::quiet_NaN() : 0.1);
      if (rng() % 2) st.cache_n = 0;
      r.server_timings = st;
    }
    if (r.http_status != 200 || rng() % 8 == 0)
      r.error = ErrorInfo{rng() % 2 ? std::optional<int>(r.http_status) : std::nullopt, strings[rng() % strings.size()],
                          strings[rng() % strings.size()]};
    out.push_back(std::move(r));
  }
  return out;
}
}  // namespace

// The line is what nlohmann's dump would write for its content: parsing it
// and dumping the DOM gives the same bytes (number spelling, escapes,
// replaced invalid UTF-8, key order). Before the DOM was dropped from the
// write path, this set was also checked byte for byte against the DOM-built
// line.
TEST(RecordJson, LineIsTheCanonicalDumpOfItsContent) {
  for (const auto& r : varied_records()) {
    std::string line;
    append_record_json_line(line, r);
    ASSERT_EQ(line, dump_json_line(nlohmann::ordered_json::parse(line))) << line;
  }
}

// Odd values keep their meaning: non-finite doubles are null, invalid UTF-8
// becomes U+FFFD, control characters are escaped, and a line is appended
// after what the buffer already holds.
TEST(RecordJson, OddValuesAndAppending) {
  RequestRecord r;
  r.x_request_id = "a\"b\x01";
  r.error = ErrorInfo{502, "SSE", "bad \xff byte"};
  ServerTimings st;
  st.prompt_ms = std::numeric_limits<double>::infinity();
  st.predicted_ms = 2.0;
  r.server_timings = st;
  std::string line = "prefix\n";
  append_record_json_line(line, r);
  ASSERT_EQ(line.rfind("prefix\n", 0), 0u);
  const auto j = nlohmann::json::parse(line.substr(7));
  EXPECT_EQ(j["metadata"]["x_request_id"], "a\"b\x01");
  EXPECT_TRUE(j["metadata"]["server_timings"]["prompt_ms"].is_null());
  EXPECT_EQ(line.find("\"predicted_ms\":2.0"), line.find("predicted_ms") - 1) << line;
  EXPECT_EQ(j["error"]["message"], "bad \xef\xbf\xbd byte");
  EXPECT_EQ(j["error"]["code"], 502);
  EXPECT_NE(line.find("\\u0001"), std::string::npos) << line;
}
