// --slice-duration's client-side time slices (metrics/timeslice_export.h),
// AIPerf's rules: slices from the earliest request start, a request in the
// slice its start falls in, empty slices left out, the last one cut at the
// latest request end and marked incomplete, each slice the aggregate's
// summaries over its own requests; and the CSV in AIPerf's long form.
#include "metrics/timeslice_export.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace agentperf;

namespace {
constexpr std::int64_t kWall = 1'700'000'000'000'000'000;

// Starts at start_ms, first token after ttft_ms, `tokens` tokens 10 ms apart.
RequestRecord streamed(std::int64_t start_ms, std::int64_t ttft_ms, int tokens = 3) {
  RequestRecord r;
  r.streamed = true;
  r.start_ns = start_ms * 1'000'000;
  r.start_wall_ns = kWall + r.start_ns;
  r.ack_ns = r.start_ns;
  for (int i = 0; i < tokens; ++i) r.content_ns.push_back(r.start_ns + (ttft_ms + i * 10) * 1'000'000);
  r.end_ns = r.content_ns.back();
  r.content_events = tokens;
  r.usage_prompt_tokens = 100;
  r.usage_completion_tokens = tokens;
  r.http_status = 200;
  return r;
}
}  // namespace

TEST(Timeslices, FollowAiperfsSlicingRules) {
  std::vector<RequestRecord> recs = {
      streamed(1000, 50),   // slice 0 [1.0 s, 3.0 s)
      streamed(2500, 150),  // slice 0
      streamed(3000, 70),   // slice 1 [3.0 s, 5.0 s): starts on the edge
      // nothing starts in [5.0 s, 7.0 s): that slice is left out
      streamed(7200, 90),   // slice 3 [7.0 s, 9.0 s), cut at the last end (7.31 s)
  };
  RequestRecord warm = streamed(0, 10);
  warm.phase = Phase::warmup;  // not profiled: not sliced (and not the slices' start)
  recs.push_back(warm);
  RequestRecord failed = streamed(4000, 10);
  failed.error = ErrorInfo{500, "ServerError", "boom"};
  recs.push_back(failed);

  const auto doc = client_timeslices(recs, 2.0, nlohmann::json{{"load", {{"concurrency", 2}}}});
  const auto& s = doc["timeslices"];
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0]["start_ns"], kWall + 1'000'000'000);
  EXPECT_EQ(s[0]["end_ns"], kWall + 3'000'000'000);
  EXPECT_FALSE(s[0].contains("is_complete"));
  EXPECT_EQ(s[0]["request_count"]["avg"], 2.0);
  EXPECT_DOUBLE_EQ(s[0]["time_to_first_token"]["avg"].get<double>(), 100.0);  // (50 + 150) / 2
  EXPECT_DOUBLE_EQ(s[0]["time_to_first_token"]["max"].get<double>(), 150.0);
  EXPECT_EQ(s[0]["time_to_first_token"]["unit"], "ms");
  EXPECT_EQ(s[1]["request_count"]["avg"], 1.0);  // the failed request at 4 s is not counted
  EXPECT_DOUBLE_EQ(s[1]["time_to_first_token"]["avg"].get<double>(), 70.0);
  EXPECT_EQ(s[2]["start_ns"], kWall + 7'000'000'000);
  EXPECT_EQ(s[2]["end_ns"], kWall + 7'310'000'000);  // 7.2 s + 90 ms + 2 x 10 ms
  EXPECT_EQ(s[2]["is_complete"], false);
  EXPECT_EQ(doc["input_config"]["load"]["concurrency"], 2);

  // The CSV: one row per slice, metric and statistic.
  const std::string csv = client_timeslices_csv(doc);
  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  EXPECT_EQ(header, "Timeslice,Metric,Unit,Stat,Value");
  EXPECT_NE(csv.find("\n0,time_to_first_token,ms,avg,100.00\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n2,time_to_first_token,ms,p50,90.00\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n1,request_count,requests,avg,1.00\n"), std::string::npos) << csv;

  // No profiled request: no slice.
  EXPECT_TRUE(client_timeslices({warm}, 2.0, nullptr)["timeslices"].empty());
}
