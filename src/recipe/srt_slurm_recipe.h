// The srt-slurm recipe a multinode InferenceX entry points at, read for the
// engine flags of each worker pool.
//
// InferenceX's multinode agentic entries name their deployment in a worker's
// `additional-settings` as CONFIG_FILE=recipes/<framework>/<model>/...yaml.
// The runner scripts copy the repository's
// benchmarks/multi_node/srt-slurm-recipes/<framework>/<model> folders into an
// srt-slurm checkout's recipes/<framework>/<model> before they submit
// (runners/launch_b200-dgxc.sh and its siblings in
// github.com/SemiAnalysisAI/InferenceX @ 843c6254ff69), so a CONFIG_FILE is
// found in the InferenceX checkout by replacing its leading "recipes/" with
// that folder. A recipe's `backend` holds the engine's arguments per role:
// `sglang_config` or `vllm_config`, each with `prefill` and `decode` (a
// disaggregated deployment) or `aggregated`, as a mapping of flag names
// (without the dashes) to values; `trtllm_config` is TensorRT-LLM's own
// YAML and is not read here.
//
// The flags become one command line per role ("vllm serve ..." or
// "python3 -m sglang.launch_server ..."), which the plan reads with the same
// rules as a single-node launcher's command (engine_config_for in
// point_engine_config.h): one reading of a flag for both.
#pragma once
#include <optional>
#include <string>

namespace agentperf::recipe {

// The recipe file of `config_file` (as the entry gives it, "recipes/...")
// for the master config at `master_file`: the first
// benchmarks/multi_node/srt-slurm-recipes/<rest> found in the master
// file's folder or one of its parents; nullopt when none is (a master
// config copied out of its checkout).
std::optional<std::string> find_srt_slurm_recipe(const std::string& master_file, const std::string& config_file);

// What a recipe gives for one worker pool.
struct SrtSlurmRole {
  std::string command;  // the role's flags as a server command line; "" when the recipe has none to read
  std::string why_not;  // when command is "": why (a TensorRT-LLM recipe, no such role)
};

// The flags of `role` ("prefill", "decode" or "aggregated") in the recipe at
// `path`, for the model `model` (the command's model argument). Throws
// UserError naming the file when it is not valid YAML or its backend is not
// a mapping.
SrtSlurmRole srt_slurm_role(const std::string& path, const std::string& role, const std::string& model);

}  // namespace agentperf::recipe
