// The progress line of every long step, from the real binary with stderr
// captured (not a terminal): label, done/total, rate and ETA while it runs,
// the final line, and nothing with -q. AGENTPERF_PROGRESS_INTERVAL=0.01
// asks for a line every 10 ms (a log otherwise gets one per 10 s); each
// workload below takes well over that (0.3-2 s), so lines come whatever
// the machine's speed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include "support/shell_run.h"

namespace fs = std::filesystem;

namespace {

struct ProgressOutcome {
  int code;
  std::string err;  // stderr only
};

ProgressOutcome run_cli(const std::string& args, const std::string& interval = "0.01") {
  const std::string cmd = "AGENTPERF_PROGRESS_INTERVAL=" + interval + " " + std::string(AGENTPERF_CLI_PATH) + " " +
                          args + " 2>&1 >/dev/null";
  const auto r = agentperf::test_support::run_shell(cmd);
  return {r.code, r.output};
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  std::size_t at = 0;
  for (std::size_t nl; (nl = s.find('\n', at)) != std::string::npos; at = nl + 1) v.push_back(s.substr(at, nl - at));
  if (at < s.size()) v.push_back(s.substr(at));
  return v;
}

int count_matching(const std::string& err, const std::string& pattern) {
  const std::regex re(pattern);
  int n = 0;
  for (const auto& l : lines_of(err)) n += std::regex_match(l, re);
  return n;
}

// "N/T unit (P%) | R unit/s | ETA X" while in progress, with N < T.
std::string in_progress(const std::string& label, const std::string& total, const std::string& unit,
                        const std::string& rate_unit) {
  return label + ": [0-9.]+/" + total + " " + unit + " \\([0-9]+%\\) \\| [0-9.]+ " + rate_unit +
         "/s \\| ETA [0-9.]+(s|m[0-9]{2}s)";
}

const fs::path& work_dir() {
  static const fs::path d = [] {
    auto p = fs::temp_directory_path() / ("agentperf_progress_" + std::to_string(::getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
  }();
  return d;
}

// 40 traces of the AgentX-shaped preset (~9,000 requests, 0.5 MB zstd).
const fs::path& traces_file() {
  static std::once_flag once;
  static const fs::path f = work_dir() / "cc40.jsonl.zst";
  std::call_once(once, [] {
    const auto r = run_cli("traces synth --preset cc-weka-256k --traces 40 -q -o " + f.string());
    ASSERT_EQ(r.code, 0) << r.err;
  });
  return f;
}

// Sessions that fit a small model's 40k context (the sweep's default shape).
const fs::path& small_traces_file() {
  static std::once_flag once;
  static const fs::path f = work_dir() / "small40.jsonl.zst";
  std::call_once(once, [] {
    const auto r = run_cli("traces synth --traces 40 --max-context 32768 --system-tokens 4000 --tool-tokens 1000 "
                           "--mean-turn-input 1500 --mean-output 200 --mean-think-time 2 -q -o " + f.string());
    ASSERT_EQ(r.code, 0) << r.err;
  });
  return f;
}

}  // namespace

TEST(ProgressLines, TracesSynth) {
  const auto out = work_dir() / "synth.jsonl.zst";
  const auto r = run_cli("traces synth --preset cc-weka-256k --traces 40 -o " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GE(count_matching(r.err, in_progress("agentperf: synthesizing traces", "40", "traces", "traces")), 1) << r.err;
  EXPECT_EQ(count_matching(r.err, "agentperf: synthesizing traces: finished 40/40 traces in [0-9.]+s \\([0-9.]+ "
                                  "traces/s\\); [0-9]+ requests, [0-9]+ MB of JSON"),
            1)
      << r.err;
  const auto q = run_cli("traces synth --preset cc-weka-256k --traces 40 -q -o " + out.string());
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_EQ(q.err, "");
}

// One step: each trace's session tree and prompts are built as the file is
// read (the file is streamed, never held whole), so the progress is MB of
// the file read, of its size on disk.
TEST(ProgressLines, TracesInspectReadsAndBuildsInOneStep) {
  const auto r = run_cli("traces inspect " + traces_file().string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto mb = fs::file_size(traces_file());
  char size[32];
  std::snprintf(size, sizeof size, "%.1f", static_cast<double>(mb) / 1e6);
  const std::string label = "agentperf: loading traces and building session trees and prompts";
  EXPECT_EQ(count_matching(r.err, label + ": finished " + std::string(size) + "/" + size +
                                      " MB in [0-9.]+s \\([0-9.]+ MB/s\\); 40 traces \\([0-9]+ requests\\)"),
            1)
      << r.err;
  // Its own lines: a file read in 1 MB pieces, each trace's prompts built in between.
  EXPECT_GE(count_matching(r.err, in_progress(label, std::string(size), "MB", "MB")), 1) << r.err;
  EXPECT_EQ(r.err.find("agentperf: building session trees"), std::string::npos) << r.err;
  const auto q = run_cli("traces inspect -q " + traces_file().string());
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_EQ(q.err, "");
}

TEST(ProgressLines, PlanLoadsTheTraces) {
  const std::string recipe = std::string(AGENTPERF_RECIPES_DIR) + "/sim-qwen3-8b-h200.yaml";
  const auto r = run_cli("plan " + recipe + " --traces " + traces_file().string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GE(count_matching(r.err, in_progress("agentperf: loading traces", "[0-9.]+", "MB", "MB")), 1) << r.err;
  EXPECT_EQ(count_matching(r.err, "agentperf: loading traces: finished ([0-9.]+)/[0-9.]+ MB in .*; 40 traces \\([0-9]+ "
                                  "requests\\)"),
            1)
      << r.err;
  // A synthetic corpus counts traces made.
  const auto s = run_cli("plan " + recipe + " --traces synth:cc-weka-256k");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_GE(count_matching(s.err, in_progress("agentperf: loading traces", "393", "traces", "traces")), 1) << s.err;
  EXPECT_EQ(count_matching(s.err, "agentperf: loading traces: finished 393/393 traces in .*; 393 traces \\([0-9]+ requests\\)"), 1)
      << s.err;
  const auto q = run_cli("plan -q " + recipe + " --traces " + traces_file().string());
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_EQ(q.err, "");
}

// The replay builds its dataset (loads and filters the traces) before it
// sends anything: the line comes even when the server then is not there.
TEST(ProgressLines, ReplayLoadsItsDatasetBeforeSending) {
  const auto r = run_cli("replay --url http://127.0.0.1:1 --connect-attempts 1 --traces " + traces_file().string() +
                         " --num-dataset-entries 30 -c 2 -d 5 -o " + (work_dir() / "replay").string());
  EXPECT_EQ(r.code, 2) << r.err;  // unreachable
  EXPECT_GE(count_matching(r.err, in_progress("agentperf: loading traces", "[0-9.]+", "MB", "MB")), 1) << r.err;
  EXPECT_EQ(count_matching(r.err, "agentperf: loading traces: finished .* MB in .*; 30 traces \\([0-9]+ requests\\) "
                                  "kept of 40 \\([0-9]+\\)"),
            1)
      << r.err;
  const auto q = run_cli("replay -q --url http://127.0.0.1:1 --connect-attempts 1 --traces " + traces_file().string() +
                         " -c 2 -d 5 -o " + (work_dir() / "replay").string());
  EXPECT_EQ(q.code, 2) << q.err;
  EXPECT_EQ(q.err.find("loading traces"), std::string::npos) << q.err;
}

TEST(ProgressLines, SimPredictTracesCountsVirtualSecondsOfTheDuration) {
  const std::string engine = "sim predict --model-spec qwen3-8b --hardware h200 ";
  const auto r = run_cli(engine + "--traces " + small_traces_file().string() + " -c 16 -d 600");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count_matching(r.err, "agentperf: loading traces: finished .*; 40 traces \\([0-9]+ requests\\)"), 1) << r.err;
  EXPECT_GE(count_matching(r.err, in_progress("agentperf: predicting", "600", "virtual s", "virtual s")), 1) << r.err;
  EXPECT_EQ(count_matching(r.err, "agentperf: predicting: finished 600/600 virtual s in [0-9.]+s \\([0-9.]+ virtual "
                                  "s/s\\); [0-9]+ requests"),
            1)
      << r.err;
  const auto q = run_cli(engine + "-q --traces " + small_traces_file().string() + " -c 16 -d 600");
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_EQ(q.err, "");
}

TEST(ProgressLines, SimPredictSyntheticCountsRequestsSent) {
  const std::string cmd = "sim predict --model-spec qwen3-8b --hardware h200 -c 32 -n 8000 --isl 1000 --osl 200";
  const auto r = run_cli(cmd);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GE(count_matching(r.err, in_progress("agentperf: predicting", "8000", "requests sent", "requests sent")), 1)
      << r.err;
  EXPECT_EQ(count_matching(r.err, "agentperf: predicting: finished 8000/8000 requests sent in .*; 8000 requests"), 1)
      << r.err;
  const auto q = run_cli(cmd + " -q");
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_EQ(q.err, "");
}

// One line per settled point whatever the interval, pruned points counted
// in, points the adaptive search adds raising the total.
TEST(ProgressLines, SweepDryRunPrintsOneLinePerPoint) {
  const auto dir = work_dir() / "sweep";
  fs::create_directories(dir);
  std::ofstream(dir / "recipe.yaml") << R"(name: progress-ci
model: Qwen/Qwen3-8B
framework: sim
sim: {model-spec: qwen3-8b, hardware: h200}
scenarios:
  agentic-coding:
    - search-space:
        - {tp: 1, kv-offloading: none, conc-list: [2, 4, 8, 16]}
server:
  command: agentperf sim serve --model-spec qwen3-8b --hardware h200 --port {port}
replay: {duration: 60, grace: 5}
)";
  const std::string cmd = "sweep " + (dir / "recipe.yaml").string() + " --dry-run --restart -o " + (dir / "out").string();
  const auto r = run_cli(cmd, "600");  // a long interval: the sweep's lines do not wait for it
  ASSERT_EQ(r.code, 0) << r.err;
  const std::regex line("agentperf sweep: progress: ([0-9]+)/([0-9]+) points \\([0-9]+%\\) \\| [0-9.]+ (points/s|s "
                        "each)( \\| ETA [0-9.]+(s|m[0-9]{2}s))?");
  std::vector<int> done;
  int total = 0, with_eta = 0;
  for (const auto& l : lines_of(r.err)) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    done.push_back(std::stoi(m[1]));
    total = std::stoi(m[2]);
    const bool last = std::stoi(m[1]) == std::stoi(m[2]);
    EXPECT_EQ(m[4].matched, !last) << l;  // an ETA until the last point
    with_eta += m[4].matched;
  }
  ASSERT_GE(done.size(), 2u) << r.err;
  EXPECT_GE(total, 4) << r.err;
  for (std::size_t i = 1; i < done.size(); ++i) EXPECT_GT(done[i], done[i - 1]) << r.err;
  EXPECT_EQ(done.back(), total) << r.err;
  EXPECT_GE(with_eta, 1) << r.err;
  EXPECT_EQ(count_matching(r.err, "agentperf sweep: progress: finished " + std::to_string(total) + "/" +
                                      std::to_string(total) + " points in .*; [0-9]+ measured, .*"),
            1)
      << r.err;
  // Each point's line carries its throughput interval; a point resting on
  // a few session trees (2 lanes for 60 s) says it is not firm.
  EXPECT_GE(count_matching(r.err, "agentperf sweep: .*_conc[0-9]+: done  tput/GPU [0-9.]+ \\[[0-9.]+, [0-9.]+\\] tok/s, .*"),
            2)
      << r.err;
  EXPECT_EQ(count_matching(r.err, "agentperf sweep: .*_conc[0-9]+: done  tput/GPU [0-9.]+ tok/s, .*"), 0) << r.err;
  EXPECT_GE(count_matching(r.err, ".*_conc2: done .*\\(small sample: not firm\\)"), 1) << r.err;
  const auto q = run_cli(cmd + " -q");
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_EQ(q.err.find("progress"), std::string::npos) << q.err;
}
