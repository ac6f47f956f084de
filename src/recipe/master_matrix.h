// Every agentic entry of InferenceX master configs planned at once: one row
// per (entry, engine shape), the shape being a single-node server or a
// multinode worker pool (role, TP x PCP, EP, DP attention, speculation, DRAM
// offload), planned at the largest concurrency its rows list (the running
// cap that concurrency asks for gives the smallest pool of a hybrid model).
// A DP-attention engine's pools are one DP rank's (point_engine_config.h).
// `agentperf recipe matrix` prints it; docs/inferencex-matrix.md is its output.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "recipe/master_config.h"
#include "sim/memory_plan.h"

namespace agentperf::recipe {

struct MatrixRow {
  std::string key, model, precision, framework, gpu;  // gpu: the runner's hardware spec (or its label's GPU)
  std::string model_spec;                             // "" when there is none
  std::string role;                                   // "" single node; "prefill" / "decode"
  int workers = 1;                                    // the role's num-worker
  int tp = 1, ep = 1, pp = 1, pcp = 1;  // as the entry gives them
  bool dp_attn = false;
  int gpus = 1, dp = 1, rank_tp = 1;     // one engine's GPUs, DP attention ranks, one rank's KV sharding
  std::string spec_decoding, kv_offloading, kv_offload_backend;
  int max_conc = 0;
  std::int64_t total_cpu_dram_gb = 0, hicache_size_gb = 0;
  enum class Status { planned, no_spec, does_not_fit } status = Status::no_spec;
  std::string why;  // no_spec / does_not_fit: the reason
  sim::MemoryPlan plan;
  std::string sizing;  // how the rank was sized, when not plain TP (DP attention, PP, TensorRT-LLM)
  std::string shape() const;  // "decode 1x TP16 EP16 DPA, mtp", "TP4, mtp, dram (hicache)"
};

struct MatrixCoverage {
  int entries = 0, entries_with_spec = 0;
  int rows = 0, rows_planned = 0, rows_no_spec = 0, rows_not_fitting = 0;
  // Distinct (model, precision, GPU, TP, EP, DP attention) of the entries' engines.
  int tuples = 0, tuples_with_spec = 0, tuples_planned = 0;
};

std::vector<MatrixRow> plan_matrix(const MasterConfig& mc);
MatrixCoverage coverage(const std::vector<MatrixRow>& rows);

}  // namespace agentperf::recipe
