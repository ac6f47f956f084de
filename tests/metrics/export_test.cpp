#include "metrics/export.h"

#include <unistd.h>

#include "common/error.h"

#include <gtest/gtest.h>

#include <cstdio>

#include <filesystem>
#include <fstream>

using namespace agentperf;

namespace {
RequestRecord ok_record(std::int64_t start_ms, std::int64_t ttft_ms, int tokens, std::int64_t itl_ms) {
  RequestRecord r;
  r.streamed = true;
  r.start_ns = start_ms * 1'000'000;
  r.start_wall_ns = 1'700'000'000'000'000'000 + r.start_ns;
  r.ack_ns = r.start_ns + 1'000'000;
  for (int i = 0; i < tokens; ++i) r.content_ns.push_back(r.start_ns + (ttft_ms + i * itl_ms) * 1'000'000);
  r.end_ns = r.content_ns.back();
  r.content_events = tokens;
  r.usage_prompt_tokens = 100;
  r.usage_completion_tokens = tokens;
  r.usage_cached_tokens = 40;
  r.http_status = 200;
  return r;
}
}  // namespace

TEST(Export, RecordLineHasAiperfShape) {
  auto r = ok_record(0, 50, 3, 10);
  r.x_request_id = "rid";
  auto j = record_to_json(r);
  EXPECT_EQ(j["metadata"]["x_request_id"], "rid");
  EXPECT_EQ(j["metadata"]["benchmark_phase"], "profiling");
  EXPECT_EQ(j["metadata"]["request_start_ns"], r.start_wall_ns);
  EXPECT_EQ(j["metadata"]["request_end_ns"], r.start_wall_ns + 70'000'000);
  EXPECT_DOUBLE_EQ(j["metrics"]["time_to_first_token"]["value"].get<double>(), 50.0);
  EXPECT_EQ(j["metrics"]["time_to_first_token"]["unit"], "ms");
  EXPECT_DOUBLE_EQ(j["metrics"]["inter_token_latency"]["value"].get<double>(), 10.0);
  EXPECT_EQ(j["metrics"]["input_sequence_length"]["value"], 100);
  EXPECT_EQ(j["metrics"]["usage_prompt_cache_read_tokens"]["value"], 40);
  EXPECT_EQ(j["metrics"]["inter_chunk_latency"]["value"].size(), 2u);
  EXPECT_TRUE(j["error"].is_null());
}

TEST(Export, ErrorRecordLine) {
  RequestRecord r;
  r.requested_isl = 64;
  r.error = ErrorInfo{std::nullopt, "ConnectionError", "refused"};
  auto j = record_to_json(r);
  EXPECT_TRUE(j["error"]["code"].is_null());
  EXPECT_EQ(j["error"]["type"], "ConnectionError");
  EXPECT_EQ(j["metrics"]["error_isl"]["value"], 64);
  EXPECT_FALSE(j["metrics"].contains("time_to_first_token"));
}

// One completed request has no rate: the throughput keys are absent and the
// summary says n/a (it once printed 1 / latency, hundreds of req/s).
TEST(Export, ThroughputNeedsTwoRequests) {
  std::vector<RequestRecord> recs = {ok_record(0, 100, 11, 10)};
  RunResult run;
  AggregateInputs in;
  in.run = &run;
  auto agg = build_aggregate(recs, in);
  EXPECT_DOUBLE_EQ(agg["request_count"]["avg"].get<double>(), 1);
  EXPECT_FALSE(agg.contains("request_throughput"));
  EXPECT_FALSE(agg.contains("output_token_throughput"));
  char buf[8192] = {};
  std::FILE* f = fmemopen(buf, sizeof buf - 1, "w");
  print_summary(agg, f);
  std::fclose(f);
  EXPECT_NE(std::string(buf).find("Throughput: n/a (fewer than two requests completed)"), std::string::npos) << buf;
}

