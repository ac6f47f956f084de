// InferenceX master configs (configs/nvidia-master.yaml, configs/amd-master.yaml
// in github.com/SemiAnalysisAI/InferenceX, schema utils/matrix_logic/validation.py
// @ 843c6254ff69) read directly as recipes: PATH#KEY names one entry.
//
// An entry becomes a Recipe with what it lacks filled from
// recipe/inferencex_map.h (the simulator's model spec, the runner's GPU, GPUs
// per node and host DRAM), a server command generated from its framework
// (single-node sglang and vllm entries; otherwise none, and a sweep says
// why), and InferenceX's defaults (replay 3600 s). Fields the tools do not
// model (multinode, disagg, dp-attn, pp, dcp/pcp, routers, srt-slurm
// settings, non-SGLang frameworks and offload backends) load with a note
// naming them (Recipe::notes); malformed entries are one-line errors naming
// the file, line and key path.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "recipe/recipe.h"

namespace agentperf::recipe {

struct MasterRef {
  std::string file, key;
};
// "PATH#KEY" -> {PATH, KEY}; nullopt for a path without '#' or one that is
// an existing file. Throws on an empty PATH or KEY.
std::optional<MasterRef> parse_master_ref(const std::string& path);

struct MasterEntrySummary {
  std::string key, model, precision, framework, runner;
  bool multinode = false, disagg = false;
  int rows = 0, points = 0;
  std::string model_spec;  // the simulator's spec; "" when there is none
};

class MasterConfig {
 public:
  explicit MasterConfig(const std::string& path);  // reads the file; throws UserError
  const std::string& path() const;
  std::size_t entry_count() const;                 // all entries, agentic or not
  std::vector<std::string> agentic_keys() const;   // entries with scenarios.agentic-coding, file order
  Recipe entry(const std::string& key) const;      // throws UserError naming the file and key
  MasterEntrySummary summary(const std::string& key) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

Recipe load_master_entry(const std::string& file, const std::string& key);

}  // namespace agentperf::recipe
