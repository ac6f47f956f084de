// Sweeps end to end: server processes (start, readiness, stop), and a full
// sweep of a simulator recipe with real `agentperf sim serve` servers,
// SQLite store, an interrupted run resumed, and the frontier.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <functional>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/run_control.h"
#include "recipe/recipe.h"
#include "sweep/results_store.h"
#include "sweep/server_process.h"
#include "sweep/sweep_runner.h"
#include "support/shell_run.h"

using namespace agentperf;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {
fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("agentperf_sweep_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

int run(const std::string& cmd, std::string* out = nullptr) {
  auto r = agentperf::test_support::run_shell(cmd + " 2>&1");
  if (out) *out = std::move(r.output);
  return r.code;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Starts `args` (argv[0] a path) with stdout and stderr to `log`; returns its pid.
pid_t spawn(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string log_path = log.string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// The exit code of a spawned process (-signal if a signal ended it).
int reap(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

bool wait_for(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return cond();
}

// Gone: no such process, or a zombie nobody reaps yet (killed; PID 1 of a
// container may never reap it).
bool process_gone(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return true;
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  const auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z' || stat[close + 2] == 'X';
}

int read_pid(const fs::path& p) {
  std::ifstream in(p);
  int pid = 0;
  in >> pid;
  return pid;
}

// Small synthetic traces for a quick replay against `sim serve`.
void synth_traces(const fs::path& out) {
  ASSERT_EQ(run(std::string(AGENTPERF_CLI_PATH) + " traces synth -o " + out.string() +
                " --traces 12 --mean-turns 6 --system-tokens 400 --tool-tokens 100 --mean-turn-input 300"
                " --mean-output 20 --max-context 20000 --mean-think-time 0.3"),
            0);
}

std::map<std::string, sweep::PointRow> rows_by_name(const fs::path& store, const std::string& sweep_name) {
  std::map<std::string, sweep::PointRow> out;
  if (!fs::exists(store)) return out;
  sweep::ResultsStore s(store.string());
  for (auto& r : s.list(sweep_name)) out[r.exp_name] = r;
  return out;
}

// A recipe whose server never starts: it says something and exits 1.
std::string failing_recipe(const std::string& name, const std::string& conc_list) {
  return "name: " + name + R"(
model: m
framework: sim
scenarios:
  agentic-coding:
    - search-space:
        - {tp: 1, kv-offloading: none, conc-list: )" + conc_list + R"(}
server:
  command: "echo loading weights on port {port}; echo 'boom: no GPU found' >&2; exit 1"
  startup-timeout: 10
replay: {duration: 1, grace: 1, warmup: false}
)";
}
}  // namespace

TEST(ServerProcess, StopsWithSigtermThenSigkill) {
  const auto dir = temp_dir("proc");
  sweep::ServerProcess polite("echo starting; exec sleep 100", {}, (dir / "a.log").string());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(polite.stop(5s), "killed by signal 15 after SIGTERM");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  sweep::ServerProcess stubborn("trap '' TERM; echo ignoring; while true; do sleep 0.05; done", {}, (dir / "b.log").string());
  std::this_thread::sleep_for(200ms);
  const auto ended = stubborn.stop(300ms);
  EXPECT_NE(ended.find("SIGKILL after 300 ms"), std::string::npos) << ended;
  EXPECT_NE(stubborn.log_tail(5).find("ignoring"), std::string::npos);
}

TEST(ServerProcess, ReadinessFailureNamesTheReasonAndShowsTheLog) {
  const auto dir = temp_dir("ready");
  sweep::ServerProcess dying("echo 'loading weights'; echo 'CUDA out of memory' >&2; exit 3", {{"FOO", "bar"}},
                             (dir / "c.log").string());
  try {
    sweep::wait_until_ready(dying, "http://127.0.0.1:" + std::to_string(sweep::free_local_port()), 10s);
    FAIL() << "no error";
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("exited with status 3 before it was ready"), std::string::npos) << m;
    EXPECT_NE(m.find("CUDA out of memory"), std::string::npos) << m;
  }
  // A live process that never answers: the timeout, with the last probe's error.
  sweep::ServerProcess silent("exec sleep 100", {}, (dir / "d.log").string());
  try {
    sweep::wait_until_ready(silent, "http://127.0.0.1:" + std::to_string(sweep::free_local_port()), 1200ms);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("not ready after"), std::string::npos) << e.what();
  }
}

TEST(Sweep, SimulatorRecipeEndToEndWithResumeAndFrontier) {
  const auto dir = temp_dir("e2e");
  const std::string exe = AGENTPERF_CLI_PATH;
  ASSERT_EQ(run(exe + " traces synth -o " + (dir / "traces.jsonl").string() +
                " --traces 12 --mean-turns 6 --system-tokens 400 --tool-tokens 100 --mean-turn-input 300"
                " --mean-output 20 --max-context 20000 --mean-think-time 0.3"),
            0);
  std::ofstream(dir / "recipe.yaml") << R"(name: sim-ci
model: Qwen/Qwen3-8B
framework: sim
hardware: {gpus-per-node: 8, available-cpu-dram-mib: 1000000}
sim: {model-spec: qwen3-8b, hardware: h200}
scenarios:
  agentic-coding:
    - search-space:
        - {tp: 1, kv-offloading: none, conc-list: [1, 2, 4]}
server:
  command: >-
    agentperf sim serve --model-spec qwen3-8b --hardware h200 --tp {tp} --port {port} --time-scale 20
    --max-running-requests {max_running_requests} --cuda-graph-max-bs {cuda_graph_max_bs} {hicache_args}
  startup-timeout: 30
replay: {duration: 1.5, grace: 5, warmup: false, system-idle-cap: 0.3, traces: traces.jsonl}
)";
  const std::string sweep_cmd = exe + " sweep " + (dir / "recipe.yaml").string() + " --no-adaptive -o " + (dir / "out").string();

  // Interrupt the first run once a point is done (Ctrl-C): the point in
  // progress is stored 'interrupted', the sweep exits 130.
  const std::string recipe_arg = (dir / "recipe.yaml").string(), out_arg = (dir / "out").string(),
                    log_arg = (dir / "first.log").string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log_arg.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(exe.c_str(), exe.c_str(), "sweep", recipe_arg.c_str(), "--no-adaptive", "-o", out_arg.c_str(), nullptr);
    _exit(127);
  }
  const auto store_path = (dir / "out" / "sweep.sqlite").string();
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  bool one_done = false;
  while (!one_done && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(200ms);
    if (!fs::exists(store_path)) continue;
    sweep::ResultsStore s(store_path);
    for (const auto& r : s.list("sim-ci")) one_done = one_done || r.status == "done";
  }
  ASSERT_TRUE(one_done) << "no point finished in 60 s";
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::string first_log;
  {
    std::ifstream in(dir / "first.log");
    first_log.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << first_log;
  {
    sweep::ResultsStore s(store_path);
    const auto rows = s.list("sim-ci");
    int done = 0, interrupted = 0, running = 0;
    for (const auto& r : rows) {
      done += r.status == "done";
      interrupted += r.status == "interrupted";
      running += r.status == "running";
    }
    EXPECT_GE(done, 1) << first_log;
    EXPECT_LE(done, 2) << first_log;
    // The point in progress, to be measured again (none if the signal fell between two points).
    EXPECT_LE(interrupted, 1) << first_log;
    EXPECT_EQ(running, 0) << first_log;
  }

  // Resume: finished points are reused, the rest measured.
  std::string second;
  ASSERT_EQ(run(sweep_cmd, &second), 0) << second;
  EXPECT_NE(second.find("in the store, reused"), std::string::npos) << second;
  sweep::ResultsStore s(store_path);
  const auto rows = s.list("sim-ci");
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.status, "done") << r.exp_name << ": " << r.diagnosis;
    EXPECT_GT(r.total_tput_per_gpu, 0) << r.exp_name;
    EXPECT_GT(r.requests, 0) << r.exp_name;
    EXPECT_TRUE(fs::exists(fs::path(r.result_dir) / "profile_export.jsonl")) << r.exp_name;
    EXPECT_TRUE(fs::exists(r.server_log)) << r.exp_name;
    EXPECT_NE(r.server_command.find("--port"), std::string::npos);
    const auto sm = nlohmann::json::parse(r.server_metrics);
    EXPECT_GT(sm.value("samples", 0), 0) << r.server_metrics;  // /metrics was scraped during the run
    EXPECT_TRUE(sm.contains("sglang:generation_tokens_total")) << r.server_metrics;
  }
  // Throughput per GPU rises with concurrency on an uncongested engine.
  EXPECT_GT(rows[2].total_tput_per_gpu, rows[0].total_tput_per_gpu);
  const auto frontier = nlohmann::json::parse(std::ifstream(dir / "out" / "frontier.json"));
  EXPECT_GE(frontier["frontier"].size(), 1u);
  std::string csv;
  ASSERT_EQ(run(exe + " results export --store " + store_path + " --format csv", &csv), 0) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);  // header + 3 points
  std::string listed;
  ASSERT_EQ(run(exe + " results list --store " + (dir / "out").string(), &listed), 0) << listed;
  EXPECT_NE(listed.find("frontier"), std::string::npos) << listed;
  // Measured on `sim serve --time-scale 20`: stored, and marked in the list.
  for (const auto& r : rows) EXPECT_DOUBLE_EQ(r.time_scale, 20.0) << r.exp_name;
  EXPECT_NE(listed.find("[x20 time scale]"), std::string::npos) << listed;
  EXPECT_NE(listed.find("measured on the simulator served N times faster than real time"), std::string::npos) << listed;
}

