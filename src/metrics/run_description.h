// What a result directory is a run of: the one shape of the aggregate's
// "run_description" section (profile_export_aiperf.json), written by every
// producer (profile, run, replay, sweep, sim predict) and read by the
// report to label points, group comparable runs and pair predictions with
// measurements. A producer fills what it knows; an unknown field stays
// unset and is absent from the file, never guessed.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace agentperf {

struct RunDescription {
  // "measured" (a client against a server) or "predicted" (the simulator in
  // virtual time: sim predict, sweep --dry-run).
  std::string kind = "measured";
  std::optional<std::string> model;         // the deployment's model (recipe model, sim model spec)
  std::optional<std::string> served_model;  // what the server listed on /v1/models
  std::optional<std::string> hardware;      // GPU (sim hardware spec, runner type)
  std::optional<int> tp, ep, dp;
  std::optional<int> gpus;
  // Where `gpus` came from ("--gpus", "InferenceX TP/PP/PCP variables",
  // "the simulated deployment (TP x DP)", ...): per-GPU figures divide by it.
  std::optional<std::string> gpus_source;
  std::optional<std::string> engine;          // sglang, vllm, agentperf-sim, ...
  std::optional<std::string> engine_version;  // server-reported where known; agentperf's for the simulator
  std::optional<std::string> recipe, point;   // sweep recipe name and point (exp_name)
  std::optional<int> concurrency;
  std::optional<double> request_rate;         // open loop, req/s
  std::optional<std::string> kv_offload;      // none, dram, hicache, ...
  std::optional<std::string> spec_decoding;   // mtp, none, ...
  std::optional<std::string> workload;        // "synthetic ISL 512±0 OSL 64±0", "traces synth:..."
  // Speed of the served engine against real time: a simulator served with
  // --time-scale 4 runs 4x faster, so its throughputs are 4x and its
  // latencies a quarter of the modelled engine's. 1: real (or virtual) time.
  std::optional<double> time_scale;
  // What a GPU of the deployment costs and draws (a sweep recipe's `cost`
  // block): the report's cost per million tokens and tokens per joule.
  std::optional<double> gpu_price_per_hour;  // $ per GPU-hour
  std::optional<double> gpu_power_watts;     // W per GPU
  std::string date;          // ISO 8601, local time; empty: now, when written
  std::string command_line;  // the command that made the run (argv joined)

  nlohmann::ordered_json to_json() const;
  // Reads a "run_description" section; fields of the wrong type are left unset.
  static RunDescription from_json(const nlohmann::json& j);
};

}  // namespace agentperf
