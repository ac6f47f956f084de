// How measuring runs end, through the real binary: signals, a dead or
// misbehaving server, a full disk, failed workers. Each test pins one way a
// user could lose results or be told a failed run was good.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "metrics/record_stream.h"
#include "support/sim_backend.h"
#include "testserver/openai_scripts.h"
#include "testserver/scripted_server.h"

using namespace std::chrono_literals;
using agentperf::testserver::ReceivedRequest;
using agentperf::testserver::ScriptedResponse;
using agentperf::testserver::ScriptedServer;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("agentperf_end_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The binary in the background, its stdout and stderr in one file.
struct Child {
  pid_t pid = -1;
  fs::path log;
  Child(const std::string& args, fs::path log_path, const std::string& shell_prefix = "") : log(std::move(log_path)) {
    const std::string cmd = shell_prefix + "exec " + std::string(AGENTPERF_CLI_PATH) + " " + args + " > " + log.string() + " 2>&1";
    pid = ::fork();
    if (pid == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  // Exit code, 128+signal when killed by one; -1 after `limit`.
  int wait(std::chrono::seconds limit = 60s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (std::chrono::steady_clock::now() < end) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(20ms);
    }
    return -1;
  }
  std::string output() const { return slurp(log); }
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

int run_cli(const std::string& args, std::string* out, const std::string& shell_prefix = "") {
  const auto log = fs::temp_directory_path() / ("agentperf_end_log_" + std::to_string(::getpid()));
  Child c(args, log, shell_prefix);
  const int code = c.wait();
  *out = c.output();
  fs::remove(log);
  return code;
}

std::vector<nlohmann::json> jsonl(const fs::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));  // throws on a torn line
  return out;
}

nlohmann::json aggregate(const fs::path& dir) { return nlohmann::json::parse(slurp(dir / "profile_export_aiperf.json")); }

// Waits until `file` has at least n lines or `limit` passes.
std::size_t wait_for_lines(const fs::path& file, std::size_t n, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  std::size_t lines = 0;
  while (std::chrono::steady_clock::now() < end) {
    std::ifstream in(file);
    lines = 0;
    std::string l;
    while (std::getline(in, l)) ++lines;
    if (lines >= n) break;
    std::this_thread::sleep_for(50ms);
  }
  return lines;
}

ScriptedResponse json_answer(std::string body, int status = 200, std::string reason = "OK") {
  ScriptedResponse r;
  r.status = status;
  r.reason = std::move(reason);
  r.framing = ScriptedResponse::Framing::content_length;
  r.headers = {{"Content-Type", "application/json"}};
  r.steps.push_back({0ns, std::move(body)});
  return r;
}

// An OpenAI-style server with one model "m" whose completions answer with
// these SSE events (each "data: ...\n\n"), 1 ms apart.
agentperf::testserver::Handler sse_server(std::vector<std::string> events) {
  return [events](const ReceivedRequest& req) {
    if (req.target == "/v1/models") return json_answer(R"({"data":[{"id":"m"}]})");
    ScriptedResponse r;
    r.headers = {{"Content-Type", "text/event-stream"}};
    for (std::size_t i = 0; i < events.size(); ++i)
      r.steps.push_back({std::chrono::milliseconds(i), "data: " + events[i] + "\n\n"});
    return r;
  };
}

}  // namespace

// ---- Signals: partial results, marked, with the documented exit codes ----

class ProfileStopSignal : public ::testing::TestWithParam<int> {};

TEST_P(ProfileStopSignal, StopsSendingLetsInFlightFinishAndWritesMarkedPartialResults) {
  const int sig = GetParam();
  // 1 s per request: every request is in flight when the signal lands.
  ScriptedServer server(agentperf::testserver::paced_openai_handler(100ms, 100ms));
  server.start();
  const auto dir = temp_dir("sig" + std::to_string(sig));
  Child c("profile --url " + server.url() + " --endpoint-type completions -c 3 -d 60 --osl 10 -o " + dir.string(),
          dir / "log");
  // Wait until the first requests finished (records on disk mid-run).
  ASSERT_GE(wait_for_lines(dir / "profile_export.jsonl", 3, 20s), 3u) << c.output();
  ::kill(c.pid, sig);
  const int code = c.wait();
  const std::string out = c.output();
  EXPECT_EQ(code, sig == SIGINT ? 130 : 143) << out;
  auto agg = aggregate(dir);
  EXPECT_FALSE(agg["complete"].get<bool>());
  EXPECT_FALSE(agg["valid"].get<bool>());
  EXPECT_NE(agg["stop_reason"].get<std::string>().find(sig == SIGINT ? "SIGINT" : "SIGTERM"), std::string::npos);
  // In-flight requests were let finish: nothing was cancelled, every record
  // is a success, and the file holds every one of them.
  const auto recs = jsonl(dir / "profile_export.jsonl");
  EXPECT_EQ(agg["cancelled_request_count"]["avg"], 0);
  EXPECT_EQ(agg["error_request_count"]["avg"], 0);
  EXPECT_EQ(static_cast<double>(recs.size()), agg["request_count"]["avg"].get<double>());
  EXPECT_NE(out.find("Requests:"), std::string::npos) << out;  // the summary was printed
  EXPECT_NE(out.find("INVALID"), std::string::npos) << out;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Signals, ProfileStopSignal, ::testing::Values(SIGINT, SIGTERM));

