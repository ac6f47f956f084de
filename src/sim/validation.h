// The validation set: published measurements of real engines
// (data/validation/points.json; sources in each row and in
// docs/sim-validation-sources.md), and how one is replayed on the
// simulator to score it (`agentperf sim validate`).
//
// A point fixes the engine, model, GPU and TP, the load (closed-loop
// concurrency, fixed input and output lengths of random tokens, as the
// `vllm bench serve --dataset-name random` runs behind most points), and
// one metric. Replaying it is `sim predict` on the same shape: the point's
// requests in virtual time with the engine's scheduler (vllm or sglang),
// and the metric computed from the records with the same definitions the
// source used:
//   tpot_ms_mean      mean over requests of (E2E - TTFT) / (OSL - 1)
//                     (vLLM's TPOT; AIPerf's ITL)
//   itl_ms_mean/median  mean/median of every gap between streamed tokens
//   ttft_ms_mean/median/p95
//   output_tokens_per_s, total_tokens_per_s: tokens over the benchmark's
//                     first start to last end; _per_gpu divides by TP
// The split into a fitting half and a held-out half is in the data (fixed
// before anything was fitted: within each kind, by id, alternately); a fit
// (sim/cost_fit.h) only ever sees the fitting half.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/record.h"
#include "sim/engine_config.h"
#include "sim/engine_costs.h"
#include "sim/specs.h"

namespace agentperf::sim {

struct ValidationPoint {
  std::string id, split, kind, engine, engine_version, model, gpu, metric, source;
  // The deployment the source measured (one lab's engine, flags, client and
  // machine): points of one setup share its unknowns (below). Points that
  // name none are all of setup "unnamed".
  std::string setup;
  int tp = 1;
  int concurrency = 1;
  std::optional<int> input_tokens;  // absent: the set's assumed_input_tokens
  int output_tokens = 1;
  std::optional<int> num_prompts;   // requests sent (default: enough for a steady state)
  int prefix_tokens = 0;            // of the input, a prefix every request shares (cached after the first)
  // Spread of the lengths around their means (normal, at least 1 token):
  // a dataset's lengths vary per request (ShareGPT), and at high
  // concurrency fixed lengths end every request of a wave together, so
  // prefills come in bursts that the real run never had.
  double input_tokens_stddev = 0, output_tokens_stddev = 0;
  int kv_dtype_bytes = 2;           // KV cache element size the engine ran with
  // The --mem-fraction-static its launch command ("flags") passed; absent:
  // SGLang's own default for the GPU and flags (sglang_default_mem_fraction_static).
  std::optional<double> mem_fraction_static;
  // The launch command ("flags"): its scheduling flags apply
  // (apply_scheduling_flags), e.g. an InferenceX launcher's
  // --scheduler-recv-interval.
  std::string flags;
  // Speculative decoding the server ran (MTP/NEXTN): the source's printed
  // mean accept length (bonus token included); 0: none.
  double spec_accept_length = 0;
  int spec_num_steps = 3, spec_num_draft_tokens = 4;
  double value = 0;
  // Non-empty: shown, but neither fitted nor scored, for this reason (a
  // condition the source leaves unknown, stated in the data before any fit).
  std::string excluded;
  bool held_out() const { return split == "held_out"; }
};

struct ValidationSet {
  std::string source;
  int assumed_input_tokens = 512;
  std::map<std::string, std::string> setups;  // id -> what the deployment was
  std::vector<ValidationPoint> points;
};

// What a source leaves unknown, estimated by the fit from the fitting half
// only and used for both halves (they share the setup):
//   input_tokens[setup]  the mean prompt length of a setup that publishes
//                        none (its points have input_tokens null); absent:
//                        the set's assumed_input_tokens
//   hbm_efficiency[gpu]  the fraction of the GPU's HBM bandwidth reached
//                        (`--fit-hbm-efficiency`); absent: the spec's
//   setup_costs[setup][coefficient]
//                        the deployment's own engine costs (front-end
//                        latency, per-step and per-request work: they follow
//                        its flags, engine version, host CPU and client),
//                        replacing the profile's for that setup's points;
//                        absent: the profile's (an uncalibrated deployment)
//   hardware[platform][coefficient]
//                        a hardware spec coefficient (hardware_coefficient_names:
//                        an efficiency, the all-reduce latency, a launch
//                        overhead, a layer latency scale) for every GPU
//                        of that platform
//                        (`--fit-hardware rocm_gfx942`); absent: the spec's
struct ValidationUnknowns {
  std::map<std::string, double> input_tokens, hbm_efficiency;
  std::map<std::string, std::map<std::string, double>> setup_costs;
  std::map<std::string, std::map<std::string, double>> hardware;
  // The fit's names for them: "input_tokens:<setup>", "hbm_efficiency:<gpu>",
  // "setup_cost:<setup>:<coefficient>", "hardware:<platform>:<coefficient>".
  static ValidationUnknowns from_named(const std::map<std::string, double>& named);
  nlohmann::ordered_json to_json() const;
};

// The unknowns a fitted engine profile was fitted with (its
// fit.validation_unknowns; empty for a profile that has none, e.g. roofline;
// an unknown name is the UserError load_engine_costs gives).
ValidationUnknowns validation_unknowns_of_profile(const std::string& name_or_path);

// The input length the point runs with.
int input_tokens_of(const ValidationSet& set, const ValidationPoint& p, const ValidationUnknowns& u);

// "builtin" (the shipped set) or a path. Throws UserError naming the file,
// the point and the field.
ValidationSet load_validation_set(const std::string& name_or_path);

// A benchmark's shape: closed-loop concurrency over fixed-length random
// prompts (input_tokens include a shared prefix_tokens), and the metric.
struct BenchmarkShape {
  int concurrency = 1;
  int input_tokens = 1;
  int output_tokens = 1;
  int prefix_tokens = 0;
  double input_tokens_stddev = 0, output_tokens_stddev = 0;  // 0: every request has the mean length
  std::optional<int> num_prompts;
  int warmup_prompts = 0;  // sent and drained first, not scored (e.g. to cache the shared prefix)
  std::string metric;
};

// The metric over the profiling records of a run (simulated or measured:
// `calibrate engine` scores its probes with this too), with the definitions
// above. Throws UserError for an unknown metric name.
double metric_of(const std::string& metric, const std::vector<RequestRecord>& records, int tp);
const std::vector<std::string>& validation_metric_names();

// The shape's metric, predicted on an engine of this model, GPU and config.
double predict_metric(const ModelSpec& model, const HardwareSpec& hw, const EngineConfig& cfg,
                      const BenchmarkShape& shape);

// The point's metric, predicted with these engine costs (the engine's
// published defaults for the rest of the config) and the setups' unknowns.
double predict_point(const ValidationSet& set, const ValidationPoint& p, const EngineCosts& costs,
                     const ValidationUnknowns& unknowns = {});

}  // namespace agentperf::sim
