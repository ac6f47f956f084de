// How measuring runs end, through the real binary: signals, a dead or
// misbehaving server, a full disk, failed workers. Each test pins one way a
// user could lose results or be told a failed run was good.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/error.h"
#include "metrics/record_stream.h"
#include "report/report.h"
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
  // own_group: the child leads a process group of its own, so that a
  // signal can be sent to the whole group (kill(-pid)), as a terminal's
  // Ctrl-C or `kill -- -PID` does.
  // wrapper: a command the binary runs under (e.g. "timeout 60").
  Child(const std::string& args, fs::path log_path, const std::string& shell_prefix = "", bool own_group = false,
        const std::string& wrapper = "")
      : log(std::move(log_path)) {
    const std::string cmd = shell_prefix + "exec " + wrapper + (wrapper.empty() ? "" : " ") + std::string(AGENTPERF_CLI_PATH) +
                            " " + args + " > " + log.string() + " 2>&1";
    pid = ::fork();
    if (pid == 0) {
      if (own_group) ::setpgid(0, 0);
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

// `timeout` relays a signal to its child and to the group again, so a
// Ctrl-C to the group (or `kill -INT -- -PID`) reaches agentperf two or three
// times within a millisecond. That is one request to stop: the in-flight
// requests get their grace period, and the aggregate and a record of every
// request the server was sent are written (it used to be taken as "exit
// now": no aggregate, in-flight requests without a record, 11 of 20 tries).
TEST(RunEndings, OneCtrlCRelayedByTimeoutIsOneStopAndLosesNothing) {
  std::atomic<int> sent{0};
  // 10 tokens 100 ms apart: every request is in flight when the signal lands.
  auto paced = agentperf::testserver::paced_openai_handler(100ms, 100ms);
  ScriptedServer server([&](const ReceivedRequest& req) {
    if (req.target != "/v1/models") ++sent;
    return paced(req);
  });
  server.start();
  const auto dir = temp_dir("relayed");
  Child c("profile --url " + server.url() + " --endpoint-type completions -c 4 -d 60 --osl 10 -o " + dir.string(),
          dir.parent_path() / ("agentperf_end_relayed_log_" + std::to_string(::getpid())), "", /*own_group=*/true,
          "timeout -s INT 120");
  for (int i = 0; i < 400 && sent.load() < 4; ++i) std::this_thread::sleep_for(25ms);
  ASSERT_GE(sent.load(), 4) << c.output();
  std::this_thread::sleep_for(300ms);
  ASSERT_EQ(::kill(-c.pid, SIGINT), 0);  // the group: timeout and agentperf; timeout relays it twice more
  const int code = c.wait(60s);
  const std::string out = c.output();
  EXPECT_EQ(code, 130) << out;
  EXPECT_EQ(out.find("second signal:"), std::string::npos) << out;  // one stop, not a cancel
  auto agg = aggregate(dir);
  EXPECT_FALSE(agg["complete"].get<bool>());
  const auto recs = jsonl(dir / "profile_export.jsonl");
  EXPECT_EQ(static_cast<int>(recs.size()), sent.load()) << out;
  EXPECT_EQ(agg["cancelled_request_count"]["avg"].get<double>(), 0.0) << out;  // the grace period let them finish
  fs::remove_all(dir);
  fs::remove(c.log);
}

// A second Ctrl-C, pressed later: the requests in flight are cancelled at
// once instead of after the grace period, and still recorded, with the
// aggregate. A third exits at once.
TEST(RunEndings, ASecondSignalCancelsInFlightAtOnceAndStillWritesEverything) {
  std::atomic<int> sent{0};
  auto paced = agentperf::testserver::paced_openai_handler(100ms, 100ms);  // 50 tokens: 5 s a request
  ScriptedServer server([&](const ReceivedRequest& req) {
    if (req.target != "/v1/models") ++sent;
    return paced(req);
  });
  server.start();
  const auto dir = temp_dir("twice");
  Child c("profile --url " + server.url() + " --endpoint-type completions -c 4 -d 60 --osl 50 --grace-period 60 -o " +
              dir.string(),
          dir.parent_path() / ("agentperf_end_twice_log_" + std::to_string(::getpid())));
  for (int i = 0; i < 400 && sent.load() < 4; ++i) std::this_thread::sleep_for(25ms);
  ASSERT_GE(sent.load(), 4) << c.output();
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(c.pid, SIGINT);
  std::this_thread::sleep_for(600ms);
  ::kill(c.pid, SIGINT);
  const int code = c.wait(60s);
  const auto took = std::chrono::steady_clock::now() - t0;
  const std::string out = c.output();
  EXPECT_EQ(code, 130) << out;
  EXPECT_LT(took, 20s) << out;  // not the 60 s grace period
  EXPECT_NE(out.find("second signal: cancelling the requests in flight"), std::string::npos) << out;
  // Cancellations are shown as cancellations, not as server errors.
  EXPECT_NE(out.find("  cancelled x"), std::string::npos) << out;
  EXPECT_EQ(out.find("  error x"), std::string::npos) << out;
  auto agg = aggregate(dir);
  EXPECT_FALSE(agg["complete"].get<bool>());
  const auto recs = jsonl(dir / "profile_export.jsonl");
  EXPECT_EQ(static_cast<int>(recs.size()), sent.load()) << out;
  EXPECT_GE(agg["cancelled_request_count"]["avg"].get<double>(), 1.0) << out;
  fs::remove_all(dir);
  fs::remove(c.log);
}

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

// A SIGKILL at a random moment of a fast run (hundreds of requests a
// second): every request the server had finished answering more than 50 ms
// before the kill has its record on disk. The writer used to flush on a
// 100 ms timer, which lost the newest 8-17 finished records; now it writes
// whatever has finished at once, so only what it was serialising at the
// instant of the kill can be missing (docs/exit-codes.md). The server runs
// in this process, so its write stamps and the kill share one clock.
TEST(RunEndings, SigkillAtARandomMomentLosesNoRecordFinishedBeforeIt) {
  agentperf::testserver::ServerOptions opts;
  opts.record_write_times = true;
  auto instant = agentperf::testserver::paced_openai_handler(0ns, 0ns);
  std::mutex ids_mu;
  std::vector<std::string> ids;
  ScriptedServer server(
      [&](const ReceivedRequest& req) {
        if (req.target != "/v1/models") {
          std::lock_guard lk(ids_mu);
          ids.push_back(req.header("x-request-id"));
        }
        return instant(req);
      },
      opts);
  server.start();
  const auto dir = temp_dir("kill_random");
  Child c("profile --url " + server.url() + " --endpoint-type completions -c 4 -d 60 --osl 8 -q --no-model-check -o " +
              dir.string(),
          dir / "log");
  ASSERT_GE(wait_for_lines(dir / "profile_export.jsonl", 20, 20s), 20u) << c.output();
  const auto seed = static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count());
  const auto delay = std::chrono::milliseconds(200 + seed % 1300);
  std::this_thread::sleep_for(delay);
  const std::int64_t kill_ns = agentperf::monotonic_ns();
  ::kill(c.pid, SIGKILL);
  EXPECT_EQ(c.wait(), 128 + SIGKILL);

  std::set<std::string> on_disk;
  for (const auto& r : jsonl(dir / "profile_export.jsonl")) on_disk.insert(r["metadata"]["x_request_id"].get<std::string>());
  std::vector<std::string> answered;
  {
    std::lock_guard lk(ids_mu);
    answered = ids;
  }
  std::size_t finished_before = 0, lost = 0, recent_missing = 0;
  for (const auto& id : answered) {
    const auto stamps = server.write_times(id);
    if (stamps.empty() || stamps.back() >= kill_ns) continue;  // not finished at the kill
    if (stamps.back() < kill_ns - 50'000'000) {
      ++finished_before;
      if (!on_disk.count(id)) ++lost;
    } else if (!on_disk.count(id)) {
      ++recent_missing;
    }
  }
  server.stop();
  EXPECT_GT(finished_before, 100u) << "killed after " << delay.count() << " ms";
  EXPECT_EQ(lost, 0u) << lost << " of " << finished_before << " requests answered over 50 ms before the kill (after "
                      << delay.count() << " ms) have no record; " << recent_missing << " answered in its last 50 ms";
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

TEST(RunEndings, RequestIdsDifferAcrossRunsAndPromptsDifferUnlessSeeded) {
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
  // Runs 0 and 1 give --random-seed 7; runs 2 and 3 take the default, a
  // fresh seed per run, which they print.
  for (int run = 0; run < 4; ++run) {
    const auto dir = temp_dir("ids" + std::to_string(run));
    const std::string seed = run < 2 ? " --random-seed 7" : "";
    ASSERT_EQ(run_cli("profile --url " + server.url() + " --endpoint-type completions -c 1 -n 3 -o " + dir.string() + seed,
                      &out),
              0)
        << out;
    if (run >= 2) {
      EXPECT_NE(out.find("prompts from seed "), std::string::npos) << out;
      // The seed used is recorded, and repeats the run's prompts.
      EXPECT_TRUE(aggregate(dir)["input_config"]["load"]["random_seed"].is_number_unsigned()) << out;
    }
    fs::remove_all(dir);
  }
  ASSERT_EQ(seen.size(), 12u);
  std::set<std::string> ids;
  for (const auto& [id, body] : seen) ids.insert(id);
  EXPECT_EQ(ids.size(), 12u);
  auto body = [&](int i) { return seen[static_cast<std::size_t>(i)].second; };
  for (int i = 0; i < 3; ++i) EXPECT_EQ(body(i), body(i + 3));  // seeded: the same prompts
  for (int i = 6; i < 9; ++i) EXPECT_NE(body(i), body(i + 3));  // default: fresh prompts

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

// ---- Result folders: one run at a time, no silent overwrite, fresh prompts ----

TEST(RunEndings, ASecondRunIntoAFolderInUseFailsAtOnceAndTheFirstCompletesIntact) {
  ScriptedServer server(agentperf::testserver::paced_openai_handler(20ms, 20ms));
  server.start();
  const auto dir = temp_dir("shared");
  Child first("profile --url " + server.url() + " --endpoint-type completions -c 2 -n 30 --osl 10 -q -o " + dir.string(),
              dir.parent_path() / ("agentperf_end_shared_log_" + std::to_string(::getpid())));
  ASSERT_GE(wait_for_lines(dir / "profile_export.jsonl", 2, 20s), 2u) << first.output();
  std::string out;
  const int second = run_cli("profile --url " + server.url() + " --endpoint-type completions -c 2 -n 30 --osl 10 -q -o " +
                                 dir.string() + " --overwrite",
                             &out);
  EXPECT_EQ(second, 2) << out;
  EXPECT_NE(out.find("is in use by another run (pid "), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;  // one line
  EXPECT_EQ(first.wait(), 0) << first.output();
  const auto recs = jsonl(dir / "profile_export.jsonl");  // throws on a torn line
  EXPECT_EQ(recs.size(), 30u);
  EXPECT_EQ(aggregate(dir)["request_count"]["avg"].get<double>(), 30.0);
  // A later run into the finished folder is refused without --overwrite ...
  EXPECT_EQ(run_cli("profile --url " + server.url() + " --endpoint-type completions -c 1 -n 2 -q -o " + dir.string(), &out), 2);
  EXPECT_NE(out.find("holds an earlier run's results"), std::string::npos) << out;
  EXPECT_EQ(jsonl(dir / "profile_export.jsonl").size(), 30u);
  // ... and replaces it with it.
  EXPECT_EQ(run_cli("profile --url " + server.url() + " --endpoint-type completions -c 1 -n 2 -q --overwrite -o " + dir.string(),
                    &out),
            0)
      << out;
  EXPECT_EQ(jsonl(dir / "profile_export.jsonl").size(), 2u);
  fs::remove_all(dir);
}

TEST(RunEndings, WithoutOutputFolderEachRunGetsItsOwnAndLatestPointsAtIt) {
  ScriptedServer server(agentperf::testserver::paced_openai_handler(1ms, 1ms));
  server.start();
  const auto cwd = temp_dir("cwd");
  std::string out;
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(run_cli("profile --url " + server.url() + " --endpoint-type completions -c 1 -n 2", &out,
                      "cd " + cwd.string() + " && "),
              0)
        << out;
  std::vector<fs::path> runs;
  for (const auto& e : fs::directory_iterator(cwd / "artifacts"))
    if (!fs::is_symlink(e.path())) runs.push_back(e.path());
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& r : runs) {
    EXPECT_EQ(r.filename().string().rfind("agentperf-paced-openai-completions-concurrency1-", 0), 0u) << r;
    EXPECT_EQ(jsonl(r / "profile_export.jsonl").size(), 2u);
  }
  EXPECT_NE(out.find("results go to artifacts/agentperf-paced-openai-completions-concurrency1-"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(cwd / "artifacts" / "latest" / "profile_export_aiperf.json"));
  fs::remove_all(cwd);
}

// Back-to-back default runs against a server with a prefix cache (sim
// serve) see no cached prompt tokens; with one --random-seed the second
// run would measure the cache, and the aggregate and console say so.
TEST(RunEndings, BackToBackDefaultRunsMeasureNoCacheAndARepeatedSeedIsFlagged) {
  auto backend = agentperf::test_support::start_sim_backend(100);
  const auto dir = temp_dir("fresh");
  auto run = [&](const std::string& name, const std::string& extra, std::string* out) {
    const int code = run_cli("profile --url " + backend->url() + " --endpoint-type completions -c 2 -n 8 --isl 512 --osl 8 -o " +
                                 (dir / name).string() + extra,
                             out);
    EXPECT_EQ(code, 0) << *out;
    return aggregate(dir / name);
  };
  auto cached = [](const nlohmann::json& agg) {
    return agg.contains("total_usage_prompt_cache_read_tokens") ? agg["total_usage_prompt_cache_read_tokens"]["avg"].get<double>()
                                                                : 0.0;
  };
  std::string out;
  const auto a = run("a", "", &out);
  const auto b = run("b", "", &out);
  EXPECT_LT(cached(b), 0.05 * 8 * 512) << out;
  EXPECT_FALSE(a.contains("unexpected_prefix_cache"));
  EXPECT_FALSE(b.contains("unexpected_prefix_cache"));
  run("c", " --random-seed 5", &out);
  const auto d = run("d", " --random-seed 5", &out);
  EXPECT_GT(cached(d), 0.5 * 8 * 512) << out;
  ASSERT_TRUE(d.contains("unexpected_prefix_cache")) << d.dump();
  EXPECT_GT(d["unexpected_prefix_cache"]["cached_prompt_share"].get<double>(), 0.5);
  EXPECT_NE(out.find("Warning: the server reported"), std::string::npos) << out;
  fs::remove_all(dir);
}

// Per-GPU throughput divides by the deployment's GPUs: InferenceX's
// launcher exports TP (and EP_SIZE, DP_ATTENTION) for its process, and a
// replay under it used to divide by 1 (72,960 tok/s/GPU where InferenceX's
// own file said 18,240 at TP4). Console, files and report agree, and the
// aggregate says where the count came from.
TEST(RunEndings, ReplayThroughputPerGpuFollowsTheDeploymentsTp) {
  auto backend = agentperf::test_support::start_sim_backend(50);
  const auto dir = temp_dir("gpus");
  std::string out;
  ASSERT_EQ(run_cli("traces synth --traces 4 --mean-turns 4 -o " + (dir / "t.jsonl").string(), &out), 0) << out;
  ASSERT_EQ(run_cli("replay --url " + backend->url() + " --traces " + (dir / "t.jsonl").string() +
                        " --lanes 2 -d 4 --no-warmup -o " + (dir / "out").string(),
                    &out, "TP=4 EP_SIZE=1 "),
            0)
      << out;
  EXPECT_NE(out.find("throughput per GPU over 4 GPUs (InferenceX variables"), std::string::npos) << out;
  auto agg = aggregate(dir / "out");
  const auto& tp = agg["inferencex"]["throughput"];
  EXPECT_EQ(tp["num_gpus"].get<int>(), 4);
  const double total = tp["total"]["tokens_per_second"].get<double>();
  EXPECT_NEAR(tp["per_gpu"]["total_tput_tps"].get<double>() * 4, total, 1e-6 * total);
  EXPECT_EQ(agg["run_description"]["gpus"].get<int>(), 4);
  EXPECT_NE(agg["run_description"]["gpus_source"].get<std::string>().find("InferenceX"), std::string::npos);
  // The console line prints the same per-GPU figure.
  char want[64];
  std::snprintf(want, sizeof want, "InferenceX: %.1f total tok/s/GPU", tp["per_gpu"]["total_tput_tps"].get<double>());
  EXPECT_NE(out.find(want), std::string::npos) << out;
  // The report takes the count from the run.
  const auto r = agentperf::report::report_data({(dir / "out").string()}, agentperf::report::ReportOptions{});
  EXPECT_EQ(r["points"][0]["gpus"].get<int>(), 4) << r["points"][0].dump();
  // --gpus wins and says so.
  ASSERT_EQ(run_cli("replay --url " + backend->url() + " --traces " + (dir / "t.jsonl").string() +
                        " --lanes 2 -d 2 --no-warmup --gpus 2 -q -o " + (dir / "out2").string(),
                    &out, "TP=4 "),
            0)
      << out;
  EXPECT_EQ(aggregate(dir / "out2")["inferencex"]["throughput"]["num_gpus"].get<int>(), 2);
  EXPECT_EQ(aggregate(dir / "out2")["run_description"]["gpus_source"].get<std::string>(), "--gpus");
  fs::remove_all(dir);
}

// A socket per request in flight: a closed loop larger than the open-file
// limit used to fail mid-run with EMFILE reported as "Operation canceled".
// The soft limit is raised to the hard one at start, and a load that still
// cannot fit is refused before anything is sent, naming the limit and the fix.
TEST(RunEndings, TheOpenFileLimitIsRaisedAndALoadThatCannotFitIsRefused) {
  ScriptedServer server(agentperf::testserver::paced_openai_handler(5ms, 1ms));
  server.start();
  const auto dir = temp_dir("nofile");
  std::string out;
  EXPECT_EQ(run_cli("profile --url " + server.url() + " --endpoint-type completions -c 1000 -n 1000 -q -o " +
                        (dir / "a").string(),
                    &out, "ulimit -n 512 && "),  // soft and hard
            2)
      << out;
  EXPECT_NE(out.find("--concurrency 1000 needs about 1064 open files"), std::string::npos) << out;
  EXPECT_NE(out.find("RLIMIT_NOFILE, hard limit 512"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir / "a" / "profile_export.jsonl"));  // nothing was sent
  // A soft limit below the load, a hard one above it: raised, and the run is clean.
  ASSERT_EQ(run_cli("profile --url " + server.url() + " --endpoint-type completions -c 400 -n 800 --osl 2 -q -o " +
                        (dir / "b").string(),
                    &out, "ulimit -S -n 256 && "),
            0)
      << out;
  EXPECT_EQ(aggregate(dir / "b")["error_request_count"]["avg"].get<double>(), 0.0);
  fs::remove_all(dir);
}

// The server's word where the client can check it: a usage count the
// request or the stream rules out, and a stream that ends with neither
// [DONE] nor a finish reason, are warned of in the record and the summary
// (they used to pass silently: completion_tokens 1e15 gave OSL 1e15, exit 0).
TEST(RunEndings, ImpossibleUsageAndAStreamWithoutDoneAreFlagged) {
  struct Case {
    std::vector<std::string> events;
    const char* warning;
  };
  const std::vector<Case> cases = {
      {{R"({"choices":[{"text":"ab","finish_reason":null}]})",
        R"({"choices":[{"text":"c","finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":1000000000000000}})",
        "[DONE]"},
       "usage_over_max_tokens"},
      {{R"({"choices":[{"text":"ab","finish_reason":null}]})", R"({"choices":[{"text":"c","finish_reason":null}]})"},
       "stream_ended_without_done"},
      // A finish reason without [DONE] is a whole answer (some servers omit [DONE]).
      {{R"({"choices":[{"text":"ab","finish_reason":null}]})", R"({"choices":[{"text":"c","finish_reason":"stop"}]})"}, nullptr},
  };
  for (const auto& c : cases) {
    ScriptedServer server(sse_server(c.events));
    server.start();
    const auto dir = temp_dir("usage");
    std::string out;
    run_cli("profile --url " + server.url() + " --endpoint-type completions -c 1 -n 3 --osl 16 -o " + dir.string(), &out);
    const auto agg = aggregate(dir);
    for (const auto& r : jsonl(dir / "profile_export.jsonl")) {
      if (c.warning) EXPECT_EQ(r["metadata"].value("warning", ""), c.warning) << r.dump();
      else EXPECT_FALSE(r["metadata"].contains("warning")) << r.dump();
    }
    if (c.warning) {
      EXPECT_EQ(agg["warning_summary"][c.warning], 3) << agg["warning_summary"].dump();
      EXPECT_NE(out.find(std::string("warning x3: ") + c.warning), std::string::npos) << out;
    } else {
      EXPECT_TRUE(agg["warning_summary"].empty()) << agg["warning_summary"].dump();
    }
    fs::remove_all(dir);
  }
}

// The aiperf drop-in as InferenceX's DP-attention launchers run it: they
// export AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID=true so that a
// gateway keeps each session on the rank holding its prefix. AIPerf's
// session-header variables are honoured as AIPerf does (each header carries
// the request's X-Correlation-ID; X-Session-Affinity is on unless turned off).
TEST(RunEndings, AiperfSessionHeaderVariablesAreHonoured) {
  std::mutex mu;
  std::vector<std::map<std::string, std::string>> seen;
  auto paced = agentperf::testserver::paced_openai_handler(1ms, 1ms);
  ScriptedServer server([&](const ReceivedRequest& req) {
    if (req.target != "/v1/models") {
      std::lock_guard lk(mu);
      std::map<std::string, std::string> h;
      for (const char* k : {"x-correlation-id", "x-smg-routing-key", "x-session-id", "x-session-affinity",
                            "x-dynamo-session-id"})
        h[k] = req.header(k);
      seen.push_back(h);
    }
    return paced(req);
  });
  server.start();
  const auto dir = temp_dir("sessionhdr");
  std::string out;
  ASSERT_EQ(run_cli("traces synth --traces 3 --mean-turns 3 -o " + (dir / "t.jsonl").string(), &out), 0) << out;
  const std::string replay = "replay --url " + server.url() + " --traces " + (dir / "t.jsonl").string() +
                             " --lanes 1 -d 1 --no-warmup -q -o ";
  run_cli(replay + (dir / "a").string(), &out,
          "AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID=true AIPERF_HTTP_X_DYNAMO_SESSION_ID_FROM_CORRELATION_ID=1 "
          "AIPERF_HTTP_X_SESSION_AFFINITY_FROM_CORRELATION_ID=false ");
  {
    std::lock_guard lk(mu);
    ASSERT_FALSE(seen.empty()) << out;
    for (auto& h : seen) {
      EXPECT_FALSE(h["x-correlation-id"].empty());
      EXPECT_EQ(h["x-smg-routing-key"], h["x-correlation-id"]);
      EXPECT_EQ(h["x-dynamo-session-id"], h["x-correlation-id"]);
      EXPECT_EQ(h["x-session-affinity"], "");
      EXPECT_EQ(h["x-session-id"], "");
    }
    seen.clear();
  }
  run_cli(replay + (dir / "b").string(), &out);  // AIPerf's defaults: X-Session-Affinity only
  {
    std::lock_guard lk(mu);
    ASSERT_FALSE(seen.empty()) << out;
    for (auto& h : seen) {
      EXPECT_EQ(h["x-session-affinity"], h["x-correlation-id"]);
      EXPECT_EQ(h["x-smg-routing-key"], "");
    }
  }
  fs::remove_all(dir);
}

// --repeat N: the point N times, each with fresh prompts in its own folder,
// and the spread across the runs, which one run's intervals cannot show.
TEST(RunEndings, RepeatRunsThePointNTimesAndReportsTheSpread) {
  std::mutex mu;
  std::set<std::string> bodies;
  auto paced = agentperf::testserver::paced_openai_handler(2ms, 1ms);
  ScriptedServer server([&](const ReceivedRequest& req) {
    if (req.target != "/v1/models") {
      std::lock_guard lk(mu);
      bodies.insert(req.body);
    }
    return paced(req);
  });
  server.start();
  const auto dir = temp_dir("repeat");
  std::string out;
  ASSERT_EQ(run_cli("profile --url " + server.url() + " --endpoint-type completions -c 2 -n 6 --osl 4 --repeat 3 -q -o " +
                        dir.string(),
                    &out),
            0)
      << out;
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(jsonl(dir / ("run-" + std::to_string(i)) / "profile_export.jsonl").size(), 6u) << i;
  EXPECT_EQ(bodies.size(), 18u);  // every run its own prompts
  const auto s = nlohmann::json::parse(slurp(dir / "repeat_summary.json"));
  EXPECT_EQ(s["runs"], 3);
  const auto& ttft = s["metrics"]["time_to_first_token.avg"];
  EXPECT_EQ(ttft["values"].size(), 3u);
  EXPECT_GE(ttft["sd"].get<double>(), 0.0);
  EXPECT_LE(ttft["min"].get<double>(), ttft["mean"].get<double>());
  EXPECT_NE(out.find("Across 3 runs:"), std::string::npos) << out;
  fs::remove_all(dir);
}
