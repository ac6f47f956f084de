// `agentperf calibrate engine --url URL`: fit the simulator's engine-level
// costs (sim/engine_costs.h) to a live endpoint, from a short probe plan.
//
// Why probes, and why these. The simulator's step time is the hardware
// roofline plus the engine's own work: a per-forward cost (step_s), a per
// decode request cost (request_s), and scales on the roofline's parts
// (weight_read_scale on the weights streamed each forward, gemm_scale on the
// GEMM math, attention_scale on prefill attention, kv_read_scale on the
// decode KV read). Each probe is a load shape in which one or two of these
// dominate, so that the set of probes pins each coefficient down:
//
//   decode, batch B = 1, 2, 4, ... 256: closed loop of B requests, short
//     input (128 tokens), 128-256 output tokens with ignore_eos, after an
//     unscored wave of B requests (connections open, engine warm), scored
//     on the median inter-token latency (or the mean TPOT: --decode-metric).
//     A decode step of B requests costs
//       step_s + B x request_s + max(weights x weight_read_scale / bw,
//                                     B x 2 x params x gemm_scale / flops) + KV
//     At small B the step is memory-bound: TPOT(1) is step_s plus the weight
//     read, and the slope over B is request_s (plus the small KV read).
//     At large B the GEMM math overtakes the weight read, so the top of the
//     curve sees gemm_scale and hides weight_read_scale: that bend is what
//     separates the per-step constant (step_s) from the weight read.
//   prefill, input L = 1k .. 64k, concurrency 1, 1-4 output tokens, scored on
//     the mean TTFT: one request's prefill is GEMM math over L tokens
//     (gemm_scale, linear in L) plus attention over L^2 / 2 pairs
//     (attention_scale, quadratic in L) plus a few step_s; its lengths span
//     the linear and the quadratic regime, so the two scales come apart.
//   cached prefix, the same lengths with all but the last 256 tokens a prefix
//     that a warm request (sent first, not scored) left in the engine's
//     cache: the 256 new tokens attend over the whole context, so the TTFT is
//     step_s + a short GEMM (weights-bound: weight_read_scale) + attention
//     over 256 x L pairs (attention_scale again, now without the L^2 GEMM
//     part), and it checks that the server's prefix cache is what the
//     simulator assumes.
//
// Every probe is measured with LoadRunner (the `profile` client) and scored
// with sim::metric_of, the one definition of each metric; every prediction
// is sim::predict_metric on the same shape (a whole virtual-time run of the
// simulator with the engine config from the flags and the candidate costs,
// so queueing and scheduling are in it too). The fit is
// sim::fit_engine_costs: robust least squares on log ratios over the free
// coefficients (Nelder-Mead in log space, then its Levenberg-Marquardt
// polish), the others kept as given.
// Probes named in the hold-out list are measured and predicted at the
// fitted costs but not fitted: a check of the fit on shapes it never saw.
//
// Output: the engine profile (sim::engine_costs_json) with a "fit" object
// holding each probe's shape, its measured value (median over repeats and
// the repeats themselves), the prediction and the residual. `sim`, `plan`
// and `sweep --dry-run` load it with --engine-profile FILE.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "load/profile_config.h"
#include "sim/engine_config.h"
#include "sim/engine_costs.h"
#include "sim/specs.h"
#include "sim/validation.h"

