// What an InferenceX master-config entry does not say and a plan or a sweep
// needs: the simulator's model spec for its checkpoint, and its runner's
// hardware (sim spec, GPUs per node, host DRAM). One table each, in
// inferencex_map.cpp; a model that gains a spec in data/models needs one row
// there.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "recipe/trtllm_settings.h"

namespace agentperf::recipe {

struct ModelSpecRow {
  const char* model;      // the entry's `model` (Hugging Face id)
  const char* precision;  // the entry's `precision`
  const char* spec;       // data/models/<spec>.json
  const char* source;     // why this spec is that checkpoint
};

struct RunnerRow {
  const char* runner;    // the entry's `runner` (a cluster label)
  const char* hardware;  // data/hardware/<hardware>.json; "" when there is no spec
  int gpus_per_node;
  std::int64_t available_cpu_dram_mib;
  const char* source;
};

const std::vector<ModelSpecRow>& model_spec_rows();
const std::vector<RunnerRow>& runner_rows();
// nullptr when the table has no row.
const ModelSpecRow* find_model_spec(const std::string& model, const std::string& precision);
const RunnerRow* find_runner(const std::string& runner);

// The synthetic stand-in (docs/traces.md) of the trace corpus an entry's
// launcher replays by default, from its `model-prefix`: the unfiltered
// corpus ("synth:cc-weka-1m") for the families with a 1M-token native
// context, the 256k-capped one ("synth:cc-weka-256k") for the rest.
std::string default_corpus_for(const std::string& model_prefix);

// Whether the entry's launcher exports VLLM_USE_RUST_FRONTEND=1 (vLLM's
// Rust API server: sim/engine_config.h).
bool launcher_uses_rust_frontend(const std::string& framework, const std::string& model_prefix,
                                 const std::string& hardware);

// vLLM's --attention-backend as the entry's agentic launcher passes it
// ("TRITON_ATTN"), or "" where it passes none (the platform's default),
// and its drafter's (the "attention_backend" of its --speculative-config;
// "" where it names none).
struct LauncherAttention {
  std::string target, draft;
};
LauncherAttention launcher_attention_backend(const std::string& framework, const std::string& model_prefix,
                                             const std::string& hardware);

// The memory fraction an InferenceX agentic launcher passes for an
// entry: SGLang's --mem-fraction-static or vLLM's --gpu-memory-utilization
// (`framework` "sglang" or "vllm"), for its model prefix on its GPU
// (`hardware`: the sim spec's name), TP, DP attention and concurrency;
// 0.80 where the table has no row (launchers and values in
// inferencex_map.cpp).
double launcher_memory_fraction(const std::string& framework, const std::string& model_prefix,
                                const std::string& hardware, int tp, bool dp_attention, int conc);

// The TensorRT-LLM options a single-node InferenceX agentic launcher writes
// into the extra-options YAML it passes to `trtllm-serve --config`, for its
// model prefix on its GPU (the sim spec's name) at TP `tp` and concurrency
// `conc`; nullopt where the table has no row (launchers and values in
// inferencex_map.cpp).
std::optional<TrtllmSettings> launcher_trtllm_settings(const std::string& model_prefix, const std::string& hardware,
                                                       int tp, int conc);

// The speculative decoding a single-node InferenceX agentic launcher runs
// for an MTP entry: the draft length (a chain's steps, or a block drafter's
// block: DSpark) and the golden acceptance length it pins
// (SGLANG_SIMULATE_ACC_LEN, vLLM's synthetic_acceptance_length, ATOM's
// --spec-decode-acceptance-length), for its model prefix on its GPU (the sim
// spec's name) at concurrency `conc`; draft_tokens 0 where the launcher
// serves that point without a draft; nullopt where the table has no row
// (launchers and values in inferencex_map.cpp).
struct LauncherSpeculation {
  int draft_tokens = 3;
  bool block = false;  // a block drafter: one forward drafts draft_tokens
  double accept_length = 0;
};
std::optional<LauncherSpeculation> launcher_speculation(const std::string& framework, const std::string& model_prefix,
                                                        const std::string& hardware, int conc);

// The host KV offload a single-node vLLM launcher sets up for its DRAM arm
// (`backend`: the entry's kv-offload-backend): the host bytes each rank's
// connector gets, whether it stores a block only when the GPU evicts it
// (lazy: write-back) or as soon as it is computed (write-through), and the
// KV block the launcher passes (0: none). `total_cpu_dram_gb` is the
// point's TOTAL_CPU_DRAM_GB; nullopt where the table has no row (launchers
// and values in inferencex_map.cpp).
struct LauncherHostOffload {
  std::string connector;  // the vLLM KV connector the launcher names
  double bytes_per_rank = 0;
  bool lazy = false;
  int block_size = 0;
  // How a SimpleCPUOffloadConnector launcher writes its budget into
  // kv_connector_extra_config (empty for the other connectors): the key
  // (`cpu_bytes_to_use_per_rank` or `cpu_bytes_to_use`, which vLLM splits
  // over the TP world) and the integer it passes, as the launcher computes
  // it; `cross_layer_blocks`: it also sets "enable_cross_layers_blocks".
  std::string bytes_key;
  std::int64_t bytes_value = 0;
  bool cross_layer_blocks = false;
};
std::optional<LauncherHostOffload> launcher_host_offload(const std::string& model_prefix, const std::string& hardware,
                                                         const std::string& backend, int tp, bool dp_attention,
                                                         std::int64_t total_cpu_dram_gb);

}  // namespace agentperf::recipe