TEST(RunEndings, ReplayInterruptedWritesPartialMarkedResults) {
  auto backend = agentperf::test_support::start_sim_backend(1);
  const auto dir = temp_dir("replay_sig");
  std::string out;
  ASSERT_EQ(run_cli("traces synth --traces 6 --mean-turns 6 -o " + (dir / "t.jsonl").string(), &out), 0) << out;
  Child c("replay --url " + backend->url() + " --traces " + (dir / "t.jsonl").string() +
              " --lanes 2 -d 120 --no-warmup -o " + (dir / "out").string(),
          dir / "log");
  ASSERT_GE(wait_for_lines(dir / "out" / "profile_export.jsonl", 2, 30s), 2u) << c.output();
  ::kill(c.pid, SIGINT);
  const int code = c.wait();
  out = c.output();
  EXPECT_EQ(code, 130) << out;
  auto agg = aggregate(dir / "out");
  EXPECT_FALSE(agg["complete"].get<bool>());
  EXPECT_FALSE(agg["metadata"]["submission_valid"].get<bool>());
  EXPECT_GT(agg["request_count"]["avg"].get<double>(), 0);
  EXPECT_EQ(jsonl(dir / "out" / "profile_export.jsonl").size(),
            static_cast<std::size_t>(agg["request_count"]["avg"].get<double>() + agg["error_request_count"]["avg"].get<double>() +
                                     agg["warmup_request_count"]["avg"].get<double>()));
  fs::remove_all(dir);
}

TEST(RunEndings, SigkillLeavesEveryFinishedRecordOnDisk) {
  ScriptedServer server(agentperf::testserver::paced_openai_handler(1ms, 1ms));
  server.start();
  const auto dir = temp_dir("kill");
  Child c("profile --url " + server.url() + " --endpoint-type completions -c 2 -d 60 --osl 4 -q -o " + dir.string(),
          dir / "log");
  ASSERT_GE(wait_for_lines(dir / "profile_export.jsonl", 50, 20s), 50u) << c.output();
  ::kill(c.pid, SIGKILL);
  EXPECT_EQ(c.wait(), 128 + SIGKILL);
  // Every line on disk is a whole record (written in whole batches).
  const auto recs = jsonl(dir / "profile_export.jsonl");
  EXPECT_GE(recs.size(), 50u);
  for (const auto& r : recs) EXPECT_TRUE(r["error"].is_null());
  fs::remove_all(dir);
}

// ---- Never report a failed run as good ----

TEST(RunEndings, ServerDyingMidRunMakesTheRunInvalidInFileAndExitCode) {
  std::atomic<int> served{0};
  ScriptedServer server([&](const ReceivedRequest& req) {
    if (req.target == "/v1/models") return json_answer(R"({"data":[{"id":"m"}]})");
    if (++served > 8) {  // the engine died: connections are dropped
      ScriptedResponse r;
      r.framing = ScriptedResponse::Framing::raw;
      r.close_after = true;
      return r;
    }
    agentperf::testserver::StreamScript s;
    s.tokens = 4;
    return agentperf::testserver::openai_stream_response(s);
  });
  server.start();
  const auto dir = temp_dir("dying");
  std::string out;
  const int code = run_cli("profile --url " + server.url() + " -c 2 -n 40 -q -o " + dir.string(), &out);
  EXPECT_EQ(code, 1) << out;
  auto agg = aggregate(dir);
  EXPECT_TRUE(agg["complete"].get<bool>());  // it ran to its end...
  EXPECT_FALSE(agg["valid"].get<bool>());    // ...but measured a broken server
  EXPECT_EQ(agg["exit_code"], 1);
  EXPECT_NE(out.find("INVALID"), std::string::npos) << out;

  // The same run with an error allowance the errors fit in is valid.
  served = 0;
  const auto dir2 = temp_dir("dying2");
  EXPECT_EQ(run_cli("profile --url " + server.url() + " -c 2 -n 10 --max-error-rate 0.5 -q -o " + dir2.string(), &out), 0)
      << out;
  EXPECT_TRUE(aggregate(dir2)["valid"].get<bool>());
  fs::remove_all(dir);
  fs::remove_all(dir2);
}

