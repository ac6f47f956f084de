// The simulated engine's flags for a recipe point, as the launcher sets them
// (its memory fraction, 2 x conc running, graph cap, MTP, HiCache with page
// 64 and write_through_selective when the point offloads to DRAM), with
// vLLM's scheduler for a point that runs vLLM and SGLang's otherwise.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "recipe/recipe.h"
#include "sim/engine_config.h"
#include "sim/specs.h"

namespace agentperf::recipe {

// costs: the engine profile predictions use (sim/engine_costs.h).
sim::EngineConfig engine_config_for(const ExpandedPoint& p, const sim::EngineCosts& costs);

// Whether the point's engine is vLLM: its server command is `vllm serve`,
// or (a multinode entry, which has no command) its framework names vLLM
// (dynamo-vllm, llmd-vllm).
bool runs_vllm_scheduler(const Recipe& r, const ExpandedPoint& p);

// Whether the entry's framework is TensorRT-LLM's (trt, dynamo-trt).
bool runs_tensorrt_llm(const Recipe& r);

// One engine of a point as the memory plan sees it: the single server of a
// single-node point, or one worker pool of a multinode point (DRAM offload on
// the prefill side, where InferenceX budgets it). The plan sizes one rank:
//  - plain TP: TP x PCP ranks share KV heads; weights over TP x PP x PCP GPUs;
//  - DP attention: one DP rank. TP t, EP e <= t: t ranks of attention TP 1;
//    e > t (vLLM's TP t x DP e/t, EP e): e/t ranks of attention TP t. Weights
//    over all the engine's GPUs (max(t, e)), KV and state per rank;
//  - running requests: 2 x conc over the role's engines and DP ranks.
struct PointEngine {
  std::string role;  // "" for a single-node point; "prefill" or "decode"
  int workers = 1;   // identical engines of this role
  int gpus = 1;      // GPUs of one engine
  int dp = 1;        // DP attention ranks per engine (the plan is one rank's)
  sim::EngineConfig config;  // config.tp: the KV/attention sharding of one rank
  // The model as one rank holds it when its weights are spread over more
  // GPUs than config.tp (PP, DP attention); nullopt: the spec as is.
  std::optional<sim::ModelSpec> model;
  std::vector<std::string> sizing;  // derivation lines for how the rank was sized
  // The engine's own cap on running requests, as given, where it is what
  // binds: a multinode pool's recipe's --max-running-requests or
  // --max-num-seqs, or a TensorRT-LLM engine's max_batch_size; 0: the rank's
  // cap is InferenceX's 2 x conc split over the ranks.
  int recipe_running_cap = 0;
  // A TensorRT-LLM engine's options from its srt-slurm recipe or its
  // launcher; nullopt elsewhere (and where neither is known).
  std::optional<TrtllmSettings> trtllm = std::nullopt;
};

// model: the point's spec (null: shapes only, nothing sized). TensorRT-LLM
// frameworks (trt, dynamo-trt) size the KV pool as free_gpu_memory_fraction
// of the HBM left after the weights (hw gives the HBM for that) and
// schedule by in-flight batching: context chunks and generation tokens
// share one forward of max_num_tokens (8192 unless set), the simulator's
// mixed (vLLM-kind) scheduler. Their options are a multinode pool's
// srt-slurm recipe role's, a single-node entry's launcher's
// (launcher_trtllm_settings), else TensorRT-LLM's defaults (fraction 0.9).
// Options read also give the rank's running cap (max_batch_size, where
// below the 2 x conc rule), the KV block and dtype, the MTP draft length
// (none in a role without speculative_config), the stream interval and the
// host cache (host_cache_size a rank, filled on eviction; none without
// block reuse).
std::vector<PointEngine> engines_for(const Recipe& r, const ExpandedPoint& p, const sim::EngineCosts& costs,
                                     const sim::ModelSpec* model, const sim::HardwareSpec* hw);

}  // namespace agentperf::recipe
