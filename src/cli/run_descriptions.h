// What `profile`, `run` and `sim predict` know of a run, as the
// RunDescription written into its aggregate (metrics/run_description.h):
// one place, so a measured run and the prediction of the same workload
// describe it in the same words and the report pairs them.
#pragma once
#include <string>

#include "cli/sim_options.h"
#include "load/profile_config.h"
#include "metrics/run_description.h"

namespace agentperf::cli {

// "synthetic ISL 512±0 OSL 64±0": the synthetic load's length distributions.
std::string synthetic_workload(const LoadConfig& load);

// The simulated engine: model and hardware specs, TP, "agentperf-sim" at
// this build's version, the offload (hicache or none) and MTP.
RunDescription describe_sim_engine(const SimEngineOptions& engine);

}  // namespace agentperf::cli
