// The AIPerf drop-in (cli/aiperf_compat.h): InferenceX's launcher command
// line, run verbatim under the program name `aiperf`, against the simulator.
#include "cli/aiperf_compat.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "support/sim_backend.h"
#include "support/shell_run.h"

namespace fs = std::filesystem;
using agentperf::UserError;
using agentperf::cli::translate_aiperf_profile;

namespace {

struct Outcome {
  int code;
  std::string output;
};

Outcome run(const std::string& cmd) {
  const auto r = agentperf::test_support::run_shell(cmd + " 2>&1");
  return {r.code, r.output};
}

fs::path fresh_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("agentperf_aiperf_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// InferenceX's build_replay_cmd (SemiAnalysisAI/InferenceX,
// benchmarks/benchmark_lib.sh @ 843c6254ff69), with its shell variables
// filled in; DURATION below 900 s, so --unsafe-override as the launcher adds.
std::string launcher_command(const std::string& program, int port, const std::string& result_dir, int duration) {
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  return program + " profile --scenario inferencex-agentx-mvp"
         " --url " + url +
         " --endpoint /v1/chat/completions --endpoint-type chat --streaming"
         " --model Qwen/Qwen3-8B --tokenizer Qwen/Qwen3-8B"
         " --concurrency 4 --benchmark-duration " + std::to_string(duration) +
         " --stats-interval 30 --random-seed 42"
         " --failed-request-threshold 0.10"
         " --trajectory-start-min-ratio 0.25 --trajectory-start-max-ratio 0.75"
         " --warmup-requests-per-lane 10"
         " --trace-idle-gap-cap-seconds 300"
         " --warmup-grace-period 1800"
         " --use-server-token-count"
         " --no-gpu-telemetry --tokenizer-trust-remote-code"
         " --num-dataset-entries 393 --slice-duration 1.0"
         " --server-metrics " + url + "/metrics"
         " --output-artifact-dir " + result_dir + "/aiperf_artifacts"
         " --unsafe-override"
         " --public-dataset semianalysis_cc_traces_weka_062126_256k";
}

}  // namespace

TEST(AiperfCompat, InferenceXLauncherCommandRunsVerbatimAsAiperf) {
  const fs::path root = fresh_dir("launcher");
  const std::string agentperf = AGENTPERF_CLI_PATH;
  const std::string aiperf = (fs::path(agentperf).parent_path() / "aiperf").string();
  ASSERT_TRUE(fs::exists(aiperf)) << "the build installs an aiperf link beside " << agentperf;
  // The dataset and the tokenizer in a Hugging Face hub cache layout, where
  // InferenceX's `hf download --repo-type dataset semianalysisai/...` and
  // AIPerf's tokenizer download put them: no setup of our own.
  const fs::path data = root / "hf" / "datasets--semianalysisai--cc-traces-weka-062126-256k" / "snapshots" / "abc123";
  fs::create_directories(data);
  auto synth = run(agentperf + " traces synth -o " + (data / "traces.jsonl").string() +
                   " --traces 6 --mean-turns 6 --system-tokens 2000 --tool-tokens 500 --mean-turn-input 300 --mean-output 40");
  ASSERT_EQ(synth.code, 0) << synth.output;
  const fs::path snap = root / "hf" / "models--Qwen--Qwen3-8B" / "snapshots" / "0";
  fs::create_directories(snap);
  fs::copy_file(AGENTPERF_QWEN3_TOKENIZER_JSON, snap / "tokenizer.json");

  auto backend = agentperf::test_support::start_sim_backend(20);
  const std::string env = "env -u AGENTPERF_DATASETS_DIR HF_HUB_CACHE=" + (root / "hf").string() + " ";
  auto r = run(env + launcher_command(aiperf, backend->port(), (root / "res").string(), 20));
  ASSERT_EQ(r.code, 0) << r.output;
  // Every flag we take without modelling it is said, not dropped silently.
  EXPECT_NE(r.output.find("--no-gpu-telemetry: accepted, not modelled"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("--slice-duration 1.0: accepted, not modelled"), std::string::npos) << r.output;
  // Warmup says up front what it will send and how long it may take.
  EXPECT_NE(r.output.find("warmup: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("pressure requests (10 per lane); at most 1800 s (--warmup-grace-period)"), std::string::npos)
      << r.output;

  std::ifstream in(root / "res" / "aiperf_artifacts" / "profile_export_aiperf.json");
  ASSERT_TRUE(in.good());
  const auto j = nlohmann::json::parse(in);
  const auto& md = j["metadata"];
  EXPECT_EQ(md["scenario"], "inferencex-agentx-mvp");
  EXPECT_EQ(md["dataset"]["name"], "semianalysis_cc_traces_weka_062126_256k");
  // 20 s < the scenario's 900 s: allowed by --unsafe-override, not a valid submission.
  EXPECT_EQ(md["submission_valid"], false);
  EXPECT_NE(md["submission_invalid_reasons"].dump().find("unsafe_override"), std::string::npos);
  EXPECT_NE(md["aiperf_flags_not_modelled"].dump().find("--tokenizer-trust-remote-code"), std::string::npos);
  // The InferenceX aggregate is there and agrees with the AIPerf-shaped fields.
  const auto& ix = j["inferencex"];
  ASSERT_TRUE(ix.contains("throughput") && ix.contains("latency") && ix.contains("cache") && ix.contains("tokens"));
  const double requests = j["request_count"]["avg"].get<double>();
  EXPECT_GT(requests, 0);
  EXPECT_EQ(j["error_request_count"]["avg"].get<double>(), 0);
  // InferenceX's own aggregate (process_agentic_result's output), written
  // natively, agrees with the AIPerf-shaped file and the launcher's values.
  std::ifstream ixf(root / "res" / "aiperf_artifacts" / "inferencex_result.json");
  ASSERT_TRUE(ixf.good()) << "inferencex_result.json";
  const auto agg = nlohmann::json::parse(ixf);
  EXPECT_EQ(agg["conc"], 4);
  EXPECT_EQ(agg["scenario_type"], "agentic-coding");
  EXPECT_EQ(agg["kv_offloading"], "none");
  EXPECT_EQ(agg["num_requests_successful"].get<double>(), requests);
  ASSERT_TRUE(agg.contains("request_metrics"));
  for (const char* k : {"qps", "latency", "tokens", "throughput", "cache"})
    EXPECT_TRUE(agg["request_metrics"].contains(k)) << k;
  EXPECT_GT(agg["request_metrics"]["throughput"]["duration_seconds"].get<double>(), 0);
  EXPECT_TRUE(agg["server_metrics"]["present"].get<bool>()) << agg["server_metrics"].dump();
  EXPECT_TRUE(fs::exists(root / "res" / "aiperf_artifacts" / "server_metrics_export.json"));
  {
    // --slice-duration 1.0: every series has its 1 s time slices, counters
    // with total and rate, and the plot script's time origin is there.
    std::ifstream smf(root / "res" / "aiperf_artifacts" / "server_metrics_export.json");
    const auto sm = nlohmann::json::parse(smf);
    EXPECT_TRUE(sm["summary"]["endpoint_info"].begin().value().contains("first_update_ns")) << sm["summary"].dump();
    const auto& gen = sm["metrics"]["sglang:generation_tokens"]["series"][0]["timeslices"];
    ASSERT_GE(gen.size(), 10u) << sm["metrics"]["sglang:generation_tokens"].dump();
    double sliced = 0;
    for (const auto& sl : gen) {
      EXPECT_TRUE(sl.contains("total") && sl.contains("rate")) << sl.dump();
      sliced += sl["total"].get<double>();
    }
    EXPECT_EQ(gen[1]["start_ns"].get<std::int64_t>() - gen[0]["start_ns"].get<std::int64_t>(), 1'000'000'000);
    // The slices add up to the window's total (no scrape between them lost).
    EXPECT_NEAR(sliced, sm["metrics"]["sglang:generation_tokens"]["series"][0]["stats"]["total"].get<double>(), 1e-6);
    EXPECT_FALSE(sm["metrics"]["sglang:token_usage"]["series"][0]["timeslices"].empty());
  }
  {
    // ... and the client-side slices AIPerf writes beside its aggregate:
    // 1 s apart, every request of the run in exactly one of them.
    std::ifstream tsf(root / "res" / "aiperf_artifacts" / "profile_export_aiperf_timeslices.json");
    ASSERT_TRUE(tsf.good()) << "profile_export_aiperf_timeslices.json";
    const auto ts = nlohmann::json::parse(tsf)["timeslices"];
    ASSERT_GE(ts.size(), 5u);
    double counted = 0;
    for (const auto& sl : ts) {
      counted += sl["request_count"]["avg"].get<double>();
      EXPECT_LE(sl["end_ns"].get<std::int64_t>() - sl["start_ns"].get<std::int64_t>(), 1'000'000'000) << sl.dump();
      EXPECT_TRUE(sl.contains("time_to_first_token")) << sl.dump();
    }
    EXPECT_EQ(counted, requests);
    EXPECT_TRUE(fs::exists(root / "res" / "aiperf_artifacts" / "profile_export_aiperf_timeslices.csv"));
  }
  EXPECT_TRUE(fs::exists(root / "res" / "aiperf_artifacts" / "server_metrics_export.csv"));
  EXPECT_TRUE(fs::exists(root / "res" / "aiperf_artifacts" / "profile_export.jsonl"));
  EXPECT_TRUE(fs::exists(root / "res" / "aiperf_artifacts" / "server_metrics_timeline.jsonl"));
  fs::remove_all(root);
}

TEST(AiperfCompat, TranslationMapsRenamesAndRules) {
  const fs::path root = fresh_dir("translate");
  fs::create_directories(root / "ds" / "traces_x");
  const auto t = translate_aiperf_profile({"profile", "--scenario=inferencex-agentx-mvp", "--url", "http://h:1",
                                           "--stats-interval", "30", "--server-metrics", "http://a/metrics",
                                           "http://b/metrics", "--benchmark-duration", "1800", "--dataset-dir",
                                           (root / "ds").string(), "--public-dataset", "traces_x", "--no-gpu-telemetry"});
  // AIPerf overwrites its artifact folder: the drop-in does too.
  const std::vector<std::string> want_prefix = {"replay", "--overwrite", "--url", "http://h:1", "--progress-interval", "30",
                                                "--server-metrics-url", "http://a/metrics", "--benchmark-duration", "1800"};
  ASSERT_GE(t.args.size(), want_prefix.size());
  EXPECT_EQ(std::vector<std::string>(t.args.begin(), t.args.begin() + static_cast<long>(want_prefix.size())), want_prefix);
  EXPECT_EQ(t.args.back(), (root / "ds" / "traces_x").string());
  EXPECT_TRUE(t.violations.empty());
  EXPECT_EQ(t.accepted_not_modelled.size(), 2u);  // the second metrics URL, --no-gpu-telemetry
  // A short run without --unsafe-override breaks the scenario's rule: an error.
  EXPECT_THROW(translate_aiperf_profile({"profile", "--scenario", "inferencex-agentx-mvp", "--benchmark-duration", "60",
                                         "--public-dataset", "synth:cc-weka-256k"}),
               UserError);
  // Other scenarios, and a dataset with no local copy, name what is missing.
  EXPECT_THROW(translate_aiperf_profile({"profile", "--scenario", "other", "--public-dataset", "x"}), UserError);
  ::unsetenv("AGENTPERF_DATASETS_DIR");
  try {
    translate_aiperf_profile({"profile", "--scenario", "inferencex-agentx-mvp", "--public-dataset", "nope"});
    FAIL();
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--dataset-dir"), std::string::npos) << m;
    EXPECT_NE(m.find("AGENTPERF_DATASETS_DIR"), std::string::npos) << m;
  }
  // A known alias that is not downloaded names the download InferenceX runs.
  ::setenv("HF_HUB_CACHE", (root / "empty-hub").string().c_str(), 1);
  try {
    translate_aiperf_profile({"profile", "--scenario", "inferencex-agentx-mvp", "--public-dataset",
                              "semianalysis_cc_traces_weka_062126"});
    FAIL();
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("hf download --repo-type dataset semianalysisai/cc-traces-weka-062126`"), std::string::npos) << m;
  }
  ::unsetenv("HF_HUB_CACHE");
  fs::remove_all(root);
}
