#include "cli/aiperf_compat.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "common/error.h"

namespace agentperf::cli {
namespace {

// Flags replay takes under the same name and meaning, with a value or not.
const std::set<std::string> kSameWithValue = {
    "--url", "-u", "--endpoint", "--endpoint-type", "--model", "-m", "--concurrency", "-c", "--benchmark-duration",
    "--random-seed", "--failed-request-threshold", "--trajectory-start-min-ratio", "--trajectory-start-max-ratio",
    "--warmup-requests-per-lane", "--trace-idle-gap-cap-seconds", "--warmup-grace-period", "--extra-inputs",
    "--max-context-length", "--num-dataset-entries", "--output-artifact-dir", "--header", "-H", "--api-key",
    "--request-timeout-seconds", "--benchmark-grace-period", "--slice-duration"};
const std::set<std::string> kSameFlag = {"--streaming"};
// Accepted, without effect here (listed in the results).
const std::set<std::string> kNotModelledWithValue = {"--dynamo-session-timeout-seconds"};
const std::set<std::string> kNotModelledFlag = {"--no-gpu-telemetry", "--tokenizer-trust-remote-code",
                                                "--use-dynamo-conv-aware-routing"};

// The scenario's minimum benchmark duration (AIPerf's inferencex-agentx-mvp
// scenario spec; InferenceX passes --unsafe-override below it).
constexpr double kScenarioMinDurationS = 900;

std::filesystem::path hf_hub_cache();

namespace {
// The Hugging Face dataset InferenceX downloads for an AIPerf loader alias
// (SemiAnalysisAI/InferenceX benchmarks/benchmark_lib.sh, resolve_trace_source,
// @ df64f87): semianalysis_cc_traces_weka_062126_256k is
// semianalysisai/cc-traces-weka-062126-256k: the alias without
// "semianalysis_", '_' as '-'; the rolling alias ..._with_subagents(_256k)
// is mapped there to the 061526 snapshot.
std::string hf_dataset_repo(const std::string& alias) {
  const std::string prefix = "semianalysis_";
  if (alias.rfind(prefix, 0) != 0) return "";
  std::string rest = alias.substr(prefix.size());
  const bool k256 = rest.size() > 5 && rest.compare(rest.size() - 5, 5, "_256k") == 0;
  if (rest == "cc_traces_weka_with_subagents" || rest == "cc_traces_weka_with_subagents_256k")
    rest = std::string("cc_traces_weka_061526") + (k256 ? "_256k" : "");
  for (char& c : rest)
    if (c == '_') c = '-';
  return "semianalysisai/" + rest;
}

// The newest snapshot of a dataset in the hub cache
// (datasets--ORG--NAME/snapshots/REV/), or empty.
std::filesystem::path hub_cache_snapshot(const std::string& repo) {
  namespace fs = std::filesystem;
  if (repo.empty()) return {};
  std::string dir = "datasets--" + repo;
  const auto slash = dir.find('/');
  dir.replace(slash, 1, "--");
  const auto snapshots = hf_hub_cache() / dir / "snapshots";
  std::error_code ec;
  fs::path best;
  fs::file_time_type newest{};
  for (const auto& e : fs::directory_iterator(snapshots, ec)) {
    if (!e.is_directory()) continue;
    const auto t = fs::last_write_time(e.path(), ec);
    if (best.empty() || t > newest) {
      best = e.path();
      newest = t;
    }
  }
  return best;
}
}  // namespace

std::string dataset_path(const std::string& name, const std::string& dir_flag) {
  if (name.rfind("synth:", 0) == 0) return name;  // agentperf's synthetic presets pass through
  std::string dir = dir_flag;
  if (dir.empty())
    if (const char* env = std::getenv("AGENTPERF_DATASETS_DIR")) dir = env;
  if (dir.empty()) {
    // Where InferenceX's launcher downloads it: the Hugging Face hub cache.
    const std::string repo = hf_dataset_repo(name);
    if (const auto snap = hub_cache_snapshot(repo); !snap.empty()) return snap.string();
    throw UserError("--public-dataset " + name + ": not in the Hugging Face cache (" +
                    (repo.empty() ? std::string("no known dataset for this name")
                                  : (hf_hub_cache() / ("datasets--" + repo.substr(0, repo.find('/')) + "--" +
                                                       repo.substr(repo.find('/') + 1)))
                                        .string()) +
                    "); run `hf download --repo-type dataset " + (repo.empty() ? "ORG/NAME" : repo) +
                    "` as InferenceX does, or set --dataset-dir DIR or AGENTPERF_DATASETS_DIR to a directory holding " +
                    name + "/ (the dataset's trace files)");
  }
  const auto p = std::filesystem::path(dir) / name;
  for (const auto& candidate : {p, std::filesystem::path(p.string() + ".jsonl"), std::filesystem::path(p.string() + ".json")})
    if (std::filesystem::exists(candidate)) return candidate.string();
  throw UserError("--public-dataset " + name + ": no local copy at " + p.string() +
                  " (from " + (dir_flag.empty() ? "AGENTPERF_DATASETS_DIR" : "--dataset-dir") +
                  "); download the dataset's trace files there");
}

// The Hugging Face hub cache, where AIPerf's own tokenizer download lands
// (huggingface_hub: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub).
std::filesystem::path hf_hub_cache() {
  if (const char* c = std::getenv("HF_HUB_CACHE")) return c;
  if (const char* h = std::getenv("HF_HOME")) return std::filesystem::path(h) / "hub";
  if (const char* home = std::getenv("HOME")) return std::filesystem::path(home) / ".cache/huggingface/hub";
  return {};
}

// A tokenizer.json for --tokenizer: a file, a directory holding one, or a
// Hugging Face id found in the hub cache (models--ORG--NAME/snapshots/*/).
std::string tokenizer_file(const std::string& v) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(v)) return v;
  if (fs::is_directory(v) && fs::is_regular_file(fs::path(v) / "tokenizer.json")) return (fs::path(v) / "tokenizer.json").string();
  std::string repo = "models--" + v;
  for (std::size_t p = repo.find('/'); p != std::string::npos; p = repo.find('/', p)) repo.replace(p, 1, "--");
  const auto snapshots = hf_hub_cache() / repo / "snapshots";
  std::error_code ec;
  if (!fs::is_directory(snapshots, ec)) return "";
  for (const auto& snap : fs::directory_iterator(snapshots, ec))
    if (fs::is_regular_file(snap.path() / "tokenizer.json")) return (snap.path() / "tokenizer.json").string();
  return "";
}

}  // namespace

