// Engine flags shared by `sim serve`, `sim predict` and `run`, named after
// SGLang's server arguments.
#pragma once
#include "common/defaults.h"
#include <string>

#include <CLI/CLI.hpp>

#include "sim/engine_config.h"
#include "sim/specs.h"

namespace agentperf::cli {

struct SimEngineOptions {
  std::string model = defaults::kModelSpec;
  std::string hardware = defaults::kHardware;
  std::string hardware_profile;  // measured profile (agentperf calibrate); empty: the spec's efficiencies
  std::string engine_profile;    // engine costs (sim/engine_costs.h); empty: the shipped profile of --scheduler
  std::string scheduler = "sglang";
  std::string speculative_algorithm;  // "NEXTN" / "EAGLE" enable MTP
  std::string write_policy = "write_through";
  std::string hicache_io_backend, hicache_mem_layout;  // accepted for SGLang command compatibility
  std::string kv_cache_dtype = "auto";
  sim::EngineConfig cfg;
  // Set by add_sim_engine_options: whether a scheduler-specific flag was
  // given, so finish_sim_engine_options can refuse it under the other one.
  const CLI::Option* max_num_batched_tokens_flag = nullptr;
};

void add_sim_engine_options(CLI::App& cmd, SimEngineOptions& o);
// Applies the text options (and loads --engine-profile into cfg.costs);
// throws UserError naming the option.
void finish_sim_engine_options(SimEngineOptions& o);
// The hardware spec with --hardware-profile attached.
sim::HardwareSpec load_engine_hardware(const SimEngineOptions& o);

}  // namespace agentperf::cli
