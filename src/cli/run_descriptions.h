// What `profile`, `run` and `sim predict` know of a run, as the
// RunDescription written into its aggregate (metrics/run_description.h):
// one place, so a measured run and the prediction of the same workload
// describe it in the same words and the report pairs them.
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/sim_options.h"
#include "load/profile_config.h"
#include "metrics/run_description.h"

namespace agentperf::cli {

// "synthetic ISL 512±0 OSL 64±0": the synthetic load's length distributions.
std::string synthetic_workload(const LoadConfig& load);

// The simulated engine: model and hardware specs, TP, "agentperf-sim" at
// this build's version, the offload (hicache or none) and MTP.
RunDescription describe_sim_engine(const SimEngineOptions& engine);

// --describe KEY=VALUE (repeatable) on profile, run and replay: what a
// measured run of a live server cannot learn of itself (which GPU, TP,
// offload, ...) and the report groups and pairs by. Keys: model, hardware,
// engine, engine_version, kv_offload, spec_decoding (text) and tp, ep, dp
// (whole numbers 1-1024). Each pair is checked as it is parsed.
void add_describe_option(CLI::App& cmd, std::vector<std::string>& pairs);
// Sets the named fields; a field given here wins over what the run knows.
void apply_describe(const std::vector<std::string>& pairs, RunDescription& d);

}  // namespace agentperf::cli