TEST(Sweep, EveryPointOfTheShippedSimRecipeStartsItsServer) {
  // The recipe's flags (the launcher's {hicache_args} included) must be ones
  // `agentperf sim serve` accepts: start each point's server and wait for it.
  const auto dir = temp_dir("shipped");
  const auto recipe = recipe::load_recipe(std::string(AGENTPERF_RECIPES_DIR) + "/sim-qwen3-8b-h200.yaml");
  std::set<std::string> seen;
  for (const auto& p : recipe::expand(recipe)) {
    std::string cmd = p.command;
    const int port = sweep::free_local_port();
    cmd.replace(cmd.find("{port}"), 6, std::to_string(port));
    cmd.replace(0, std::string("agentperf").size(), AGENTPERF_CLI_PATH);
    if (!seen.insert(p.entry->kv_offloading).second) continue;  // one point per kind of row
    sweep::ServerProcess server(cmd, recipe.server_env, (dir / (p.exp_name + ".log")).string());
    EXPECT_NO_THROW(sweep::wait_until_ready(server, "http://127.0.0.1:" + std::to_string(port), 20s)) << cmd;
    server.stop(5s);
  }
  EXPECT_EQ(seen.size(), 2u);
}

TEST(Sweep, EmitsASlurmArrayAndDryRunsOnThePredictor) {
  const auto dir = temp_dir("slurm");
  const std::string exe = AGENTPERF_CLI_PATH;
  const std::string recipe = std::string(AGENTPERF_RECIPES_DIR) + "/sim-qwen3-8b-h200.yaml";
  std::string out;
  ASSERT_EQ(run(exe + " sweep " + recipe + " --emit-slurm " + (dir / "slurm").string(), &out), 0) << out;
  std::ifstream in(dir / "slurm" / "sweep.sbatch");
  const std::string script((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(script.find("#SBATCH --array=0-7"), std::string::npos) << script;  // 6 + 2 points
  EXPECT_NE(script.find("--point-index \"$SLURM_ARRAY_TASK_ID\""), std::string::npos);
  EXPECT_EQ(run("bash -n " + (dir / "slurm" / "sweep.sbatch").string()), 0);
  // The whole adaptive search in virtual time.
  ASSERT_EQ(run(exe + " sweep " + recipe + " --dry-run -q -o " + (dir / "dry").string(), &out), 0) << out;
  sweep::ResultsStore s((dir / "dry" / "sweep.sqlite").string());
  int done = 0;
  for (const auto& r : s.list()) {
    EXPECT_EQ(r.mode, "predict");
    done += r.status == "done";
    // Every predicted point names its binding pool, in the store and in
    // the point's sim section, the same.
    if (r.status != "done") continue;
    EXPECT_TRUE(r.binding_pool == "kv" || r.binding_pool == "state" || r.binding_pool == "running_cap" ||
                r.binding_pool == "none")
        << r.exp_name << ": '" << r.binding_pool << "'";
    std::ifstream agg_in(std::filesystem::path(r.result_dir) / "profile_export_aiperf.json");
    const auto agg = nlohmann::json::parse(agg_in);
    EXPECT_EQ(agg["sim"]["binding_pool"], r.binding_pool) << agg["sim"].dump();
  }
  EXPECT_GE(done, 4);
  std::string listed;
  ASSERT_EQ(run(exe + " results list --store " + (dir / "dry" / "sweep.sqlite").string(), &listed), 0) << listed;
  EXPECT_NE(listed.find(" binds "), std::string::npos) << listed;
  // Bad input: a missing recipe and an index outside the points.
  EXPECT_NE(run(exe + " sweep /nonexistent.yaml"), 0);
  ASSERT_NE(run(exe + " sweep " + recipe + " --dry-run --point-index 99 -o " + (dir / "bad").string(), &out), 0);
  EXPECT_NE(out.find("--point-index 99 is outside 0..7"), std::string::npos) << out;
  // Options of the other kind of sweep are named, not ignored: the engine
  // profile without --dry-run, a Slurm array with it (a measured array).
  ASSERT_EQ(run(exe + " sweep " + recipe + " --engine-profile vllm --emit-slurm " + (dir / "ep").string(), &out), 2);
  EXPECT_NE(out.find("--engine-profile applies to --dry-run"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(dir / "ep" / "sweep.sbatch"));
  ASSERT_EQ(run(exe + " sweep " + recipe + " --dry-run --emit-slurm " + (dir / "ds").string(), &out), 2);
  EXPECT_NE(out.find("--emit-slurm writes a Slurm array of measured points"), std::string::npos) << out;
}

// A DP-attention point of an InferenceX entry (DeepSeek-V4 on B200, TP8
// EP8 DPA, c64) dry-runs as its eight DP ranks behind a session-sticky
// router, stepping in lockstep, not as one TP8 engine: its result says so,
// and every rank serves requests.
TEST(Sweep, ADpAttentionPointDryRunsItsRanksInLockstep) {
  const auto dir = temp_dir("dpa");
  const std::string exe = AGENTPERF_CLI_PATH;
  const std::string entry =
      std::string(AGENTPERF_TEST_DATA_DIR) + "/inferencex/nvidia-master-agentic.yaml#dsv4-fp4-b200-sglang-agentic-hicache-mtp";
  std::string out;
  // Point 10: tp8ep8dpa, conc 64 (`recipe expand` lists them).
  ASSERT_EQ(run(exe + " sweep '" + entry + "' --dry-run --point-index 10 --duration 120 -q -o " + (dir / "dry").string(), &out), 0)
      << out;
  sweep::ResultsStore s((dir / "dry" / "sweep.sqlite").string());
  const auto rows = s.list();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0].exp_name.find("tp8ep8dpa"), std::string::npos) << rows[0].exp_name;
  EXPECT_EQ(rows[0].status, "done") << rows[0].diagnosis;
  std::ifstream in(std::filesystem::path(rows[0].result_dir) / "profile_export_aiperf.json");
  const auto agg = nlohmann::json::parse(in);
  EXPECT_EQ(agg["input_config"]["engine"]["dp"], 8) << agg["input_config"]["engine"].dump();
  EXPECT_EQ(agg["input_config"]["engine"]["dp_attention"], true);
  // An SGLang entry: SGLang's scheduler and shipped profile (a vLLM entry
  // gets vLLM's: MasterConfig.UnmodelledFieldsAreNamed).
  EXPECT_EQ(agg["input_config"]["engine"]["scheduler"], "sglang");
  EXPECT_EQ(agg["input_config"]["engine"]["engine_profile"], "sglang");
  ASSERT_EQ(agg["sim"]["per_engine"].size(), 8u);
  for (const auto& e : agg["sim"]["per_engine"]) EXPECT_GT(e["requests"].get<long long>(), 0) << agg["sim"]["per_engine"].dump();
  std::filesystem::remove_all(dir);
}

// (a) SIGINT while a point of an adaptive row is being measured: that point
// is stored as interrupted (not pruned), the row's other points stay pending
// (no row in the store), the console counts say so, the sweep exits 130;
// SIGTERM gives 143; the resumed sweep measures the point again.
TEST(SweepSignals, AnInterruptedPointIsStoredInterruptedAndTheRestOfItsRowStaysPending) {
  const auto dir = temp_dir("sigint");
  const std::string exe = AGENTPERF_CLI_PATH;
  synth_traces(dir / "traces.jsonl");
  std::ofstream(dir / "recipe.yaml") << R"(name: sig-ci
model: Qwen/Qwen3-8B
framework: sim
sim: {model-spec: qwen3-8b, hardware: h200}
scenarios:
  agentic-coding:
    - search-space:
        - {tp: 1, kv-offloading: none, conc-list: [1, 2, 4]}
server:
  command: agentperf sim serve --model-spec qwen3-8b --hardware h200 --port {port} --time-scale 20
  startup-timeout: 30
replay: {duration: 60, grace: 1, warmup: false, system-idle-cap: 0.3, traces: traces.jsonl}
)";
  const auto out = dir / "out", store = out / "sweep.sqlite";
  const auto server_log = out / "sig-ci_tp1_conc1" / "server.log";
  const std::vector<std::string> cmd = {exe, "sweep", (dir / "recipe.yaml").string(), "-o", out.string(), "--stop-grace", "5"};
  // Signals the sweep once the first point's replay runs: its server says it
  // serves, and the readiness poll (every 0.5 s) has had time to see it.
  auto interrupt_first_point = [&](int sig, const std::string& log) {
    fs::remove(server_log);
    const pid_t pid = spawn(cmd, dir / log);
    const bool replaying = wait_for([&] { return slurp(server_log).find("serving on") != std::string::npos; }, 60s);
    std::this_thread::sleep_for(2s);
    ::kill(pid, sig);
    const int code = reap(pid);
    EXPECT_TRUE(replaying) << slurp(dir / log);
    return code;
  };

  EXPECT_EQ(interrupt_first_point(SIGINT, "first.log"), 130) << slurp(dir / "first.log");
  const std::string first = slurp(dir / "first.log");
  auto rows = rows_by_name(store, "sig-ci");
  ASSERT_EQ(rows.size(), 1u) << first;  // conc 2 and 4: pending, neither pruned nor stored
  const auto& p1 = rows.begin()->second;
  EXPECT_EQ(p1.exp_name, "sig-ci_tp1_conc1");
  EXPECT_EQ(p1.status, "interrupted") << p1.diagnosis;
  EXPECT_NE(p1.diagnosis.find("SIGINT"), std::string::npos) << p1.diagnosis;
  EXPECT_NE(first.find("this run: 0 measured, 0 failed, 0 short-circuited, 0 pruned, 1 interrupted, 2 pending"),
            std::string::npos)
      << first;
  EXPECT_NE(first.find("run the same command again to resume"), std::string::npos) << first;

  // SIGTERM: 143, and the point (not reused: it never finished) is interrupted again.
  EXPECT_EQ(interrupt_first_point(SIGTERM, "second.log"), 143) << slurp(dir / "second.log");
  rows = rows_by_name(store, "sig-ci");
  ASSERT_EQ(rows.size(), 1u) << slurp(dir / "second.log");
  EXPECT_EQ(rows.begin()->second.status, "interrupted");
  EXPECT_NE(rows.begin()->second.diagnosis.find("SIGTERM"), std::string::npos) << rows.begin()->second.diagnosis;
  EXPECT_EQ(slurp(dir / "second.log").find("in the store, reused"), std::string::npos);

  // Resume (short points): the interrupted point is measured, the search runs to its end.
  std::string third;
  std::string resume = exe + " sweep " + (dir / "recipe.yaml").string() + " -o " + out.string() + " --duration 1.5";
  ASSERT_EQ(run(resume, &third), 0) << third;
  rows = rows_by_name(store, "sig-ci");
  ASSERT_EQ(rows.size(), 3u) << third;
  EXPECT_EQ(rows["sig-ci_tp1_conc1"].status, "done") << third;
  for (const auto& [name, r] : rows) {
    EXPECT_NE(r.status, "interrupted") << name;
    EXPECT_NE(r.status, "running") << name;
  }
  EXPECT_NE(third.find(" interrupted (of 3 points"), std::string::npos) << third;
  EXPECT_NE(third.find("0 failed, 0 short-circuited"), std::string::npos) << third;
}

