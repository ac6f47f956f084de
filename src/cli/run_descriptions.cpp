#include "cli/run_descriptions.h"

#include <cstdio>

#include "common/version.h"

namespace agentperf::cli {

std::string synthetic_workload(const LoadConfig& load) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "synthetic ISL %.0f±%.0f OSL %.0f±%.0f", load.isl.mean, load.isl.stddev, load.osl.mean,
                load.osl.stddev);
  return buf;
}

RunDescription describe_sim_engine(const SimEngineOptions& engine) {
  RunDescription d;
  d.model = engine.model;
  d.hardware = engine.hardware;
  d.tp = engine.cfg.tp;
  d.gpus = engine.cfg.tp;
  d.engine = "agentperf-sim";
  d.engine_version = std::string(version());
  d.kv_offload = engine.cfg.hicache.enabled ? "hicache" : "none";
  d.spec_decoding = engine.cfg.spec.enabled ? "mtp" : "none";
  return d;
}

}  // namespace agentperf::cli
