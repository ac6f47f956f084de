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

// Every aggregate says what its run was: the fields its producer set, and
// no others (an unknown field is absent, not a guess).
TEST(Export, AggregateCarriesTheRunDescription) {
  std::vector<RequestRecord> recs = {ok_record(0, 100, 11, 10)};
  RunResult run;
  AggregateInputs in;
  in.run = &run;
  in.cli_command = "agentperf sim predict -c 8";
  in.description.kind = "predicted";
  in.description.model = "qwen3-8b";
  in.description.tp = 2;
  in.description.time_scale = 1.0;
  auto agg = build_aggregate(recs, in);
  const auto& d = agg["run_description"];
  EXPECT_EQ(d["kind"], "predicted");
  EXPECT_EQ(d["model"], "qwen3-8b");
  EXPECT_EQ(d["tp"], 2);
  EXPECT_EQ(d["command_line"], "agentperf sim predict -c 8");  // from cli_command
  EXPECT_FALSE(d.contains("hardware"));
  EXPECT_FALSE(d.contains("engine"));
  EXPECT_FALSE(d.contains("concurrency"));
  EXPECT_EQ(d["date"].get<std::string>().size(), std::string("2026-01-01T00:00:00.000000").size());
  EXPECT_FALSE(d["agentperf_version"].get<std::string>().empty());
  // What the report reads back is what was written.
  const RunDescription back = RunDescription::from_json(nlohmann::json::parse(d.dump()));
  EXPECT_EQ(back.kind, "predicted");
  EXPECT_EQ(back.tp, 2);
  EXPECT_EQ(back.time_scale, 1.0);
  EXPECT_FALSE(back.hardware.has_value());
  EXPECT_EQ(back.date, d["date"].get<std::string>());
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

// ---------------------------------------------------------------------------
// Aggregates and exports, each value derived by hand from the upstream code:
// InferenceX = github.com/SemiAnalysisAI/InferenceX @ 843c6254ff69,
// utils/agentic/aggregation/; AIPerf = the SemiAnalysis AIPerf fork pinned by
// InferenceX (metric classes named in each test).

#include "metrics/inferencex_aggregate.h"
#include "metrics/inferencex_server_metrics.h"
#include "metrics/server_metrics_export.h"
#include "replay/replay_outputs.h"
#include "trace/weka_trace.h"

namespace {
constexpr std::int64_t kBaseWall = 1'700'000'000'000'000'000;
// A streamed success from start_ms to end_ms (wall = kBaseWall + ms), `osl`
// content events evenly spread after a 100 ms TTFT, ISL 1000 from usage.
RequestRecord span_record(std::int64_t start_ms, std::int64_t end_ms, int osl, const std::string& conv = "tr",
                          int turn = 0) {
  RequestRecord r;
  r.streamed = true;
  r.start_ns = start_ms * 1'000'000;
  r.start_wall_ns = kBaseWall + r.start_ns;
  const std::int64_t first = r.start_ns + 100'000'000, last = end_ms * 1'000'000;
  for (int i = 0; i < osl; ++i) r.content_ns.push_back(osl == 1 ? last : first + (last - first) * i / (osl - 1));
  r.end_ns = last;
  r.content_events = osl;
  r.usage_prompt_tokens = 1000;
  r.usage_completion_tokens = osl;
  r.http_status = 200;
  r.conversation_id = conv;
  r.turn_index = turn;
  return r;
}
}  // namespace

// request_metrics.py compute_qps_stats: windows [e0, e0+1), [e0+1, e0+2), ...
// while current + 1 <= last end; the partial tail window is dropped. Ends at
// 0.2, 0.7, 1.45, 2.7 s: windows [0.2,1.2) = 2, [1.2,2.2) = 1, and [2.2,3.2)
// is not full.
// -> samples 2, mean 1.5, p50 = 1 + 0.5 * (2 - 1) = 1.5, p75 1.75, p90 1.9,
// p95 1.95, pstdev 0.5. Keys are flat (no "stats" object).
TEST(InferenceXAggregate, QpsCountsFullWindowsOnly) {
  std::vector<RequestRecord> recs = {span_record(0, 200, 5), span_record(0, 700, 5), span_record(0, 1450, 5),
                                     span_record(0, 2700, 5)};
  auto ix = inferencex_aggregate(recs, {});
  const auto& q = ix.request_metrics["qps"];
  EXPECT_EQ(q["samples"].get<int>(), 2);
  EXPECT_DOUBLE_EQ(q["window_seconds"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(q["mean"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(q["p50"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(q["p75"].get<double>(), 1.75);
  EXPECT_DOUBLE_EQ(q["p90"].get<double>(), 1.9);
  EXPECT_DOUBLE_EQ(q["p95"].get<double>(), 1.95);
  EXPECT_DOUBLE_EQ(q["std"].get<double>(), 0.5);
  EXPECT_FALSE(q.contains("stats"));
  // Under one full window: {"window_seconds": 1.0, "samples": 0, "mean": n / duration}.
  auto short_run = inferencex_aggregate({span_record(0, 200, 5), span_record(0, 700, 5)}, {});
  EXPECT_EQ(short_run.request_metrics["qps"]["samples"].get<int>(), 0);
  EXPECT_DOUBLE_EQ(short_run.request_metrics["qps"]["mean"].get<double>(), 2 / 0.5);
  // Fewer than two records: {}.
  EXPECT_TRUE(inferencex_aggregate({span_record(0, 200, 5)}, {}).request_metrics["qps"].empty());
}

// compute_throughput_stats: duration_seconds = (max request_end_ns - min
// request_start_ns) / 1e9 = (2.0 - 0) s; tokens/s = sum / duration;
// per_gpu only in build_agg (num_gpus = TP * PP_SIZE * PCP_SIZE = 2).
// compute_workload_stats: tokens.output_expected from the trace's top-level
// `out` by (conversation_id before "::", turn_index) — also for a subagent
// record; an empty block is {} (stats_for / _distribution of nothing).
TEST(InferenceXAggregate, ThroughputDurationSecondsAndExpectedOutput) {
  std::vector<RequestRecord> recs = {span_record(0, 1000, 10, "tr", 0), span_record(500, 2000, 30, "tr::sa:a1", 1)};
  ExpectedOutputs expected = {{"tr", {12, 40}}};
  InferenceXInputs in;
  in.expected_outputs = &expected;
  auto ix = inferencex_aggregate(recs, in);
  const auto& tp = ix.request_metrics["throughput"];
  EXPECT_DOUBLE_EQ(tp["duration_seconds"].get<double>(), 2.0);
  EXPECT_FALSE(tp.contains("duration_s"));
  EXPECT_DOUBLE_EQ(tp["input"]["tokens_per_second"].get<double>(), 2000 / 2.0);
  EXPECT_DOUBLE_EQ(tp["output"]["tokens_per_second"].get<double>(), 40 / 2.0);
  EXPECT_DOUBLE_EQ(tp["total"]["tokens_per_second"].get<double>(), 2040 / 2.0);
  EXPECT_TRUE(tp["per_gpu"].empty());
  const auto& tok = ix.request_metrics["tokens"];
  EXPECT_EQ(tok["output_expected"]["mean"].get<std::int64_t>(), 26);  // (12 + 40) / 2, an exact int mean stays int
  EXPECT_TRUE(tok["output_expected"]["mean"].is_number_integer());
  EXPECT_DOUBLE_EQ(tok["output_expected"]["p90"].get<double>(), 12 + 0.9 * 28);
  EXPECT_DOUBLE_EQ(tok["output_actual"]["mean"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(tok["input"]["std"].get<double>(), 0.0);
  // Without trace metadata: {} (InferenceX with no HF cache).
  EXPECT_TRUE(inferencex_aggregate(recs, {}).request_metrics["tokens"]["output_expected"].empty());
  InferenceXEnv env = {{"KV_OFFLOADING", "none"}, {"TP", "2"}, {"CONC", "8"}};
  auto file = inferencex_result(ix, nlohmann::ordered_json::object(), env);
  EXPECT_EQ(file["request_metrics"]["throughput"]["per_gpu"]["total_tput_tps"].get<double>(), 510.0);
  EXPECT_EQ(file["request_metrics"]["throughput"]["per_gpu"]["total_tput_tps"].dump(), "510");  // round_floats: int
}

// aggregation_common.round_floats: round(x, 5), an integral result >= 1 an int.
TEST(InferenceXAggregate, RoundFloatsAsPython) {
  nlohmann::ordered_json j = {{"a", 1.234564999}, {"b", 2.0000001}, {"c", 0.5}, {"d", 1e-7}, {"e", {3.000004, 7}},
                              {"f", 2.000025}, {"g", 1.000015}, {"h", 3.999995}};
  auto r = inferencex_round_floats(j);
  EXPECT_DOUBLE_EQ(r["a"].get<double>(), 1.23456);
  EXPECT_TRUE(r["b"].is_number_integer());
  EXPECT_EQ(r["b"].get<int>(), 2);
  EXPECT_DOUBLE_EQ(r["c"].get<double>(), 0.5);
  EXPECT_TRUE(r["d"].is_number_float());
  EXPECT_EQ(r["d"].get<double>(), 0.0);
  EXPECT_TRUE(r["e"][0].is_number_integer());
  // Python rounds the exact binary value: 2.000025 is 2.0000249999... -> 2.00002,
  // 1.000015 is 1.0000150000...098 -> 1.00002, 3.999995 -> 4.0 -> the int 4.
  EXPECT_EQ(r["f"].get<double>(), 2.00002);
  EXPECT_EQ(r["g"].get<double>(), 1.00002);
  EXPECT_TRUE(r["h"].is_number_integer());
}

// process_agentic_result.build_agg: the top-level keys in order, from the
// environment; KV_OFFLOADING is required (InferenceX exits without it).
TEST(InferenceXAggregate, ResultFileFromEnvironment) {
  std::vector<RequestRecord> recs = {span_record(0, 1000, 10), span_record(0, 2000, 10)};
  auto warm = span_record(0, 100, 1);
  warm.phase = Phase::warmup;
  recs.push_back(warm);
  RequestRecord err = span_record(0, 300, 1);
  err.error = ErrorInfo{500, "", "Internal: boom"};
  recs.push_back(err);
  auto ix = inferencex_aggregate(recs, {});
  nlohmann::ordered_json aggregate = {{"metadata", {{"dataset", {{"name", "semianalysis_cc_traces_weka_062126"}}}}}};
  InferenceXEnv env = {{"KV_OFFLOADING", "none"}, {"RUNNER_TYPE", "h200"}, {"CONC", "16"}, {"TP", "4"},
                       {"EP_SIZE", "2"}, {"FRAMEWORK", "sglang"}, {"PRECISION", "fp8"}, {"DISAGG", "false"}};
  auto f = inferencex_result(ix, aggregate, env);
  std::vector<std::string> keys;
  for (const auto& [k, v] : f.items()) keys.push_back(k);
  const std::vector<std::string> want = {"hw", "conc", "image", "recipe_fingerprint", "model", "infmax_model_prefix",
                                         "framework", "precision", "spec_decoding", "disagg", "scenario_type",
                                         "is_multinode", "tp", "ep", "dp_attention", "kv_offloading",
                                         "kv_offload_backend", "allocated_cpu_dram_gb", "num_requests_total",
                                         "num_requests_successful", "request_accounting", "pp", "dcp_size", "pcp_size",
                                         "dataset", "request_metrics", "server_metrics", "kv_cache_pool_tokens",
                                         "warnings"};
  EXPECT_EQ(keys, want);
  EXPECT_EQ(f["hw"], "h200");
  EXPECT_EQ(f["conc"], 16);
  EXPECT_EQ(f["tp"], 4);
  EXPECT_EQ(f["ep"], 2);
  EXPECT_EQ(f["spec_decoding"], "none");
  EXPECT_EQ(f["scenario_type"], "agentic-coding");
  EXPECT_EQ(f["dp_attention"], "false");
  EXPECT_EQ(f["num_requests_total"], 4);
  EXPECT_EQ(f["num_requests_successful"], 2);
  // _error_category: "type" is empty, so the code, as a string.
  EXPECT_EQ(f["request_accounting"]["error_categories"]["500"], 1);
  EXPECT_EQ(f["request_accounting"]["records_warmup_dropped"], 1);
  EXPECT_EQ(f["request_accounting"]["records_dropped_total"], 2);
  EXPECT_EQ(f["server_metrics"]["present"], false);
  EXPECT_EQ(f["server_metrics"]["tokens"]["prompt_total"], 2000);  // apply_profile_totals
  EXPECT_EQ(f["warnings"][0], "server_metrics_export.json missing or empty");
  EXPECT_TRUE(f["request_metrics"]["cache"]["theoretical_cache_hit_rate"].is_null());
  EXPECT_THROW(inferencex_result(ix, aggregate, {{"TP", "1"}}), std::invalid_argument);
  EXPECT_THROW(inferencex_result(ix, aggregate, {{"KV_OFFLOADING", "cpu"}}), std::invalid_argument);
  InferenceXEnv off = {{"KV_OFFLOADING", "cpu"}, {"KV_OFFLOAD_BACKEND", "lmcache"},
                       {"KV_OFFLOAD_BACKEND_METADATA", R"({"name":"lmcache","version":"0.3"})"}};
  EXPECT_EQ(inferencex_result(ix, aggregate, off)["kv_offload_backend"]["version"], "0.3");
}

// Observed hit from the engine's Prometheus counters (backends/sglang.py):
// overall = sum(sglang:cached_tokens) / sum(sglang:prompt_tokens) =
// (600 + 200) / 1000 = 0.8, gpu = 600 / 1000, cpu = external = 200 / 1000.
// vllm.py: gpu = prefix_cache_hits / prefix_cache_queries = 30 / 120, and
// overall = gpu without prompt_tokens_by_source. No cached-token counter and
// no usage cached tokens: n/a (null), never 0.
TEST(InferenceXAggregate, ObservedHitFromPrometheusCountersOrNa) {
  auto counter = [](double total, nlohmann::json labels = nullptr) {
    return nlohmann::json{{"endpoint_url", "http://x/metrics"}, {"labels", labels}, {"stats", {{"total", total}}}};
  };
  nlohmann::json sg = {{"metrics",
                        {{"sglang:prompt_tokens", {{"type", "counter"}, {"series", {counter(1000)}}}},
                         {"sglang:cached_tokens",
                          {{"type", "counter"},
                           {"series", {counter(600, {{"cache_source", "device"}}), counter(200, {{"cache_source", "host"}})}}}}}}};
  auto s = inferencex_server_metrics(sg, "sglang", {}, {}, 0);
  ASSERT_TRUE(s.overall_cache_hit_rate.has_value());
  EXPECT_DOUBLE_EQ(*s.overall_cache_hit_rate, 0.8);
  EXPECT_EQ(s.nested["adapter"], "sglang");
  EXPECT_DOUBLE_EQ(s.nested["cache"]["gpu_cache_hit_rate"].get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(s.nested["cache"]["external_cache_hit_rate"].get<double>(), 0.2);
  EXPECT_EQ(s.nested["tokens"]["prompt_total"], 1000);

  nlohmann::json vl = {{"metrics",
                        {{"vllm:prefix_cache_hits", {{"series", {counter(30)}}}},
                         {"vllm:prefix_cache_queries", {{"series", {counter(120)}}}}}}};
  auto v = inferencex_server_metrics(vl, "vllm", {}, {}, 0);
  EXPECT_DOUBLE_EQ(*v.overall_cache_hit_rate, 0.25);

  // Through the aggregate: Prometheus wins over usage cached tokens.
  std::vector<RequestRecord> recs = {span_record(0, 1000, 10), span_record(0, 2000, 10)};
  recs[0].usage_cached_tokens = 500;
  InferenceXInputs in;
  in.server_metrics = &sg;
  auto ix = inferencex_aggregate(recs, in);
  EXPECT_DOUBLE_EQ(*ix.headline.observed_cache_hit, 0.8);
  EXPECT_EQ(ix.json["cache"]["observed_cache_hit_source"], "prometheus");
  // Only an engine without cached tokens (llama.cpp's counters): n/a.
  nlohmann::json llama = {{"metrics", {{"llamacpp:prompt_tokens_total", {{"series", {counter(2000)}}}}}}};
  std::vector<RequestRecord> plain = {span_record(0, 1000, 10), span_record(0, 2000, 10)};
  in.server_metrics = &llama;
  auto none = inferencex_aggregate(plain, in);
  EXPECT_FALSE(none.headline.observed_cache_hit.has_value());
  EXPECT_TRUE(none.json["cache"]["observed_cache_hit_rate"].is_null());
  EXPECT_EQ(none.server_metrics["adapter"], "none");
  EXPECT_FALSE(none.warnings.empty());
}

// AIPerf's server_metrics_export.json: a counter family (# TYPE x counter,
// sample x_total) under its family name, stats.total = its increase over the
// window: baseline the last scrape at or before the start (100), end the
// first scrape at or after the end (350) -> 250, rate 250 / 2 s. InferenceX's
// required-prefix check greps the JSON for "\"sglang:"; the CSV is not empty.
TEST(ServerMetricsExport, CountersAreWindowDeltasUnderFamilyNames) {
  ServerMetricsLog log("http://localhost:30000/metrics");
  auto text = [](int prompt, double usage) {
    return "# HELP sglang:prompt_tokens Prompt tokens\n# TYPE sglang:prompt_tokens counter\n"
           "sglang:prompt_tokens_total{model_name=\"m\"} " + std::to_string(prompt) + "\n"
           "sglang:prompt_tokens_created{model_name=\"m\"} 1.7e9\n"
           "# TYPE sglang:token_usage gauge\nsglang:token_usage{model_name=\"m\"} " + std::to_string(usage) + "\n";
  };
  const std::int64_t s = 1'000'000'000;
  log.add_scrape(1 * s, text(50, 0.1));
  log.add_scrape(2 * s, text(100, 0.2));   // at the window start: the baseline
  log.add_scrape(3 * s, text(300, 0.4));
  log.add_scrape(4 * s, text(350, 0.6));   // the final scrape, at the end
  auto j = log.export_json(2 * s, 4 * s, "bid");
  ASSERT_TRUE(j["metrics"].contains("sglang:prompt_tokens"));
  EXPECT_FALSE(j["metrics"].contains("sglang:prompt_tokens_total"));
  EXPECT_FALSE(j["metrics"].contains("sglang:prompt_tokens_created"));
  const auto& c = j["metrics"]["sglang:prompt_tokens"];
  EXPECT_EQ(c["type"], "counter");
  EXPECT_DOUBLE_EQ(c["series"][0]["stats"]["total"].get<double>(), 250);
  EXPECT_DOUBLE_EQ(c["series"][0]["stats"]["rate"].get<double>(), 125);
  EXPECT_EQ(c["series"][0]["labels"]["model_name"], "m");
  const auto& g = j["metrics"]["sglang:token_usage"]["series"][0]["stats"];
  EXPECT_DOUBLE_EQ(g["max"].get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(g["avg"].get<double>(), 0.4);  // samples 0.2, 0.4, 0.6 in [2 s, 4 s]
  EXPECT_NE(j.dump().find("\"sglang:"), std::string::npos);
  const std::string csv = log.export_csv(2 * s, 4 * s, "bid");
  EXPECT_NE(csv.find("Endpoint,Type,Metric,Unit,total,rate"), std::string::npos) << csv;
  EXPECT_NE(csv.find("localhost:30000,counter,sglang:prompt_tokens,,250.0000,125.0000"), std::string::npos) << csv;
  // A restarted counter counts from 0 (here +20 after the drop).
  ServerMetricsLog reset("http://h/metrics");
  reset.add_scrape(1 * s, text(100, 0));
  reset.add_scrape(2 * s, text(20, 0));
  EXPECT_DOUBLE_EQ(reset.export_json(0, 0, "")["metrics"]["sglang:prompt_tokens"]["series"][0]["stats"]["total"].get<double>(),
                   20);
  // `# TYPE x_total counter` (as agentperf's simulator writes it) is family x too.
  ServerMetricsLog total("http://h/metrics");
  for (int v : {10, 30})
    total.add_scrape(v * s, "# TYPE sglang:cached_tokens_total counter\nsglang:cached_tokens_total{cache_source=\"device\"} " +
                                std::to_string(v) + "\n");
  auto tj = total.export_json(0, 0, "");
  ASSERT_TRUE(tj["metrics"].contains("sglang:cached_tokens")) << tj.dump();
  EXPECT_EQ(tj["metrics"]["sglang:cached_tokens"]["type"], "counter");
  EXPECT_DOUBLE_EQ(tj["metrics"]["sglang:cached_tokens"]["series"][0]["stats"]["total"].get<double>(), 20);
  // The sglang adapter reads it back.
  auto sm = inferencex_server_metrics(j, "", {}, {}, 0);
  EXPECT_EQ(sm.nested["tokens"]["prompt_total"], 250);
}

// --slice-duration: with scrapes at 1.0, 2.0, 2.5, 3.0, 4.5 s, a profiling
// window from 2 s to 4 s and 1 s slices, the grid runs from 2 s to the last
// scrape (4.5 s): [2,3) [3,4) [4,4.5) (incomplete). Counter slice totals are
// the values at the last scrape <= end minus <= start: 300-100, 300-300 (no
// scrape inside [3,4]), 350-300 (rates per the slice's seconds: 200, 0,
// 50/0.5 = 100); rate_avg/min/max over the two complete slices. Gauge slices average the scrapes in [start, end):
// 0.2 and 0.3 -> 0.25; 0.4; the last, closed at the final scrape, 0.6.
// Histogram slices are _count/_sum deltas. endpoint_info carries
// first_update_ns, the origin of InferenceX's plot script's server axis.
TEST(ServerMetricsExport, TimeSlicesAsAiperfWritesThem) {
  const std::int64_t s = 1'000'000'000;
  ServerMetricsLog log("http://h/metrics");
  auto text = [](int prompt, double usage, int hcount, double hsum) {
    return "# TYPE sglang:prompt_tokens counter\nsglang:prompt_tokens_total " + std::to_string(prompt) +
           "\n# TYPE sglang:token_usage gauge\nsglang:token_usage " + std::to_string(usage) +
           "\n# TYPE sglang:ttft histogram\nsglang:ttft_count " + std::to_string(hcount) + "\nsglang:ttft_sum " +
           std::to_string(hsum) + "\n";
  };
  log.add_scrape(1 * s, text(50, 0.1, 1, 0.5));
  log.add_scrape(2 * s, text(100, 0.2, 2, 1.0));
  log.add_scrape(2 * s + s / 2, text(200, 0.3, 4, 2.0));
  log.add_scrape(3 * s, text(300, 0.4, 6, 4.0));
  log.add_scrape(4 * s + s / 2, text(350, 0.6, 7, 5.0));
  auto j = log.export_json(2 * s, 4 * s, "bid", s);
  EXPECT_EQ(j["summary"]["endpoint_info"]["http://h/metrics"]["first_update_ns"], 1 * s);
  const auto& c = j["metrics"]["sglang:prompt_tokens"]["series"][0];
  ASSERT_EQ(c["timeslices"].size(), 3u) << c.dump();
  const std::vector<double> totals = {200, 0, 50}, rates = {200, 0, 100};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(c["timeslices"][i]["start_ns"], static_cast<std::int64_t>(2 + i) * s);
    EXPECT_DOUBLE_EQ(c["timeslices"][i]["total"].get<double>(), totals[i]) << i;
    EXPECT_DOUBLE_EQ(c["timeslices"][i]["rate"].get<double>(), rates[i]) << i;
  }
  EXPECT_EQ(c["timeslices"][2]["end_ns"], 4 * s + s / 2);
  EXPECT_EQ(c["timeslices"][2]["is_complete"], false);
  EXPECT_FALSE(c["timeslices"][0].contains("is_complete"));
  EXPECT_DOUBLE_EQ(c["stats"]["rate_avg"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(c["stats"]["rate_min"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(c["stats"]["rate_max"].get<double>(), 200);
  const auto& g = j["metrics"]["sglang:token_usage"]["series"][0]["timeslices"];
  ASSERT_EQ(g.size(), 3u) << g.dump();
  EXPECT_DOUBLE_EQ(g[0]["avg"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(g[0]["min"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(g[0]["max"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(g[1]["avg"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(g[2]["avg"].get<double>(), 0.6);
  const auto& h = j["metrics"]["sglang:ttft"]["series"][0]["timeslices"];
  ASSERT_EQ(h.size(), 3u) << h.dump();
  EXPECT_EQ(h[0]["count"], 4);
  EXPECT_DOUBLE_EQ(h[0]["sum"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(h[0]["avg"].get<double>(), 0.75);
  EXPECT_EQ(h[1]["count"], 0);
  EXPECT_EQ(h[2]["count"], 1);
  // Without a slice length there are no slices (and no rate statistics).
  auto plain = log.export_json(2 * s, 4 * s, "bid");
  EXPECT_FALSE(plain["metrics"]["sglang:prompt_tokens"]["series"][0].contains("timeslices"));
  EXPECT_FALSE(plain["metrics"]["sglang:prompt_tokens"]["series"][0]["stats"].contains("rate_avg"));
}

// profile_export_aiperf.json: completed_request_count = successes + errors
// (validate_agentic_result's fallback); context_overflow_count with AIPerf's
// allow-list; benchmark_duration = max(request start + request latency) -
// min(request start) (BenchmarkDurationMetric, MaxResponseTimestampMetric):
// the stream's end after the last content event does not count;
// e2e_normalized_interactivity_p90 = 1 / p90(request_latency_s / OSL)
// (inject_e2e_normalized_interactivity_metrics): ratios 1.0/10 and 2.0/10
// -> p90 = 0.1 + 0.9 * 0.1 = 0.19 -> 5.263..., p75 = 0.175 -> 5.714...
TEST(Export, AiperfCountsDurationAndE2eNormalizedInteractivity) {
  std::vector<RequestRecord> recs = {span_record(0, 1000, 10), span_record(0, 2000, 10)};
  recs[1].end_ns += 400'000'000;  // the [DONE] arrives 0.4 s after the last token
  RequestRecord overflow = span_record(0, 300, 1);
  overflow.error = ErrorInfo{400, "Bad Request", "This model's maximum context length is 8192 tokens"};
  RequestRecord other = span_record(0, 300, 1);
  other.error = ErrorInfo{503, "Service Unavailable", "busy"};
  recs.push_back(overflow);
  recs.push_back(other);
  RunResult run;
  AggregateInputs in;
  in.run = &run;
  auto agg = build_aggregate(recs, in);
  EXPECT_DOUBLE_EQ(agg["completed_request_count"]["avg"].get<double>(), 4);
  EXPECT_DOUBLE_EQ(agg["context_overflow_count"]["avg"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(agg["benchmark_duration"]["avg"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(agg["output_token_throughput"]["avg"].get<double>(), 20 / 2.0);
  EXPECT_NEAR(agg["e2e_normalized_interactivity_p90"]["avg"].get<double>(), 1 / 0.19, 1e-12);
  EXPECT_NEAR(agg["e2e_normalized_interactivity_p75"]["avg"].get<double>(), 1 / 0.175, 1e-12);
  EXPECT_EQ(agg["e2e_normalized_interactivity_p90"]["unit"], "tokens/sec/user");
  EXPECT_EQ(agg["e2e_normalized_interactivity_p90"]["count"], 2);
}

// TheoreticalPrefixCacheAccumulator: per successful profiling record, its
// turn's hit blocks (blocks the trace sent before) over its total blocks.
// Turns: [1,2] (0 hits), [1,2,3] (2), [1,2,3,4] (3). Profiling successes are
// turns 0 and 1 (turn 2 failed; a warmup copy of turn 2 does not count):
// 2 / 5 = 40 %, exported as unit "%", avg 40, sum 2, count 5, and InferenceX
// reads sum / count = 0.4.
TEST(Export, TheoreticalPrefixHitOverValidProfilingRecords) {
  const auto tr = trace::parse_weka_trace(
      R"({"id":"tr","block_size":64,"requests":[)"
      R"({"type":"n","t":0,"in":128,"out":5,"hash_ids":[1,2],"api_time":1},)"
      R"({"type":"n","t":10,"in":192,"out":5,"hash_ids":[1,2,3],"api_time":1},)"
      R"({"type":"n","t":20,"in":256,"out":5,"hash_ids":[1,2,3,4],"api_time":1}]})",
      "test");
  std::vector<RequestRecord> recs = {span_record(0, 1000, 5, "tr", 0), span_record(0, 1000, 5, "tr", 1)};
  auto failed = span_record(0, 1000, 5, "tr", 2);
  failed.error = ErrorInfo{500, "x", "y"};
  recs.push_back(failed);
  auto warm = span_record(0, 1000, 5, "tr", 2);
  warm.phase = Phase::warmup;
  recs.push_back(warm);
  const std::vector<trace::WekaTrace> traces = {tr};
  const auto th = replay::theoretical_hit_of_records(recs, traces);
  EXPECT_EQ(th.hit_blocks, 2);
  EXPECT_EQ(th.total_blocks, 5);

  replay::ReplayResult res;
  res.run.records = recs;
  replay::ReplayConfig cfg;
  replay::ReplayRunInfo info;
  info.traces = &traces;
  auto agg = replay::build_replay_aggregate(res, cfg, info, judge_run(recs, res.run, 1.0));
  const auto& t = agg.json["theoretical_prefix_cache_hit"];
  EXPECT_EQ(t["unit"], "%");
  EXPECT_DOUBLE_EQ(t["avg"].get<double>(), 40.0);
  EXPECT_EQ(t["sum"], 2);
  EXPECT_EQ(t["count"], 5);
  EXPECT_DOUBLE_EQ(agg.json["inferencex"]["cache"]["theoretical_cache_hit_rate"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(agg.inferencex.theoretical_cache_hit, 0.4);
}