// (b) Points whose server does not start are failed, never measured: in the
// console counts, frontier.json, `results list`; the sweep exits 1.
TEST(Sweep, FailedPointsAreCountedAsFailedNotMeasured) {
  const auto dir = temp_dir("failed");
  const std::string exe = AGENTPERF_CLI_PATH;
  std::ofstream(dir / "recipe.yaml") << failing_recipe("fail-ci", "[1, 2, 4]");
  std::string out;
  // Adaptive: conc 1 fails, so 2 and 4 are past the cliff (pruned).
  EXPECT_EQ(run(exe + " sweep " + (dir / "recipe.yaml").string() + " -o " + (dir / "out").string(), &out), 1) << out;
  EXPECT_NE(out.find("this run: 0 measured, 1 failed, 0 short-circuited, 2 pruned, 0 interrupted (of 3 points"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("1 points measured"), std::string::npos) << out;
  const auto frontier = nlohmann::json::parse(std::ifstream(dir / "out" / "frontier.json"));
  EXPECT_EQ(frontier["counts"]["measured"], 0) << frontier.dump();
  EXPECT_EQ(frontier["counts"]["failed"], 1) << frontier.dump();
  EXPECT_EQ(frontier["searches"][0]["counts"]["failed"], 1) << frontier.dump();
  EXPECT_EQ(frontier["searches"][0]["counts"]["pruned"], 2) << frontier.dump();
  const auto rows = rows_by_name(dir / "out" / "sweep.sqlite", "fail-ci");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows.at("fail-ci_tp1_conc1").status, "failed");
  EXPECT_FALSE(rows.at("fail-ci_tp1_conc1").valid);
  std::string listed;
  ASSERT_EQ(run(exe + " results list --store " + (dir / "out").string(), &listed), 0) << listed;
  EXPECT_NE(listed.find("3 points: 0 done, 1 failed, 2 pruned"), std::string::npos) << listed;
  // Resumed: the failed point is reused from the store, and still fails the sweep.
  EXPECT_EQ(run(exe + " sweep " + (dir / "recipe.yaml").string() + " -o " + (dir / "out").string(), &out), 1) << out;
  EXPECT_NE(out.find("this run: 0 measured, 0 failed, 0 short-circuited, 2 pruned, 0 interrupted, "
                     "1 reused from the store (1 failed or short-circuited)"),
            std::string::npos)
      << out;
}

