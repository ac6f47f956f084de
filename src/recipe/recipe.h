// Recipes: the InferenceX master-config entry shape (configs/nvidia-master.yaml,
// validated by utils/matrix_logic/validation.py in
// github.com/SemiAnalysisAI/InferenceX @ 843c6254ff69) plus what a sweep
// needs to run it: the simulator specs, the server
// command template and the replay settings. `expand` gives one row per
// (search-space entry x concurrency) with the launcher's derived values.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/command_line.h"
#include "recipe/inferencex_map.h"
#include "recipe/trtllm_settings.h"

namespace agentperf::recipe {

// One worker pool of a multinode entry (InferenceX's WorkerConfig).
struct WorkerSpec {
  int num_worker = 0;  // 0: none (an aggregated entry's decode side)
  int tp = 1, ep = 1, pp = 1, dcp = 1, pcp = 1;
  bool dp_attn = false;
  std::vector<std::string> additional_settings;  // e.g. CONFIG_FILE=<srt-slurm recipe>
  // The pool's engine flags from its CONFIG_FILE's srt-slurm recipe, as a
  // server command line (srt_slurm_recipe.h); "" when the recipe was not
  // found or gives none: the plan then takes the framework's defaults.
  std::string server_command;
  // A TensorRT-LLM pool's settings from its recipe (trtllm_settings.h), in
  // place of a command line; nullopt when the recipe is not TensorRT-LLM's.
  std::optional<TrtllmSettings> trtllm;
  int gpus() const { return tp * pp * pcp; }
};

struct SearchSpaceEntry {
  // Single-node rows: the server's topology. Multinode rows: the serving
  // worker's (decode, or prefill when there are no decode workers), TP x PCP.
  int tp = 1, ep = 1, pp = 1;
  int dcp = 1, pcp = 1;  // context parallelism (dcp-size, pcp-size)
  bool dp_attn = false;
  std::string spec_decoding = "none";  // mtp | draft_model | none
  std::string kv_offloading = "none";  // none | dram
  std::string kv_offload_backend;      // required iff dram
  std::vector<int> conc_list;
  // Multinode rows (InferenceX master configs with multinode: true).
  std::optional<WorkerSpec> prefill, decode;
  bool multinode() const { return prefill.has_value(); }
};

struct ScenarioBlock {
  std::optional<double> dram_utilization;  // (0, 1]; required if an entry uses dram
  std::vector<SearchSpaceEntry> search_space;
};

struct Recipe {
  std::string source;  // file the recipe came from (for errors)
  std::string name, image, model, model_prefix, precision, framework, runner;
  // Hardware of the runner: GPUs per node and host DRAM (runners.yaml).
  int gpus_per_node = 8;
  std::int64_t available_cpu_dram_mib = 0;
  // The simulator's specs for this deployment (`plan`, `sweep --dry-run`).
  std::string sim_model_spec, sim_hardware_spec;
  std::vector<ScenarioBlock> agentic;
  std::string server_command;  // template with {placeholders}
  std::map<std::string, std::string> server_env;
  double duration_s = 3600;
  // Replay settings of a sweep (the `replay` block).
  std::string replay_traces;            // trace file/dir, relative to the recipe; empty: synthetic traces
  double replay_grace_s = 30;
  bool replay_warmup = true;
  double replay_system_idle_cap_s = 10;
  // The replay's seed (replay::ReplayConfig::seed: block contents and each
  // lane's t*): InferenceX runs AIPerf with --random-seed 42
  // (benchmarks/benchmark_lib.sh @ 843c6254ff69, build_replay_cmd).
  std::uint64_t replay_seed = 42;
  std::string replay_endpoint_type = "completions";  // token-id prompts need no tokenizer
  double server_startup_timeout_s = 1800;  // `server.startup-timeout`: readiness wait (weights load)
  // `cost`: what a GPU of the deployment costs and draws, carried into each
  // point's run description for the report (cost per million tokens, tokens per joule).
  std::optional<double> gpu_price_per_hour;  // $ per GPU-hour
  std::optional<double> gpu_power_watts;     // W per GPU

  // Set when the recipe is an InferenceX master-config entry (PATH#KEY,
  // recipe/master_config.h).
  std::string master_file, master_key;
  bool multinode = false, disagg = false;
  // What the entry says that the tools do not model, one line per field (warnings).
  std::vector<std::string> notes;
  std::string sim_missing;     // why there is no sim block (plan and --dry-run say it)
  std::string server_missing;  // why there is no server command (a sweep says it)
  // "vllm": {spec_args}, {hicache_args} and {parallel_args} in vLLM's flags; otherwise SGLang's.
  std::string command_flavor;
};

struct ExpandedPoint {
  std::string exp_name;
  const SearchSpaceEntry* entry = nullptr;
  int conc = 0;
  int max_running_requests = 0;  // 2 x conc: room for subagent fan-out
  int cuda_graph_max_bs = 0;     // min(conc, 64)
  std::int64_t total_cpu_dram_gb = 0;  // 0 without DRAM offload
  std::int64_t hicache_size_gb = 0;    // per rank and pool (hybrid MTP models)
  int dram_ranks = 0;                  // ranks sharing the DRAM budget: TP, or a multinode prefill worker's GPUs on a node
  double projected_host_gb = 0;        // 31 H / 15 x ranks; a vLLM launcher's connector bytes x ranks
  // A single-node vLLM entry's DRAM arm whose launcher the table knows: its
  // connector as the launcher sets it up (launcher_host_offload), whose
  // budget may exceed the DRAM budget as written.
  std::optional<LauncherHostOffload> launcher_host;
  std::string command;                 // server command with the placeholders filled
};

// path: a recipe YAML, or PATH#KEY for an entry of an InferenceX master
// config (recipe/master_config.h). Throws UserError naming the file, the key
// path and what was expected.
Recipe load_recipe(const std::string& path);
std::vector<ExpandedPoint> expand(const Recipe& r);

// Throws UserError when a sweep cannot run the recipe: a multinode entry
// (measured; a dry run predicts it), no sim block (dry_run), no server
// command (otherwise).
void require_sweepable(const Recipe& r, bool dry_run);

// conc-start..conc-end as InferenceX expands it: doubling from start, then
// end itself (1..24: 1, 2, 4, 8, 16, 24).
std::vector<int> conc_range(int start, int end);

// floor(min(avail MiB, 2,861,022) x 2^20 x utilization x gpus / gpus-per-node / 1e9)
std::int64_t total_cpu_dram_gb(std::int64_t available_mib, double utilization, int gpus, int gpus_per_node);
// H per rank with 1 GB kept per rank: floor((total - tp) x 15 / tp / 31)
std::int64_t hicache_size_per_rank_gb(std::int64_t total_gb, int tp);

// common/command_line.h, for the recipe layer's readers of commands.
using agentperf::command_flag_value;

}  // namespace agentperf::recipe
