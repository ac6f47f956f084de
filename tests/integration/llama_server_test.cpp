// Real-engine integration tests: the agentperf binary against llama.cpp's
// llama-server (CPU, small random-weight models), directly and behind
// `agentperf route`. How the server is found, and what llama-server does
// that these tests rely on: docs/testing.md.
//
// Every test runs the CLI with default client settings and checks, request by
// request, our measurements against the server's own `timings`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "integration/harness.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace agentperf::itest;

namespace {

// The request shape of the profile tests: short prompts and outputs keep a
// run of 12 requests to a few seconds on two cores.
constexpr int kIsl = 32;
constexpr int kOsl = 8;
constexpr int kRequests = 12;

std::optional<double> number_at(const json& j, std::initializer_list<const char*> path) {
  const json* cur = &j;
  for (const char* key : path) {
    if (!cur->is_object() || !cur->contains(key)) return std::nullopt;
    cur = &(*cur)[key];
  }
  if (!cur->is_number()) return std::nullopt;
  return cur->get<double>();
}

std::optional<double> metric(const json& record, const char* tag) { return number_at(record, {"metrics", tag, "value"}); }

std::string short_dump(const json& j) {
  std::string s = j.dump();
  return s.size() > 1500 ? s.substr(0, 1500) + "..." : s;
}

// One record of profile_export.jsonl: no error, the server's usage, and our
// timing against the server's own `timings` (metadata.server_timings).
// Returns what is wrong with it, empty if nothing.
std::vector<std::string> record_problems(const json& r, bool expect_exact_osl) {
  std::vector<std::string> p;
  const auto fmt = [](double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  };
  const json md = r.value("metadata", json::object());
  if (!r.value("error", json()).is_null()) return {"an error record"};
  if (md.value("http_status", 0) != 200) p.push_back("http_status is not 200");

  const auto prompt_tokens = metric(r, "usage_prompt_tokens");
  const auto completion_tokens = metric(r, "usage_completion_tokens");
  if (!prompt_tokens || *prompt_tokens <= 0) p.push_back("no usage_prompt_tokens (the server's usage.prompt_tokens)");
  if (!completion_tokens || *completion_tokens <= 0)
    p.push_back("no usage_completion_tokens (the server's usage.completion_tokens)");
  const auto osl = metric(r, "output_sequence_length");
  if (!osl) return p.push_back("no output_sequence_length"), p;
  if (expect_exact_osl && *osl != kOsl)
    p.push_back("output_sequence_length " + fmt(*osl) + " != " + std::to_string(kOsl) + " (max_tokens with ignore_eos)");

  // llama-server's own account of this request: prompt_n prompt tokens
  // evaluated in prompt_ms, predicted_n tokens generated in predicted_ms.
  if (!md.contains("server_timings") || !md["server_timings"].is_object())
    return p.push_back("no metadata.server_timings (llama-server's `timings`)"), p;
  const json& st = md.at("server_timings");
  const auto prompt_n = number_at(st, {"prompt_n"});
  const auto prompt_ms = number_at(st, {"prompt_ms"});
  const auto predicted_n = number_at(st, {"predicted_n"});
  const auto predicted_ms = number_at(st, {"predicted_ms"});
  if (!prompt_n || !prompt_ms || !predicted_n || !predicted_ms)
    return p.push_back("incomplete metadata.server_timings"), p;
  if (*osl != *predicted_n)
    p.push_back("output_sequence_length " + fmt(*osl) + " != the server's predicted_n " + fmt(*predicted_n));
  if (completion_tokens && *completion_tokens != *predicted_n)
    p.push_back("usage_completion_tokens " + fmt(*completion_tokens) + " != predicted_n " + fmt(*predicted_n));
  // prompt_n counts only the tokens evaluated (a reused prefix is not): at
  // least one, at most the prompt; with cache_n, the two make the prompt.
  if (*prompt_n < 1) p.push_back("prompt_n < 1");
  if (prompt_tokens && *prompt_n > *prompt_tokens)
    p.push_back("prompt_n " + fmt(*prompt_n) + " > usage_prompt_tokens " + fmt(*prompt_tokens));
  if (const auto cache_n = number_at(st, {"cache_n"}); cache_n && prompt_tokens && *prompt_n + *cache_n != *prompt_tokens)
    p.push_back("prompt_n + cache_n != usage_prompt_tokens");
  // The server times from the start of prompt processing to the end of
  // generation, which lies inside our request: we can only see more. Our
  // request latency here is request start -> end of the response
  // (http_req_duration): AIPerf's request_latency ends at the last content
  // event, which comes before the last generated token when that token streams
  // no text (llama-server holds back a byte token that leaves the text
  // incomplete UTF-8, and drops it if the stream ends there).
  const auto e2e = metric(r, "http_req_duration");
  if (!e2e) return p.push_back("no http_req_duration"), p;
  if (*e2e < *prompt_ms + *predicted_ms)
    p.push_back("request latency (http_req_duration) " + fmt(*e2e) + " ms < the server's prompt_ms + predicted_ms = " +
                fmt(*prompt_ms + *predicted_ms) + " ms");
  const auto latency = metric(r, "request_latency");
  if (!latency) p.push_back("no request_latency");
  if (latency && *latency > *e2e) p.push_back("request_latency > http_req_duration");
  // The first token is sampled at the end of prompt_ms and streamed after it.
  if (const auto ttft = metric(r, "time_to_first_token"); ttft && *ttft < *prompt_ms)
    p.push_back("time_to_first_token " + fmt(*ttft) + " ms < the server's prompt_ms " + fmt(*prompt_ms) + " ms");
  return p;
}

// Every record of `dir`/profile_export.jsonl, reported one failure per bad
// record (the first five); returns the number of profiling records.
int check_records(const fs::path& dir, bool expect_exact_osl) {
  const auto records = read_jsonl(dir / "profile_export.jsonl");
  EXPECT_FALSE(records.empty()) << "no records in " << dir / "profile_export.jsonl";
  int profiling = 0, bad = 0;
  for (const auto& r : records) {
    if (r.value("metadata", json::object()).value("benchmark_phase", "") == "profiling") ++profiling;
    const auto problems = record_problems(r, expect_exact_osl);
    if (problems.empty()) continue;
    if (++bad > 5) continue;
    std::string what;
    for (const auto& s : problems) what += "\n  - " + s;
    ADD_FAILURE() << "record " << r.value("metadata", json::object()).value("x_request_id", "?") << ":" << what
                  << "\n  record: " << short_dump(r);
  }
  EXPECT_EQ(bad, 0) << bad << " of " << records.size() << " records failed the checks (first five shown above)";
  return profiling;
}

// One line on stdout: the server's own time per request (prompt_ms +
// predicted_ms) against our end-to-end request latency, medians.
void print_overhead(const fs::path& dir, const std::string& what) {
  std::vector<double> server, ours, diff;
  for (const auto& r : read_jsonl(dir / "profile_export.jsonl")) {
    const json md = r.value("metadata", json::object());
    const auto pm = number_at(md, {"server_timings", "prompt_ms"});
    const auto gm = number_at(md, {"server_timings", "predicted_ms"});
    const auto e2e = metric(r, "http_req_duration");
    if (!pm || !gm || !e2e) continue;
    server.push_back(*pm + *gm);
    ours.push_back(*e2e);
    diff.push_back(*e2e - *pm - *gm);
  }
  if (diff.empty()) return;
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("  %s: %zu requests, server time p50 %.2f ms, our request latency p50 %.2f ms, difference p50 %.2f ms, "
              "max %.2f ms\n",
              what.c_str(), diff.size(), median(server), median(ours), median(diff),
              *std::max_element(diff.begin(), diff.end()));
}

// The aggregate's request counts: `n` requests, none failed or cancelled.
void check_aggregate(const fs::path& dir, std::optional<int> n) {
  const json agg = read_json(dir / "profile_export_aiperf.json");
  ASSERT_TRUE(agg.is_object()) << "no " << dir / "profile_export_aiperf.json";
  if (n) {
    EXPECT_EQ(number_at(agg, {"request_count", "avg"}).value_or(-1), *n);
  }
  EXPECT_EQ(number_at(agg, {"error_request_count", "avg"}).value_or(0), 0)
      << agg.value("error_summary", json()).dump();
  EXPECT_EQ(number_at(agg, {"cancelled_request_count", "avg"}).value_or(0), 0);
  EXPECT_TRUE(agg.value("complete", false));
  EXPECT_FALSE(agg.value("was_cancelled", true));
}

class LlamaServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ensure_server(); }
  static void TearDownTestSuite() {
    if (server_) server_->process->stop();
    server_.reset();
    // Keep the logs and results only when something failed.
    if (::testing::UnitTest::GetInstance()->failed_test_count() == 0) remove_scratch();
  }

  void SetUp() override {
    const auto& b = llama_build();
    if (!b.skip_reason.empty()) GTEST_SKIP() << b.skip_reason;
    ASSERT_TRUE(b.failure.empty()) << b.failure;
    ensure_server();  // again, should an earlier test have left it dead
    ASSERT_TRUE(server_.has_value()) << start_error_;
  }

  void TearDown() override {
    if (HasFailure() && server_)
      std::fprintf(stderr, "llama-server log: %s (%s)\n", server_->process->log_path().c_str(),
                   server_->process->ended().value_or("running").c_str());
  }

  // One llama-server for the process: 4 slots of 1,024 tokens, 2 threads.
  static void ensure_server() {
    if (server_ && !server_->process->ended()) return;
    const auto& b = llama_build();
    if (!b.skip_reason.empty() || !b.failure.empty()) return;
    if (server_) {
      start_error_ = "llama-server " + *server_->process->ended() + " during an earlier test; its log:\n" +
                     server_->process->log_tail(40);
      std::fprintf(stderr, "%s\n", start_error_.c_str());
    }
    server_.reset();
    LlamaServerOptions opt;
    opt.ctx = 4096;
    opt.parallel = 4;
    opt.threads = 2;
    std::string error;
    server_ = start_llama_server(b, opt, scratch_dir("server") / "llama-server.log", error);
    if (!server_) start_error_ = error;
  }

  static std::string url() { return server_->url(); }

  // n_vocab from llama-server's GET /v1/models (data[0].meta.n_vocab).
  static std::optional<long long> served_vocab(int port) {
    const auto models = http_request(port, "GET", "/v1/models");
    if (models.status != 200) return std::nullopt;
    const auto j = json::parse(models.body, nullptr, false);
    if (j.is_discarded() || !j.contains("data") || j["data"].empty()) return std::nullopt;
    const auto v = number_at(j["data"][0], {"meta", "n_vocab"});
    if (!v) return std::nullopt;
    return static_cast<long long>(*v);
  }

  // `agentperf profile` at concurrency 1 and 4, each checked in full.
  void profile_at_two_concurrencies(const std::string& endpoint, bool streaming) {
    for (int c : {1, 4}) {
      SCOPED_TRACE(endpoint + (streaming ? " streaming" : " non-streaming") + ", concurrency " + std::to_string(c));
      const auto dir = scratch_dir("profile_" + endpoint + (streaming ? "_stream_c" : "_nostream_c") + std::to_string(c));
      const auto r = run_cli("profile --url " + url() + " --endpoint-type " + endpoint +
                             (streaming ? " --streaming" : " --no-streaming") + " -c " + std::to_string(c) + " -n " +
                             std::to_string(kRequests) + " --isl " + std::to_string(kIsl) + " --osl " +
                             std::to_string(kOsl) + " --extra-inputs ignore_eos:true -q -o " + dir.string());
      EXPECT_EQ(r.code, 0) << r.output;
      EXPECT_EQ(check_records(dir, true), kRequests);
      check_aggregate(dir, kRequests);
      print_overhead(dir, endpoint + (streaming ? " streaming" : " non-streaming") + " -c " + std::to_string(c));
    }
  }

  static inline std::optional<RunningServer> server_;
  static inline std::string start_error_;
};

}  // namespace