// (c) A server that fails to start: the error shows the last lines of its
// log, on the console and in the store. A Python server killed by a signal
// keeps its last lines too (the sweep sets PYTHONUNBUFFERED unless the
// recipe does), even when the caller's environment has no PYTHONUNBUFFERED.
TEST(Sweep, AServerThatFailsToStartShowsTheLastLinesOfItsLog) {
  const auto dir = temp_dir("serverlog");
  const std::string exe = AGENTPERF_CLI_PATH;
  std::ofstream(dir / "recipe.yaml") << failing_recipe("log-ci", "[1]");
  std::string out;
  EXPECT_EQ(run(exe + " sweep " + (dir / "recipe.yaml").string() + " -o " + (dir / "out").string(), &out), 1) << out;
  EXPECT_NE(out.find("exited with status 1 before it was ready"), std::string::npos) << out;
  EXPECT_NE(out.find("  | loading weights on port "), std::string::npos) << out;
  EXPECT_NE(out.find("  | boom: no GPU found"), std::string::npos) << out;
  const auto rows = rows_by_name(dir / "out" / "sweep.sqlite", "log-ci");
  ASSERT_EQ(rows.size(), 1u);
  const auto& r = rows.begin()->second;
  EXPECT_TRUE(fs::path(r.server_log).is_absolute()) << r.server_log;
  EXPECT_NE(r.diagnosis.find("last lines of " + r.server_log), std::string::npos) << r.diagnosis;
  EXPECT_NE(r.diagnosis.find("  | boom: no GPU found"), std::string::npos) << r.diagnosis;

  if (run("command -v python3") != 0) GTEST_SKIP() << "no python3 for the buffered-output case";
  std::string recipe = failing_recipe("py-ci", "[1]");
  const std::string shell_cmd = "\"echo loading weights on port {port}; echo 'boom: no GPU found' >&2; exit 1\"";
  recipe.replace(recipe.find(shell_cmd), shell_cmd.size(),
                 "\"python3 -c \\\"import os, signal; print('CUDA error: an illegal memory access on port {port}'); "
                 "os.kill(os.getpid(), signal.SIGKILL)\\\"\"");
  std::ofstream(dir / "py.yaml") << recipe;
  EXPECT_EQ(run("env -u PYTHONUNBUFFERED " + exe + " sweep " + (dir / "py.yaml").string() + " -o " +
                    (dir / "pyout").string(),
                &out),
            1)
      << out;
  EXPECT_NE(out.find("before it was ready"), std::string::npos) << out;
  EXPECT_NE(out.find("  | CUDA error: an illegal memory access on port"), std::string::npos) << out;
}

