#include "cli/run_descriptions.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "cli/cli_numbers.h"
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
  d.gpus_source = "the simulated engine's TP";
  d.engine = "agentperf-sim";
  d.engine_version = std::string(version());
  d.kv_offload = engine.cfg.hicache.enabled ? "hicache" : "none";
  d.spec_decoding = engine.cfg.spec.enabled ? "mtp" : "none";
  return d;
}

namespace {

constexpr const char* kTextKeys[] = {"model", "hardware", "engine", "engine_version", "kv_offload", "spec_decoding"};
constexpr const char* kNumberKeys[] = {"tp", "ep", "dp"};

bool is_one_of(const std::string& key, const auto& keys) {
  return std::find_if(std::begin(keys), std::end(keys), [&](const char* k) { return key == k; }) != std::end(keys);
}

// TP, EP and DP: the one numeric rule of every checked option (cli_numbers.h).
const NumberRule kParallelism{1, 1024, false, true, "a whole number", ""};

std::optional<int> parallelism(std::string value) {
  if (check_number(value, kParallelism)) return std::nullopt;
  return std::stoi(value);  // rewritten to a plain whole number by the check
}

}  // namespace

void add_describe_option(CLI::App& cmd, std::vector<std::string>& pairs) {
  cmd.add_option("--describe", pairs,
                 "KEY=VALUE, repeatable: what the run cannot learn of the server, for the report's groups and "
                 "prediction pairs: model, hardware, engine, engine_version, kv_offload, spec_decoding, tp, ep, dp "
                 "(e.g. --describe hardware=h200 --describe tp=8)")
      ->check(CLI::Validator(
          [](std::string& kv) -> std::string {
            const auto eq = kv.find('=');
            if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
              return "'" + kv + "' is not KEY=VALUE";
            const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
            if (is_one_of(key, kNumberKeys)) {
              std::string number = value;
              const auto err = check_number(number, kParallelism);
              return err ? key + ": " + *err : std::string();
            }
            if (is_one_of(key, kTextKeys)) return std::string();
            return "unknown key '" + key +
                   "' (model, hardware, engine, engine_version, kv_offload, spec_decoding, tp, ep, dp)";
          },
          "KEY=VALUE"))
      ->group("Output");
}

void apply_describe(const std::vector<std::string>& pairs, RunDescription& d) {
  for (const auto& kv : pairs) {
    const auto eq = kv.find('=');
    const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    if (key == "model") d.model = value;
    else if (key == "hardware") d.hardware = value;
    else if (key == "engine") d.engine = value;
    else if (key == "engine_version") d.engine_version = value;
    else if (key == "kv_offload") d.kv_offload = value;
    else if (key == "spec_decoding") d.spec_decoding = value;
    else if (key == "tp") d.tp = parallelism(value);
    else if (key == "ep") d.ep = parallelism(value);
    else if (key == "dp") d.dp = parallelism(value);
  }
}

}  // namespace agentperf::cli