TEST(RunEndings, ReplayFileAndConsoleAgreeOnValidity) {
  ScriptedServer server([&](const ReceivedRequest& req) {
    if (req.target == "/v1/models") return json_answer(R"({"data":[{"id":"m"}]})");
    return json_answer(R"({"error":{"message":"engine overloaded","type":"server_error"}})", 503, "Service Unavailable");
  });
  server.start();
  const auto dir = temp_dir("replay_invalid");
  std::string out;
  ASSERT_EQ(run_cli("traces synth --traces 4 --mean-turns 4 -o " + (dir / "t.jsonl").string(), &out), 0) << out;
  const int code = run_cli("replay --url " + server.url() + " --traces " + (dir / "t.jsonl").string() +
                               " --lanes 2 -d 3 --no-warmup -q -o " + (dir / "out").string(),
                           &out);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("INVALID"), std::string::npos) << out;
  auto agg = aggregate(dir / "out");
  EXPECT_FALSE(agg["metadata"]["submission_valid"].get<bool>());
  EXPECT_FALSE(agg["valid"].get<bool>());
  fs::remove_all(dir);
}

TEST(RunEndings, EvalWithEveryRequestFailedFailsEvenAtThresholdZero) {
  ScriptedServer server([&](const ReceivedRequest& req) {
    if (req.target == "/v1/models") return json_answer(R"({"data":[{"id":"m"}]})");
    return json_answer("boom", 500, "Internal Server Error");
  });
  server.start();
  std::string out;
  const int code = run_cli("eval gsm8k --url " + server.url() + " --endpoint-type completions --dataset " +
                               std::string(AGENTPERF_GSM8K_SAMPLE) + " --fewshot 2 --limit 4",
                           &out);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("FAIL"), std::string::npos) << out;
  EXPECT_NE(out.find("--max-error-rate"), std::string::npos) << out;
}

TEST(RunEndings, AWorkerThatFailsEndsTheRunWithItsCause) {
  ScriptedServer server(agentperf::testserver::paced_openai_handler(1ms, 1ms));
  server.start();
  const auto dir = temp_dir("worker");
  std::string out;
  // Under a 3 GB address-space limit, 64 prompts of 10M tokens (the
  // largest --isl accepted) cannot all be built: the worker runs out of
  // memory.
  const int code = run_cli("profile --url " + server.url() + " --endpoint-type completions -c 64 -n 64 --isl 10000000 --osl 1 -q -o " +
                               dir.string(),
                           &out, "ulimit -v 3000000; ");
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("out of memory"), std::string::npos) << out;
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("worker"), std::string::npos) << out;
  EXPECT_NE(out.find("INVALID"), std::string::npos) << out;
  EXPECT_FALSE(aggregate(dir)["complete"].get<bool>());
  fs::remove_all(dir);
}

TEST(RunEndings, ZeroOutputTokensWithIgnoreEosAreFlagged) {
  ScriptedServer server(sse_server({R"({"choices":[{"text":""}],"usage":{"prompt_tokens":9,"completion_tokens":0}})", "[DONE]"}));
  server.start();
  const auto dir = temp_dir("zero");
  std::string out;
  run_cli("profile --url " + server.url() + " --endpoint-type completions -c 1 -n 3 --extra-inputs ignore_eos:true -q -o " +
              dir.string(),
          &out);
  EXPECT_NE(out.find("zero_output_tokens"), std::string::npos) << out;
  for (const auto& r : jsonl(dir / "profile_export.jsonl")) EXPECT_EQ(r["metadata"]["warning"], "zero_output_tokens");
  EXPECT_EQ(aggregate(dir)["warning_summary"]["zero_output_tokens"], 3);
  fs::remove_all(dir);
}

// ---- One bad byte, a full disk ----

