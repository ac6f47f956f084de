// KV pools that published deployments state, against the memory plan.
//
// A published pool is two numbers: the tokens SGLang logs
// (max_total_num_tokens) and, where given, the device pool's bytes. Their
// ratio is the pool's bytes per token, which depends only on the model's
// shapes, the KV dtype and the layout the engine's attention backend stores
// (sim/memory_plan.h, dsa_fp8_scaled_latent): the plan must match it. The
// pool's bytes also hold what the runtime kept outside the weights before
// the pools were sized (CUDA or ROCm context, communication buffers,
// workspaces), which the plan does not know; the difference is shown, not
// fitted. The set is data/validation/kv_pools.json (compiled in).
#pragma once
#include <string>
#include <vector>

#include "sim/memory_plan.h"

namespace agentperf::sim {

struct PublishedPool {
  std::string id, model_spec, hardware, kv_cache_dtype = "auto", dsa_backend = "auto", source, notes;
  int tp = 1;
  bool dp_attention = false;  // a DP-attention rank: attention TP 1, the attention and embedding whole
  double mem_fraction_static = 0.8;
  long long published_tokens = 0;
  double published_pool_gib = 0;  // 0: not stated
};

struct PublishedPoolRow {
  PublishedPool pool;
  MemoryPlan plan;
  double published_bytes_per_token = 0;  // 0 when no pool bytes are stated
  double planned_bytes_per_token = 0;
  double planned_pool_gib = 0;  // the plan's KV budget
  double tokens_error_pct = 0;  // plan vs published, signed
};

// The compiled-in set (or a JSON file of the same shape). Throws UserError
// naming the file and field.
std::vector<PublishedPool> load_published_pools(const std::string& name_or_path = "builtin");

// Plans each pool's deployment as the engine was launched.
std::vector<PublishedPoolRow> compare_published_pools(const std::vector<PublishedPool>& pools);

// The comparison as a markdown table (docs/sim.md's block).
std::string published_pools_markdown(const std::vector<PublishedPoolRow>& rows);

}  // namespace agentperf::sim