bool is_aiperf_scenario_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "profile") return false;
  for (const auto& a : args)
    if (a == "--scenario" || a.rfind("--scenario=", 0) == 0) return true;
  return false;
}

AiperfTranslation translate_aiperf_profile(const std::vector<std::string>& in) {
  // Split --flag=value into two tokens.
  std::vector<std::string> args;
  for (std::size_t i = 1; i < in.size(); ++i) {
    const auto& a = in[i];
    const auto eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      args.push_back(a.substr(0, eq));
      args.push_back(a.substr(eq + 1));
    } else {
      args.push_back(a);
    }
  }
  AiperfTranslation t;
  // AIPerf writes over an earlier run's files in its artifact folder.
  t.args = {"replay", "--overwrite"};
  std::string dataset_dir, tokenizer;
  double duration = -1;
  auto value_of = [&](std::size_t& i) -> std::string {
    if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0)
      throw UserError(args[i] + " needs a value");
    return args[++i];
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--scenario") {
      t.scenario = value_of(i);
      if (t.scenario != kInferenceXScenario)
        throw UserError("--scenario " + t.scenario + ": agentperf follows only " + kInferenceXScenario);
    } else if (a == "--public-dataset") {
      t.dataset = value_of(i);
    } else if (a == "--dataset-dir") {
      dataset_dir = value_of(i);
    } else if (a == "--unsafe-override") {
      t.unsafe_override = true;
    } else if (a == "--use-server-token-count") {
      // Followed always: server usage counts are used whenever sent.
    } else if (a == "--stats-interval") {
      t.args.insert(t.args.end(), {"--progress-interval", value_of(i)});
    } else if (a == "--tokenizer") {
      const std::string v = value_of(i);
      tokenizer = tokenizer_file(v);
      if (tokenizer.empty())
        throw UserError("--tokenizer " + v + ": no tokenizer.json for it: not a file or directory, and not in the "
                        "Hugging Face cache (" + (hf_hub_cache() / "models--...").string() +
                        "; set HF_HUB_CACHE or HF_HOME, or pass the tokenizer.json's path)");
      t.args.insert(t.args.end(), {"--tokenizer", tokenizer});
    } else if (a == "--server-metrics") {
      std::vector<std::string> urls;
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) urls.push_back(args[++i]);
      if (urls.empty()) {
        t.args.push_back("--server-metrics");
      } else {
        t.args.insert(t.args.end(), {"--server-metrics-url", urls[0]});
        for (std::size_t k = 1; k < urls.size(); ++k)
          t.accepted_not_modelled.push_back("--server-metrics " + urls[k] + " (only the first URL is scraped)");
      }
    } else if (kNotModelledWithValue.count(a)) {
      t.accepted_not_modelled.push_back(a + " " + value_of(i));
    } else if (kNotModelledFlag.count(a)) {
      t.accepted_not_modelled.push_back(a);
    } else if (kSameWithValue.count(a)) {
      const std::string v = value_of(i);
      if (a == "--benchmark-duration") {
        try {
          duration = std::stod(v);
        } catch (const std::exception&) {
          // replay's own check names the flag and the value
        }
      }
      t.args.insert(t.args.end(), {a, v});
    } else if (kSameFlag.count(a)) {
      t.args.push_back(a);
    } else {
      // Anything else goes to replay as it is: an unknown flag is its error.
      t.args.push_back(a);
    }
  }
  if (t.scenario.empty()) throw UserError("profile --scenario: a scenario name is required");
  if (t.dataset.empty())
    throw UserError(std::string("--scenario ") + kInferenceXScenario + " needs --public-dataset NAME (the Weka traces)");
  t.args.insert(t.args.end(), {"--traces", dataset_path(t.dataset, dataset_dir)});
  // The scenario's rules; --unsafe-override turns a broken one into an
  // invalid submission instead of an error.
  if (duration >= 0 && duration < kScenarioMinDurationS)
    t.violations.push_back("benchmark_duration_below_900s");
  if (!t.violations.empty() && !t.unsafe_override)
    throw UserError("--scenario " + t.scenario + ": --benchmark-duration must be at least 900 s (or pass "
                    "--unsafe-override, which marks the submission invalid)");
  return t;
}

}  // namespace agentperf::cli