TEST(RunEndings, InvalidUtf8FromTheServerNeverCostsTheRun) {
  std::atomic<int> n{0};
  ScriptedServer server([&](const ReceivedRequest& req) {
    if (req.target == "/v1/models") return json_answer(R"({"data":[{"id":"m"}]})");
    if (++n % 4 == 0) {
      ScriptedResponse r = json_answer(std::string("<html>\xff\xfe\xc3\x28 proxy error</html>"), 500, "Internal Server Error");
      r.headers = {{"Content-Type", "text/html"}};
      return r;
    }
    agentperf::testserver::StreamScript s;
    s.tokens = 3;
    return agentperf::testserver::openai_stream_response(s);
  });
  server.start();
  const auto dir = temp_dir("utf8");
  std::string out;
  const int code = run_cli("profile --url " + server.url() + " -c 2 -n 20 --max-error-rate 0.5 -q -o " + dir.string(), &out);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.find("internal error"), std::string::npos) << out;
  const auto recs = jsonl(dir / "profile_export.jsonl");
  EXPECT_EQ(recs.size(), 20u);
  int errors = 0;
  for (const auto& r : recs)
    if (!r["error"].is_null()) {
      ++errors;
      EXPECT_NE(r["error"]["message"].get<std::string>().find("proxy error"), std::string::npos);
    }
  EXPECT_EQ(errors, 5);
  fs::remove_all(dir);
}

TEST(RunEndings, FailedResultWriteStillPrintsTheSummaryAndExits3) {
  ScriptedServer server(agentperf::testserver::paced_openai_handler(1ms, 1ms));
  server.start();
  const auto dir = temp_dir("full");
  fs::create_symlink("/dev/full", dir / "profile_export.jsonl");  // every write: ENOSPC
  std::string out;
  const int code =
      run_cli("profile --url " + server.url() + " --endpoint-type completions -c 2 -n 20 -q -o " + dir.string(), &out);
  EXPECT_EQ(code, 3) << out;
  EXPECT_NE(out.find("Requests: 20 ok"), std::string::npos) << out;  // the summary still reached the console
  EXPECT_NE(out.find("No space left on device"), std::string::npos) << out;
  fs::remove_all(dir);
}

TEST(RunEndings, TooLittleFreeDiskIsRefusedUpFront) {
  const auto dir = temp_dir("space");
  try {
    agentperf::check_free_disk(dir, std::uint64_t{1} << 62, "the results");
    FAIL() << "expected a UserError";
  } catch (const agentperf::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("free"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir.string()), std::string::npos) << e.what();
    EXPECT_EQ(e.exit_code(), 2);
  }
  fs::remove_all(dir);
}

// ---- Identity and request shape ----

TEST(RunEndings, RequestIdsDifferAcrossRunsWhilePromptsStaySeeded) {
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> seen;  // (X-Request-ID, body)
  auto paced = agentperf::testserver::paced_openai_handler(1ms, 1ms);
  ScriptedServer server([&](const ReceivedRequest& req) {
    if (req.target != "/v1/models") {
      std::lock_guard lk(mu);
      seen.emplace_back(req.header("x-request-id"), req.body);
    }
    return paced(req);
  });
  server.start();
  std::string out;
  for (int run = 0; run < 2; ++run) {
    const auto dir = temp_dir("ids" + std::to_string(run));
    ASSERT_EQ(run_cli("profile --url " + server.url() + " --endpoint-type completions -c 1 -n 3 -q -o " + dir.string(), &out),
              0)
        << out;
    fs::remove_all(dir);
  }
  ASSERT_EQ(seen.size(), 6u);
  std::set<std::string> ids;
  for (const auto& [id, body] : seen) ids.insert(id);
  EXPECT_EQ(ids.size(), 6u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)].second, seen[static_cast<std::size_t>(i + 3)].second);

  // replay too: two runs of the same traces and seed share no request id.
  const auto dir = temp_dir("replay_ids");
  ASSERT_EQ(run_cli("traces synth --traces 2 --mean-turns 3 -o " + (dir / "t.jsonl").string(), &out), 0) << out;
  std::set<std::string> runs[2];
  for (int run = 0; run < 2; ++run) {
    {
      std::lock_guard lk(mu);
      seen.clear();
    }
    run_cli("replay --url " + server.url() + " --traces " + (dir / "t.jsonl").string() + " --lanes 1 -d 1 --no-warmup -q -o " +
                (dir / std::to_string(run)).string(),
            &out);
    std::lock_guard lk(mu);
    for (const auto& [id, body] : seen) runs[run].insert(id);
  }
  ASSERT_FALSE(runs[0].empty());
  for (const auto& id : runs[0]) EXPECT_EQ(runs[1].count(id), 0u) << id;
  fs::remove_all(dir);
}