namespace agentperf::calibrate {

struct EngineProbe {
  std::string label;  // "decode-b4", "prefill-4096", "prefix-4096"
  std::string kind;   // "decode", "prefill", "prefix"
  sim::BenchmarkShape shape;  // concurrency, lengths, num_prompts, warmup_prompts, metric
  bool held_out = false;
};

struct EngineProbePlanOptions {
  std::vector<int> batches{1, 2, 4, 8, 16, 32, 64, 128, 256};
  std::vector<int> input_lengths{1024, 2048, 4096, 8192, 16384, 32768, 65536};
  int decode_input_tokens = 128;
  int decode_output_tokens = 128;
  int decode_waves = 2;            // requests per decode probe = waves x batch
  // A first, unscored wave of B requests: the client's connections are open
  // and the engine warm when the scored waves start together.
  bool decode_warmup = true;
  // What a decode probe is scored on. The median gap between streamed
  // tokens is the decode step itself; TPOT means also carry the stalls of a
  // closed loop's start and resends (a burst of arrivals whose prefills
  // interrupt the decode), which a real client spreads differently from the
  // simulator's, so they fit the per-step costs less exactly.
  std::string decode_metric = "itl_ms_median";
  int prefill_output_tokens = 2;
  int prefill_requests = 3;        // scored requests per prefill probe
  int prefix_new_tokens = 256;     // uncached tail of a cached-prefix probe
  bool prefix_probes = true;
  int max_context = 0;             // input + output must fit (the model's max context); 0 = no cap
  std::vector<std::string> hold_out;  // labels, kinds, or batch / input-length values
};

// The plan, decode probes first (ascending batch), then prefill, then
// cached-prefix probes. Throws UserError for an empty plan or bad values.
std::vector<EngineProbe> plan_engine_probes(const EngineProbePlanOptions& o);

// Does `token` (a label, a kind, or a number) name this probe? A number
// matches a decode probe's batch or a prefill probe's input length.
bool probe_matches(const EngineProbe& p, const std::string& token);

struct ProbeMeasurement {
  EngineProbe probe;
  std::vector<double> repeats;  // the metric of each repeat
  double measured = 0;          // their median
  double seconds = 0;           // wall time of the probe, all repeats
};

struct EngineProbeRunOptions {
  ClientConfig client;  // url, model (empty: GET /v1/models), endpoint, prompt format, extra inputs
  int repeats = 1;
  std::uint64_t seed = 0;
  std::function<void(const std::string&)> progress;  // one line per probe (may be empty)
  std::string* served_model = nullptr;  // set to the model the probes used, when given
  // The endpoint's clock against real time: a `sim serve --time-scale S`
  // runs S times faster than the model, so measured durations are
  // multiplied by S (a slowed-down simulator, S < 1, makes the client's
  // and the HTTP server's own microseconds small against each step).
  double time_scale = 1;
};

// Measures every probe against the endpoint. Throws UserError naming the
// probe when the server is unreachable or any of a probe's requests fails.
std::vector<ProbeMeasurement> measure_engine_probes(const std::vector<EngineProbe>& plan,
                                                    const EngineProbeRunOptions& o);

struct EngineFitSettings {
  std::vector<std::string> free{"step_s", "request_s", "weight_read_scale", "gemm_scale", "attention_scale"};
  int max_evaluations = 400;
  int restarts = 2;
  std::function<void(const std::string&)> progress;
};

struct ProbeResult {
  ProbeMeasurement m;
  double predicted = 0;
  double relative_error = 0;  // (predicted - measured) / measured
};

struct EngineCalibration {
  sim::EngineCosts costs;
  std::vector<ProbeResult> probes;
  std::vector<std::string> free;
  double objective = 0;
  int evaluations = 0;
  double fit_mape_percent = 0;
  double held_out_mape_percent = -1;  // -1: none held out
};

// Fits `free` (from the costs in base.costs) on the probes not held out and
// predicts every probe at the fitted costs. Throws UserError when nothing is
// left to fit or a name is not a coefficient.
EngineCalibration fit_engine_calibration(const sim::ModelSpec& model, const sim::HardwareSpec& hw,
                                         const sim::EngineConfig& base, const std::vector<ProbeMeasurement>& measured,
                                         const EngineFitSettings& s);

// The residuals table: probe, metric, measured, predicted, error %.
std::string format_residuals(const EngineCalibration& c);

// What produced a calibration, for the profile's "fit" object.
struct CalibrationContext {
  std::string url, served_model, model_spec, hardware, scheduler;
  int tp = 1;
  int repeats = 1;
};

// The engine profile file (sim::engine_costs_json) with the fit.
nlohmann::ordered_json engine_profile_json(const EngineCalibration& c, const CalibrationContext& ctx,
                                           const std::string& name);

// Writes the profile atomically after checking that it loads back with
// sim::load_engine_costs (a fitted value outside a coefficient's range is a
// UserError and nothing is written).
void write_engine_profile(const std::string& path, const nlohmann::ordered_json& profile);

}  // namespace agentperf::calibrate
