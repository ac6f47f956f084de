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
// (without the dashes) to values; `trtllm_config` holds TensorRT-LLM's own
// LLM-API options per role, read into TrtllmSettings (trtllm_settings.h).
//
// The SGLang and vLLM flags become one command line per role ("vllm serve ..." or
// "python3 -m sglang.launch_server ..."), which the plan reads with the same
// rules as a single-node launcher's command (engine_config_for in
// point_engine_config.h): one reading of a flag for both.
#pragma once
#include <optional>
#include <string>
#include <utility>

#include "recipe/trtllm_settings.h"

namespace agentperf::recipe {

// The recipe file of `config_file` (as the entry gives it, "recipes/...")
// for the master config at `master_file`: the first
// benchmarks/multi_node/srt-slurm-recipes/<rest> found in the master
// file's folder or one of its parents; nullopt when none is (a master
// config copied out of its checkout). A CONFIG_FILE may also be spelled
// benchmarks/multi_node/srt-slurm-recipes/<rest>: the GB300 runner copies
// those folders to the same path inside its srt-slurm checkout
// (runners/launch_gb300-nv.sh, InferenceX @ 843c6254ff69).
std::optional<std::string> find_srt_slurm_recipe(const std::string& master_file, const std::string& config_file);

// What a recipe gives for one worker pool.
struct SrtSlurmRole {
  std::string command;  // an SGLang or vLLM role's flags as a server command line
  std::optional<TrtllmSettings> trtllm;  // a TensorRT-LLM role's settings
  std::string why_not;  // when neither: why (no backend, no such role)
  bool read() const { return !command.empty() || trtllm.has_value(); }
};

// An override variant of a recipe: srt-slurm's override files hold a `base`
// recipe and `zip_override_NAME` sections, and a CONFIG_FILE names one
// variant as FILE:zip_override_NAME[i]. As srtctl expands it
// (expand_zip_override and deep_merge in src/srtctl/core/config.py,
// github.com/NVIDIA/srt-slurm @ 020fbc6c): every list in the section is
// sliced to its i-th element (a one-element list to its only one: the
// lists are zipped, variant i takes the i-th of each), and the sliced
// section is merged into the base: a mapping key by key, a null deleting
// the key, anything else replacing the base's value.
struct SrtSlurmVariant {
  std::string section;  // "zip_override_..."
  int index = 0;
};

// "FILE:zip_override_NAME[i]" -> FILE and the variant; a plain FILE -> FILE
// and nullopt. Throws UserError for a ':' that is not followed by that form.
std::pair<std::string, std::optional<SrtSlurmVariant>> split_srt_slurm_config_file(const std::string& config_file);

// The flags of `role` ("prefill", "decode" or "aggregated") in the recipe at
// `path` (its `variant`, when given), for the model `model` (the command's
// model argument). Throws UserError naming the file when it is not valid
// YAML, its backend is not a mapping, the variant is not in it, or a
// TensorRT-LLM field that is read has a value of the wrong kind.
SrtSlurmRole srt_slurm_role(const std::string& path, const std::string& role, const std::string& model,
                            const std::optional<SrtSlurmVariant>& variant = std::nullopt);

}  // namespace agentperf::recipe