TEST(RunEndings, NonStreamingRunsShowStreamingMetricsAsNotApplicable) {
  ScriptedServer server(agentperf::testserver::paced_openai_handler(1ms, 1ms));
  server.start();
  const auto dir = temp_dir("nostream");
  std::string out;
  ASSERT_EQ(run_cli("profile --url " + server.url() + " --endpoint-type completions --no-streaming -c 1 -n 3 -q -o " +
                        dir.string(),
                    &out),
            0)
      << out;
  auto agg = aggregate(dir);
  EXPECT_FALSE(agg.contains("inter_token_latency"));
  EXPECT_FALSE(agg.contains("time_to_first_token"));
  EXPECT_TRUE(agg.contains("request_latency"));
  EXPECT_EQ(out.find("ITL (ms)                          0.00"), std::string::npos) << out;
  EXPECT_NE(out.find("n/a"), std::string::npos) << out;
  fs::remove_all(dir);
}

TEST(RunEndings, ObservedCacheHitIsNotApplicableWhenTheServerReportsNone) {
  // Usage without prompt_tokens_details, as llama.cpp's server sends it.
  ScriptedServer server(sse_server({R"({"choices":[{"text":"a"}]})",
                                    R"({"choices":[{"text":"b"}],"usage":{"prompt_tokens":9,"completion_tokens":2}})",
                                    "[DONE]"}));
  server.start();
  const auto dir = temp_dir("hit");
  std::string out;
  ASSERT_EQ(run_cli("traces synth --traces 4 --mean-turns 4 -o " + (dir / "t.jsonl").string(), &out), 0) << out;
  run_cli("replay --url " + server.url() + " --traces " + (dir / "t.jsonl").string() + " --lanes 2 -d 2 --no-warmup -q -o " +
              (dir / "out").string(),
          &out);
  EXPECT_NE(out.find("cache hit n/a"), std::string::npos) << out;
  EXPECT_EQ(out.find("0.0% observed"), std::string::npos) << out;
  EXPECT_TRUE(aggregate(dir / "out")["inferencex"]["cache"]["observed_cache_hit_rate"].is_null());
  fs::remove_all(dir);
}

TEST(RunEndings, TokenIdsFollowTheServedVocabulary) {
  std::mutex mu;
  int max_id = 0;
  auto paced = agentperf::testserver::paced_openai_handler(1ms, 1ms);
  ScriptedServer server([&](const ReceivedRequest& req) {
    if (req.target == "/v1/models") return json_answer(R"({"data":[{"id":"tiny","meta":{"n_vocab":5000}}]})");
    auto body = nlohmann::json::parse(req.body);
    if (body["prompt"].is_array()) {
      std::lock_guard lk(mu);
      for (const auto& t : body["prompt"]) max_id = std::max(max_id, t.get<int>());
    }
    return paced(req);
  });
  server.start();
  const auto dir = temp_dir("vocab");
  std::string out;
  // profile: the default range is fitted to the vocabulary...
  ASSERT_EQ(run_cli("profile --url " + server.url() + " --endpoint-type completions -c 1 -n 3 -q -o " + dir.string(), &out), 0)
      << out;
  EXPECT_GT(max_id, 0);
  EXPECT_LT(max_id, 5000);
  // ...an explicit range that does not fit is refused, naming the flag.
  EXPECT_EQ(run_cli("profile --url " + server.url() + " --endpoint-type completions -c 1 -n 3 --token-id-range 1000:30000 -q -o " +
                        dir.string(),
                    &out),
            2);
  EXPECT_NE(out.find("--token-id-range"), std::string::npos) << out;
  EXPECT_NE(out.find("5000"), std::string::npos) << out;
  // replay: its default range does not fit either, and a fitting one is used.
  ASSERT_EQ(run_cli("traces synth --traces 3 --mean-turns 3 -o " + (dir / "t.jsonl").string(), &out), 0) << out;
  EXPECT_EQ(run_cli("replay --url " + server.url() + " --traces " + (dir / "t.jsonl").string() + " --lanes 1 -d 1 --no-warmup -q -o " +
                        (dir / "r1").string(),
                    &out),
            2);
  EXPECT_NE(out.find("--token-id-range"), std::string::npos) << out;
  max_id = 0;
  EXPECT_EQ(run_cli("replay --url " + server.url() + " --traces " + (dir / "t.jsonl").string() +
                        " --lanes 1 -d 1 --no-warmup --token-id-range 100:4000 -q -o " + (dir / "r2").string(),
                    &out),
            0)
      << out;
  EXPECT_GE(max_id, 100);
  EXPECT_LT(max_id, 4000);
  fs::remove_all(dir);
}