TEST_F(LlamaServer, ProfileChatStreaming) { profile_at_two_concurrencies("chat", true); }

TEST_F(LlamaServer, ProfileChatNonStreaming) { profile_at_two_concurrencies("chat", false); }

TEST_F(LlamaServer, ProfileCompletionsStreaming) { profile_at_two_concurrencies("completions", true); }

TEST_F(LlamaServer, ProfileCompletionsNonStreaming) { profile_at_two_concurrencies("completions", false); }

// AgentX-style replay of small synthetic session trees (contexts under 450
// tokens, subagents on) for 12 s at 3 lanes, with a short warmup.
TEST_F(LlamaServer, ReplayOfSyntheticAgenticTraces) {
  const auto dir = scratch_dir("replay");
  const auto traces = dir / "traces.jsonl";
  const auto synth = run_cli("traces synth -o " + traces.string() +
                             " --traces 8 --seed 3 --mean-turns 10 --system-tokens 128 --tool-tokens 64"
                             " --mean-turn-input 40 --mean-output 12 --max-context 448 --subagent-probability 0.4"
                             " --max-fanout 2 --mean-think-time 0.3");
  ASSERT_EQ(synth.code, 0) << synth.output;

  // Replay's token-id blocks default to ids 1000:31256 and are checked, not
  // fitted, against the served vocabulary: give a small model's range.
  std::string range;
  if (const auto vocab = served_vocab(server_->port); vocab && *vocab < 31256)
    range = " --token-id-range 300:" + std::to_string(*vocab);
  const auto out = dir / "results";
  const auto r = run_cli("replay --url " + url() + " --traces " + traces.string() +
                         " --lanes 3 --duration 12 --grace-period 60 --warmup-requests-per-lane 2"
                         " --warmup-spread-seconds 1" + range + " -q -o " + out.string());
  EXPECT_EQ(r.code, 0) << r.output;

  const json agg = read_json(out / "profile_export_aiperf.json");
  ASSERT_TRUE(agg.is_object()) << r.output;
  const auto records = read_jsonl(out / "profile_export.jsonl");
  const int profiling = check_records(out, false);
  check_aggregate(out, std::nullopt);
  const auto count = number_at(agg, {"request_count", "avg"}).value_or(0);
  EXPECT_GE(count, 10) << "too few requests in 12 s: " << r.output;
  // Nothing lost: every request sent is a record, every record is counted.
  EXPECT_EQ(count, profiling);
  EXPECT_EQ(number_at(agg, {"inferencex", "request_accounting", "records_total"}).value_or(-1),
            static_cast<double>(records.size()));
  EXPECT_EQ(number_at(agg, {"inferencex", "request_accounting", "records_error_dropped"}).value_or(-1), 0);
  EXPECT_EQ(number_at(agg, {"replay", "context_overflow_terminations"}).value_or(0), 0);
  const json meta = agg.value("metadata", json::object());
  EXPECT_TRUE(meta.value("submission_valid", false)) << meta.dump();
}

