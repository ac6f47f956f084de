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
#include <set>
#include <thread>

#include "common/error.h"
#include "plan/recipe.h"
#include "sweep/results_store.h"
#include "sweep/server_process.h"

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
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  std::string s;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) s.append(buf, n);
  const int st = ::pclose(p);
  if (out) *out = s;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
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
  // progress stays 'running', the sweep exits 130.
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
    int done = 0, running = 0;
    for (const auto& r : rows) {
      done += r.status == "done";
      running += r.status == "running";
    }
    EXPECT_GE(done, 1) << first_log;
    EXPECT_LE(done, 2) << first_log;
    EXPECT_EQ(running, 1) << first_log;  // the interrupted point, to be measured again
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
}

TEST(Sweep, EveryPointOfTheShippedSimRecipeStartsItsServer) {
  // The recipe's flags (the launcher's {hicache_args} included) must be ones
  // `agentperf sim serve` accepts: start each point's server and wait for it.
  const auto dir = temp_dir("shipped");
  const auto recipe = plan::load_recipe(std::string(AGENTPERF_RECIPES_DIR) + "/sim-qwen3-8b-h200.yaml");
  std::set<std::string> seen;
  for (const auto& p : plan::expand(recipe)) {
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
  }
  EXPECT_GE(done, 4);
  // Bad input: a missing recipe and an index outside the points.
  EXPECT_NE(run(exe + " sweep /nonexistent.yaml"), 0);
  ASSERT_NE(run(exe + " sweep " + recipe + " --dry-run --point-index 99 -o " + (dir / "bad").string(), &out), 0);
  EXPECT_NE(out.find("--point-index 99 is outside 0..7"), std::string::npos) << out;
}