// (d) A recipe whose server command has no {port}: an input error (2) with
// one line naming the file and the field, at `recipe validate` and `sweep`.
TEST(Sweep, ARecipeWhoseServerCommandHasNoPortIsAnInputError) {
  const auto dir = temp_dir("noport");
  const std::string exe = AGENTPERF_CLI_PATH;
  std::string recipe = failing_recipe("noport-ci", "[1]");
  recipe.replace(recipe.find(" on port {port}"), std::string(" on port {port}").size(), "");
  std::ofstream(dir / "noport.yaml") << recipe;
  std::string out;
  EXPECT_EQ(run(exe + " recipe validate " + (dir / "noport.yaml").string(), &out), 2) << out;
  const std::string expected =
      (dir / "noport.yaml").string() + ":9: server.command: no {port} placeholder (expected the server's listen port as {port}";
  EXPECT_NE(out.find(expected), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;  // one line
  EXPECT_EQ(run(exe + " sweep " + (dir / "noport.yaml").string() + " -o " + (dir / "out").string(), &out), 2) << out;
  EXPECT_NE(out.find(expected), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_FALSE(fs::exists(dir / "out" / "sweep.sqlite"));  // nothing started
}

// (e) The sweep SIGKILLed while its server runs: the server's whole process
// group goes (the supervisor's PR_SET_PDEATHSIG), even a server that ignores
// SIGTERM and its child (SIGKILL after --stop-grace).
TEST(ServerProcess, TheServersProcessGroupDiesWithAKilledSweep) {
  const auto dir = temp_dir("orphan");
  const std::string exe = AGENTPERF_CLI_PATH;
  std::ofstream(dir / "recipe.yaml") << R"(name: orphan-ci
model: m
framework: sim
scenarios:
  agentic-coding:
    - search-space:
        - {tp: 1, kv-offloading: none, conc-list: [1]}
server:
  command: "trap '' TERM; echo never listening on {port}; echo $$ > )" + (dir / "server.pid").string() +
                                  R"(; sleep 300 & echo $! > )" + (dir / "child.pid").string() + R"(; wait"
  startup-timeout: 120
)";
  const pid_t sweep_pid = spawn({exe, "sweep", (dir / "recipe.yaml").string(), "-o", (dir / "out").string(),
                                 "--stop-grace", "1"},
                                dir / "sweep.log");
  ASSERT_TRUE(wait_for([&] { return read_pid(dir / "child.pid") > 0 && read_pid(dir / "server.pid") > 0; }, 30s))
      << slurp(dir / "sweep.log");
  const pid_t server = read_pid(dir / "server.pid"), child = read_pid(dir / "child.pid");
  std::this_thread::sleep_for(300ms);
  ASSERT_FALSE(process_gone(server));
  ASSERT_FALSE(process_gone(child));
  ::kill(sweep_pid, SIGKILL);
  EXPECT_EQ(reap(sweep_pid), -SIGKILL);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_for([&] { return process_gone(server) && process_gone(child); }, 5s))
      << "server " << server << " or its child " << child << " outlived the sweep";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  if (!process_gone(server)) ::kill(server, SIGKILL);
  if (!process_gone(child)) ::kill(child, SIGKILL);
  EXPECT_NE(slurp(dir / "out" / "orphan-ci_tp1_conc1" / "server.log").find("the sweep is gone"), std::string::npos);
}