// Two llama-servers behind `agentperf route` (session-sticky, the default):
// a profile through the router has no errors and reaches both.
TEST_F(LlamaServer, RouteSpreadsAProfileOverTwoServers) {
  const auto& b = llama_build();
  const auto dir = scratch_dir("route");
  LlamaServerOptions opt;
  opt.ctx = 2048;
  opt.parallel = 2;
  opt.threads = 1;
  std::vector<RunningServer> backends;
  for (int i = 0; i < 2; ++i) {
    std::string error;
    auto s = start_llama_server(b, opt, dir / ("llama-server-" + std::to_string(i) + ".log"), error);
    ASSERT_TRUE(s.has_value()) << error;
    backends.push_back(std::move(*s));
  }
  Process router({AGENTPERF_CLI_PATH, "route", "-b", backends[0].url() + "," + backends[1].url(), "--host",
                  "127.0.0.1", "--port", "0"},
                 dir / "router.log");
  std::string error;
  const int port = wait_for_logged_port(router, " on http://127.0.0.1:", std::chrono::seconds(20), error);
  ASSERT_GT(port, 0) << "agentperf route: " << error;
  ASSERT_TRUE(wait_healthy(router, port, std::chrono::seconds(20), error)) << "agentperf route: " << error;

  constexpr int kRouted = 24;
  const auto out = dir / "results";
  const auto r = run_cli("profile --url http://127.0.0.1:" + std::to_string(port) +
                         " --endpoint-type completions -c 4 -n " + std::to_string(kRouted) + " --isl " +
                         std::to_string(kIsl) + " --osl " + std::to_string(kOsl) +
                         " --extra-inputs ignore_eos:true -q -o " + out.string());
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(check_records(out, true), kRouted);
  check_aggregate(out, kRouted);

  // The router's account, then each server's own.
  const auto state = http_request(port, "GET", "/router/backends");
  ASSERT_EQ(state.status, 200) << state.error << state.body;
  const auto j = json::parse(state.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("backends")) << state.body;
  ASSERT_EQ(j["backends"].size(), 2u) << state.body;
  for (const auto& be : j["backends"]) {
    EXPECT_GT(be.value("requests", 0), 0) << "a backend got no requests: " << state.body;
    EXPECT_EQ(be.value("errors", -1), 0) << state.body;
    EXPECT_EQ(be.value("ejections", -1), 0) << state.body;
  }
  for (auto& be : backends) {
    const auto m = http_request(be.port, "GET", "/metrics");
    ASSERT_EQ(m.status, 200) << be.url() << ": " << m.error << m.body;
    EXPECT_GT(prometheus_sum(m.body, "llamacpp:tokens_predicted_total"), 0) << be.url() << " generated nothing:\n"
                                                                             << m.body;
    EXPECT_FALSE(be.process->ended()) << be.url() << " died:\n" << be.process->log_tail();
  }
  router.stop();
}