TEST(Export, AggregateStatsThroughputAndErrors) {
  std::vector<RequestRecord> recs;
  recs.push_back(ok_record(0, 100, 11, 10));     // ends at 200 ms
  recs.push_back(ok_record(100, 300, 11, 10));   // ends at 500 ms
  auto warm = ok_record(0, 10, 2, 1);
  warm.phase = Phase::warmup;
  recs.push_back(warm);
  RequestRecord err;
  err.error = ErrorInfo{503, "Service Unavailable", "HTTP 503"};
  recs.push_back(err);
  recs.push_back(err);
  RunResult run;
  AggregateInputs in;
  in.run = &run;
  in.input_config = {{"k", 1}};
  auto agg = build_aggregate(recs, in);
  EXPECT_DOUBLE_EQ(agg["time_to_first_token"]["avg"].get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(agg["time_to_first_token"]["p50"].get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(agg["time_to_first_token"]["p90"].get<double>(), 280.0);
  EXPECT_EQ(agg["time_to_first_token"]["count"], 2);
  EXPECT_DOUBLE_EQ(agg["request_count"]["avg"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(agg["error_request_count"]["avg"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(agg["warmup_request_count"]["avg"].get<double>(), 1);
  // duration = last end (500 ms) - first start (0)
  EXPECT_DOUBLE_EQ(agg["benchmark_duration"]["avg"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(agg["request_throughput"]["avg"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(agg["output_token_throughput"]["avg"].get<double>(), 22 / 0.5);
  EXPECT_DOUBLE_EQ(agg["total_token_throughput"]["avg"].get<double>(), 222 / 0.5);
  EXPECT_DOUBLE_EQ(agg["total_usage_prompt_cache_read_tokens"]["avg"].get<double>(), 80);
  ASSERT_EQ(agg["error_summary"].size(), 1u);
  EXPECT_EQ(agg["error_summary"][0]["count"], 2);
  EXPECT_EQ(agg["error_summary"][0]["error_details"]["code"], 503);
  EXPECT_EQ(agg["input_config"]["k"], 1);
  EXPECT_TRUE(agg["complete"].get<bool>());
}

TEST(Export, FilesAreWrittenWhole) {
  const auto dir = std::filesystem::temp_directory_path() / ("agentperf_export_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<RequestRecord> recs = {ok_record(0, 10, 3, 1), ok_record(1, 10, 3, 1)};
  write_profile_jsonl(dir / "profile_export.jsonl", recs);
  std::ifstream in(dir / "profile_export.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_TRUE(j.contains("metadata"));
    ++lines;
  }
  EXPECT_EQ(lines, 2);
  EXPECT_FALSE(std::filesystem::exists(dir / "profile_export.jsonl.partial"));
  EXPECT_THROW(write_json_file(dir / "missing-dir" / "x.json", nlohmann::ordered_json::object()), UserError);
  std::filesystem::remove_all(dir);
}

#include "metrics/prometheus_text.h"

TEST(PrometheusText, ParsesGaugesCountersLabelsAndSkipsBuckets) {
  const char* text =
      "# HELP sglang:num_running_reqs Running\n"
      "# TYPE sglang:num_running_reqs gauge\n"
      "sglang:num_running_reqs{model_name=\"m\"} 3\n"
      "sglang:cached_tokens_total{model_name=\"m\",cache_source=\"device\"} 100\n"
      "sglang:cached_tokens_total{model_name=\"m\",cache_source=\"host\"} 20 1700000000000\n"
      "sglang:ttft_seconds_bucket{le=\"0.1\"} 5\n"
      "vllm:gpu_cache_usage_perc 0.5\r\n"
      "broken{label=\"x} 1\n"
      "weird_value{a=\"b\"} abc\n";
  std::size_t bad = 0;
  auto samples = parse_prometheus_text(text, &bad);
  EXPECT_EQ(bad, 2u);
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_EQ(samples[1].labels.at("cache_source"), "device");
  auto sums = sum_by_name(samples);
  EXPECT_DOUBLE_EQ(sums["sglang:cached_tokens_total"], 120);
  EXPECT_DOUBLE_EQ(sums["sglang:num_running_reqs"], 3);
  EXPECT_DOUBLE_EQ(sums["vllm:gpu_cache_usage_perc"], 0.5);
  EXPECT_FALSE(sums.count("sglang:ttft_seconds_bucket"));
}