// The exit-code contract (common/run_control.h) over a sweep's outcome.
TEST(Sweep, ExitCodeFollowsTheContract) {
  clear_stop_request();
  sweep::SweepOutcome o;
  o.counts.measured = 3;
  o.counts.pruned = 2;
  o.counts.reused = 1;
  EXPECT_EQ(sweep::sweep_exit_code(o), exit_code::valid);
  auto with = [&](auto set) {
    sweep::SweepOutcome x = o;
    set(x.counts);
    return sweep::sweep_exit_code(x);
  };
  EXPECT_EQ(with([](sweep::PointCounts& c) { c.failed = 1; }), exit_code::invalid);
  EXPECT_EQ(with([](sweep::PointCounts& c) { c.short_circuited = 1; }), exit_code::invalid);
  EXPECT_EQ(with([](sweep::PointCounts& c) { c.reused_failed = 1; }), exit_code::invalid);
  o.interrupted = true;
  o.counts.interrupted = 1;
  o.counts.failed = 1;  // a signal outranks failures
  request_stop(SIGINT);
  EXPECT_EQ(sweep::sweep_exit_code(o), exit_code::sigint);
  clear_stop_request();
  request_stop(SIGTERM);
  EXPECT_EQ(sweep::sweep_exit_code(o), exit_code::sigterm);
  clear_stop_request();
  EXPECT_EQ(o.counts.describe(), "3 measured, 1 failed, 0 short-circuited, 2 pruned, 1 interrupted, 1 reused from the store");
}
