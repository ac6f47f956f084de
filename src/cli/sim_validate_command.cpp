#include "cli/sim_validate_command.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cli/sim_validate_agentx.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_reader.h"
#include "sim/cost_fit.h"
#include "sim/specs.h"
#include "sim/validation.h"
#include "trace/synth.h"

namespace agentperf::cli {

struct SimValidateCommand {
  CLI::App* cmd = nullptr;
  std::string points = "builtin";
  std::string engine_profile;  // empty: each point's engine's shipped profile
  std::string engine;          // non-empty: only this engine's points (fit, scored and shown)
  std::vector<std::string> gpus;  // non-empty: only the points on these GPUs
  std::string fit_out, markdown_out;
  // Shared by every setup: how the kernels meet the hardware.
  std::vector<std::string> fit_names = {"weight_read_scale", "gemm_scale", "attention_scale",
                                        "moe_half_tokens_per_expert"};
  bool fit_hbm = false;  // also fit each GPU's HBM efficiency (the specs' are estimates)
  bool assume_input_tokens = false;  // don't fit unpublished input lengths: use the set's assumed one
  double input_tokens_prior_factor = 10;
  // Fitted once per setup: what follows a deployment's flags, engine
  // version, attention backend, host and client (docs/sim-validation.md).
  std::vector<std::string> setup_cost_names = {"front_end_s", "step_s", "request_s", "kv_read_scale"};
  bool polish = true;
  int max_evaluations = 300;
  bool check = false;
  double max_held_out_mape = 10, max_point_error = 25;
  std::string family_limits;  // exit 1 when a family's held-out MAPE is over its limit in this file
  bool lofo = false;          // leave-one-family-out: refit without each family, score it
  // --fit-hardware PLATFORM: the hardware coefficients of that platform's
  // GPUs instead, fitted on its fitting points with the engine profile kept.
  std::string fit_hardware;
  std::vector<std::string> hardware_coefficients = {"efficiency.hbm", "efficiency.gemm", "efficiency.attention",
                                                    "allreduce_alpha_s", "layer_latency_scale.decode",
                                                    "layer_latency_scale.prefill"};
  std::string hardware_start;  // spec the coefficients start from (default: the platform's own)
  double hardware_prior_factor = 3;
  std::string hardware_out;
  // With --check: exit 1 when a platform spec's coefficient is more than
  // this far (relative) from what the fit gives.
  double hardware_check_tolerance = 0.05;
  // --agentx: the published AgentX runs instead (cli/sim_validate_agentx.h).
  bool agentx = false;
  AgentxValidateOptions agentx_opts;
};

namespace {

struct Row {
  const sim::ValidationPoint* p;
  double predicted = 0, error = 0;  // error: signed, relative
  double error_central = 0;         // with the profile's central deployment costs
};

std::string markdown_table(const sim::ValidationSet& set, const std::vector<Row>& rows, const std::string& profile,
                           const std::map<std::string, sim::ValidationUnknowns>& unknowns, double fit_mape,
                           double held_mape, bool central, double held_mape_central) {
  std::ostringstream o;
  o << "| point | split | setup | model | GPU | TP | conc | ISL/OSL | metric | published | predicted | error |"
    << (central ? " uncalibrated |" : "") << " source |\n"
    << "|---|---|---|---|---|---|---|---|---|---|---|---|" << (central ? "---|" : "") << "---|\n";
  for (const auto& r : rows) {
    const auto& p = *r.p;
    char buf[1024];
    const std::string isl = p.input_tokens ? std::to_string(*p.input_tokens)
                                           : std::to_string(sim::input_tokens_of(set, p, unknowns.at(p.engine))) + "*";
    const std::string split = p.excluded.empty() ? p.split : "excluded: " + p.excluded;
    std::string central_cell;
    if (central) {
      char c[32];
      std::snprintf(c, sizeof c, " %+.1f %% |", 100 * r.error_central);
      central_cell = c;
    }
    std::snprintf(buf, sizeof buf, "| %s | %s | %s (%s %s) | %s | %s | %d | %d | %s/%d | %s | %.4g | %.4g | %+.1f %% |%s [link](%s) |\n",
                  p.id.c_str(), split.c_str(), p.setup.c_str(), p.engine.c_str(), p.engine_version.c_str(),
                  p.model.c_str(), p.gpu.c_str(), p.tp, p.concurrency, isl.c_str(), p.output_tokens, p.metric.c_str(),
                  p.value, r.predicted, 100 * r.error, central_cell.c_str(), p.source.c_str());
    o << buf;
  }
  char buf[512];
  std::snprintf(buf, sizeof buf, "\nEngine profile: %s. MAPE: fitting half %.1f %%, held-out half %.1f %%. "
                "`*`: input length not published: the mean the fit estimated for that setup from its fitting "
                "points (the set's assumed %d tokens where none was fitted).\n",
                profile.c_str(), fit_mape, held_mape, set.assumed_input_tokens);
  o << buf;
  if (central) {
    std::snprintf(buf, sizeof buf, "\n`predicted`/`error`: each setup with its own deployment costs, fitted on its "
                  "fitting points; `uncalibrated`: every setup with the profile's central ones (held-out MAPE %.1f %%).\n",
                  held_mape_central);
    o << buf;
  }
  return o.str();
}

}  // namespace

std::shared_ptr<SimValidateCommand> add_sim_validate_command(CLI::App& sim) {
  auto vc = std::make_shared<SimValidateCommand>();
  vc->cmd = sim.add_subcommand(
      "validate", "Replay published measurements of real engines on the simulator: predicted vs published, signed "
                  "error, MAPE of the fitting and the held-out half");
  vc->cmd->add_option("--points", vc->points, "Validation set: builtin (data/validation/points.json) or a JSON file")
      ->capture_default_str();
  vc->cmd->add_option("--engine-profile", vc->engine_profile,
                      "Engine costs for every point (default: the shipped profile of each point's engine); with "
                      "--fit, the profile whose --fit-coefficients are refitted (its others are kept)");
  vc->cmd->add_option("--engine", vc->engine,
                      "Only the points of this engine (sglang, vllm): each engine's profile is fitted on its own "
                      "points");
  vc->cmd->add_option("--gpu", vc->gpus,
                      "Only the points on this GPU (repeatable: any of them), e.g. the NVIDIA ones a profile's targets "
                      "were set on");
  vc->cmd->add_option("--fit", vc->fit_out,
                      "Fit the engine costs on the fitting half only, write them here as an engine profile, and "
                      "score both halves with them");
  vc->cmd->add_option("--fit-coefficients", vc->fit_names,
                      "Coefficients --fit varies (the rest stay neutral, or keep --engine-profile's values)")
      ->delimiter(',')->capture_default_str();
  vc->cmd->add_flag("--fit-hbm-efficiency", vc->fit_hbm,
                    "With --fit: also fit one HBM efficiency per GPU (the specs' are estimates); reported, to be "
                    "copied into data/hardware by hand");
  vc->cmd->add_flag("--assume-input-tokens", vc->assume_input_tokens,
                    "With --fit: run points of unpublished input length at the set's assumed_input_tokens instead of "
                    "fitting one mean input length per setup");
  vc->cmd->add_option("--setup-costs", vc->setup_cost_names,
                      "With --fit: coefficients fitted once per setup (a deployment's own front end, step and "
                      "per-request work), each tied to a typical value by a wide prior; none: fit every coefficient "
                      "once for all")
      ->delimiter(',')->capture_default_str();
  vc->cmd->add_option("--input-tokens-prior", vc->input_tokens_prior_factor,
                      "With --fit: one standard deviation of the prior on a fitted input length, as a factor around "
                      "the set's assumed_input_tokens")
      ->check(CLI::Range(1.01, 1000.0))->capture_default_str();
  vc->cmd->add_flag("--polish,!--no-polish", vc->polish,
                    "With --fit: follow the simplex with Levenberg-Marquardt on every unknown (default; the per-setup "
                    "unknowns are too many for the simplex alone)");
  vc->cmd->add_option("--max-evaluations", vc->max_evaluations, "Simulator runs of the whole fitting half a fit may use")
      ->check(CLI::Range(10, 100000))->capture_default_str();
  vc->cmd->add_option("--markdown", vc->markdown_out, "Also write the table as markdown (docs/sim-validation.md's)");
  vc->cmd->add_flag("--check", vc->check,
                    "Exit 1 unless the held-out MAPE is at most --max-held-out-mape and no held-out point is off by "
                    "more than --max-point-error (fitting points are shown, not gated: they are not predictions)");
  vc->cmd->add_option("--max-held-out-mape", vc->max_held_out_mape, "Percent")->capture_default_str();
  vc->cmd->add_option("--max-point-error", vc->max_point_error, "Percent")->capture_default_str();
  vc->cmd->add_option("--family-limits", vc->family_limits,
                      "A JSON file {\"family\": max held-out MAPE %, ...}: exit 1 when a family is over its limit")
      ->check(CLI::ExistingFile);
  vc->cmd->add_flag("--lofo", vc->lofo,
                    "Leave one model family out: for each family, refit --fit-coefficients on the other families' "
                    "fitting points only and score the family's points (use with --engine)");
  auto* hwg = "Hardware fit (--fit-hardware)";
  vc->cmd->add_option("--fit-hardware", vc->fit_hardware,
                      "Fit the hardware coefficients of one platform's GPUs (rocm_gfx942: MI300X and MI325X; "
                      "rocm_gfx950: MI355X) on its fitting points, the engine profile kept as shipped; print them "
                      "beside each spec's and score the platform's points with them")
      ->group(hwg);
  vc->cmd->add_option("--hardware-coefficients", vc->hardware_coefficients,
                      "Coefficients --fit-hardware varies (efficiency.hbm, efficiency.gemm, efficiency.attention, "
                      "allreduce_alpha_s, launch_overhead_s.cuda_graph, launch_overhead_s.per_step_cpu, layer_latency_scale.decode, "
                      "layer_latency_scale.prefill, or layer_latency_scale: one scale for both)")
      ->delimiter(',')->capture_default_str()->group(hwg);
  vc->cmd->add_option("--hardware-start", vc->hardware_start,
                      "Hardware spec whose coefficients centre the fit's prior (default: the platform's own spec; the fit "
                      "starts from the platform spec's values)")
      ->group(hwg);
  vc->cmd->add_option("--hardware-prior", vc->hardware_prior_factor,
                      "One standard deviation of the prior on each hardware coefficient, as a factor around its centre")
      ->check(CLI::Range(1.01, 1000.0))->capture_default_str()->group(hwg);
  vc->cmd->add_option("--hardware-out", vc->hardware_out, "Also write the fitted coefficients and residuals as JSON")
      ->group(hwg);
  auto* ax = "AgentX (--agentx)";
  vc->cmd->add_flag("--agentx", vc->agentx,
                    "Score the published InferenceX AgentX runs (data/validation/agentx_points.json) instead: each "
                    "point replayed in virtual time as its deployment ran; MAPE per metric, family and series")
      ->group(ax);
  vc->cmd->add_option("--agentx-points", vc->agentx_opts.points,
                      "AgentX validation set: builtin or a JSON file")->capture_default_str()->group(ax);
  vc->cmd->add_option("--duration", vc->agentx_opts.duration_s, "Seconds of serving each point replays (published runs: 3600)")
      ->check(CLI::Range(60.0, 86400.0))->capture_default_str()->group(ax);
  vc->cmd->add_option("--jobs,-j", vc->agentx_opts.jobs, "Points predicted at once (0: one per core)")
      ->check(CLI::Range(0, 1024))->capture_default_str()->group(ax);
  vc->cmd->add_option("--series", vc->agentx_opts.only,
                      "Only the series whose id contains this text (repeatable: any of them)")->group(ax);
  vc->cmd->add_option("--json", vc->agentx_opts.json_out, "Also write every point, error and MAPE as JSON")->group(ax);
  vc->cmd->add_option("--max-total-tput-mape", vc->agentx_opts.max_total_tput_mape,
                      "With --agentx --check: limit on each family's held-out total tok/s/GPU MAPE, percent")
      ->capture_default_str()->group(ax);
  vc->cmd->add_option("--max-ttft-mape", vc->agentx_opts.max_ttft_mape, "With --agentx --check: mean TTFT, percent")
      ->capture_default_str()->group(ax);
  vc->cmd->add_option("--max-tpot-mape", vc->agentx_opts.max_tpot_mape, "With --agentx --check: mean TPOT, percent")
      ->capture_default_str()->group(ax);
  vc->cmd->add_option("--sample-orders", vc->agentx_opts.sample_orders,
                      "Also predict each point with the lanes starting at K-1 other places in the corpus, and report "
                      "each prediction's range over the K trace orders (K times the CPU)")
      ->check(CLI::Range(1, 16))->capture_default_str()->group(ax);
  vc->cmd->add_option("--corpus", vc->agentx_opts.corpus,
                      "Replay every series on this corpus preset instead of its own (cc-weka-256k, cc-weka-1m): a "
                      "what-if")
      ->check(CLI::IsMember(trace::synth_preset_names()))->group(ax);
  vc->cmd->add_option("--corpus-file", vc->agentx_opts.corpus_files,
                      "PRESET=PATH (repeatable): the series that replay PRESET (cc-weka-256k, cc-weka-1m) replay the "
                      "Weka traces in PATH instead of the synthetic stand-in, its first 393 rows in file order as "
                      "InferenceX has AIPerf load them (the real corpus reproduces the rows and t* of the published "
                      "hour)")
      ->group(ax);
  vc->cmd->add_flag("-q,--quiet", vc->agentx_opts.quiet, "No progress lines")->group(ax);
  return vc;
}

namespace {

// Where each setup's own deployment costs start, and how far a prior lets
// them wander (one standard deviation, as a factor): magnitudes of real
// engines (a vLLM or SGLang step's CPU work, a decode request's sampling
// and streaming, an API server's front end), and wide: the soft-L1 loss of
// a point off by a factor of 3 is only ~0.4, so a narrower prior would
// outweigh the points it is meant to give way to. It decides only what the
// setup's points leave open (a setup with no TTFT point keeps the centre's
// front end).
struct SetupCostPrior {
  double centre, factor;
};
SetupCostPrior setup_cost_prior(const std::string& name) {
  if (name == "front_end_s") return {3e-3, 1000};
  if (name == "step_s") return {5e-4, 30};
  if (name == "request_s") return {1e-5, 30};
  if (name == "attention_request_s") return {1e-7, 100};
  if (name == "prefill_token_s") return {1e-6, 100};
  if (sim::EngineCosts::range(name).first > 0) return {1, 10};     // a scale
  return {sim::EngineCosts::range(name).second * 1e-3, 100};  // another additive cost
}

// Each setup's own costs as fit unknowns ("setup_cost:<setup>:<name>"),
// starting at their typical value under its prior.
void add_setup_cost_extras(sim::CostFitOptions& fo, const std::set<std::string>& setups,
                           const std::vector<std::string>& names) {
  for (const auto& s : setups)
    for (const auto& name : names) {
      const auto prior = setup_cost_prior(name);
      const auto [lo, hi] = sim::EngineCosts::range(name);
      fo.extras.push_back({"setup_cost:" + s + ":" + name, prior.centre, std::max(lo, prior.centre * 1e-4), hi,
                           std::log(prior.factor)});
    }
}

// A deployment-level cost the profile carries for an uncalibrated setup:
// the median over the fitted setups (the geometric mean of the middle two
// for an even count), so one unusual deployment (GPUStack's 45 ms front
// end) does not become everyone's.
double central_value(const std::map<std::string, std::map<std::string, double>>& by_setup, const std::string& name) {
  std::vector<double> v;
  for (const auto& [setup, coefs] : by_setup)
    if (auto it = coefs.find(name); it != coefs.end() && it->second > 0) v.push_back(it->second);
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : std::sqrt(v[n / 2 - 1] * v[n / 2]);
}

// A point's model family (its spec's "family").
const std::string& family_of(const sim::ValidationPoint& p) {
  static std::map<std::string, std::string> cache;
  auto it = cache.find(p.model);
  if (it == cache.end()) it = cache.emplace(p.model, sim::load_model_spec(p.model).family).first;
  return it->second;
}

// The platform of a point's GPU (its hardware spec's "platform").
const std::string& platform_of(const sim::ValidationPoint& p) {
  static std::map<std::string, std::string> cache;
  auto it = cache.find(p.gpu);
  if (it == cache.end()) it = cache.emplace(p.gpu, sim::load_hardware_spec(p.gpu).platform).first;
  return it->second;
}

// The engine costs are fitted on CUDA points only. A ROCm point's miss is
// first its GPU's (the AMD specs' coefficients come from their own fit,
// `--fit-hardware`, which keeps the engine costs as they are): fitting the
// engine on it would spread one platform's kernels over every NVIDIA point.
bool fits_engine_costs(const sim::ValidationPoint& p) { return platform_of(p).rfind("rocm_", 0) != 0; }

// The group a point is scored in: its family, and on a ROCm GPU its family
// on that platform ("deepseek-v3 (rocm_gfx942)"), so the AMD points, whose
// GPU costs come from another fit, never move an NVIDIA family's error.
std::string score_group_of(const sim::ValidationPoint& p) {
  return fits_engine_costs(p) ? family_of(p) : family_of(p) + " (" + platform_of(p) + ")";
}

struct FamilyErrors {
  std::vector<double> fit, held;
  double worst_held = 0;
};

std::map<std::string, FamilyErrors> family_errors(const std::vector<Row>& rows) {
  std::map<std::string, FamilyErrors> out;
  for (const auto& r : rows) {
    if (!r.p->excluded.empty()) continue;
    auto& f = out[score_group_of(*r.p)];
    (r.p->held_out() ? f.held : f.fit).push_back(r.error);
    if (r.p->held_out()) f.worst_held = std::max(f.worst_held, std::abs(r.error));
  }
  return out;
}

// --family-limits FILE: {"family": max held-out MAPE in %, ...}; a family
// over its limit (or missing from the set) is named on stderr.
bool families_within_limits(const std::map<std::string, FamilyErrors>& families, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("--family-limits '" + path + "': cannot open it (" + std::strerror(errno) + ")");
  const nlohmann::json j = parse_json(in, path);
  const JsonReader f(j, path);
  bool ok = true;
  for (const auto& [fam, limit] : f.entries()) {
    const double max = limit.number("", JsonRange::positive());
    auto it = families.find(fam);
    if (it == families.end()) {
      std::fprintf(stderr, "sim validate: %s names family '%s', which has no scored point\n", path.c_str(), fam.c_str());
      ok = false;
      continue;
    }
    const double held = sim::mape_percent(it->second.held);
    if (held > max + 1e-9) {
      std::fprintf(stderr, "sim validate: family %s: held-out MAPE %.1f %% is over its limit %.1f %% (%s)\n", fam.c_str(),
                   held, max, path.c_str());
      ok = false;
    }
  }
  return ok;
}

// The fit of `sim validate --fit` on the fitting points `include` admits:
// the free coefficients shared by every setup, each setup's own costs and
// unknowns; `shipped` carries the setups' central values (what an
// uncalibrated deployment gets).
struct FitOutcome {
  sim::CostFitResult fit;
  std::vector<std::string> labels;  // per target
  std::vector<std::string> free;
  sim::ValidationUnknowns unknowns;
  sim::EngineCosts shipped;
};

FitOutcome fit_validation(const SimValidateCommand& vc, const sim::ValidationSet& set,
                          const std::function<bool(const sim::ValidationPoint&)>& include, bool verbose) {
  std::vector<sim::FitTarget> targets;
  std::set<std::string> gpus, unknown_length_setups, setups;
  for (const auto& p : set.points) {
    // The held-out half never reaches the fit.
    if (p.held_out() || !p.excluded.empty() || !fits_engine_costs(p) || !include(p)) continue;
    sim::FitTarget t;
    t.label = p.id;
    t.measured = p.value;
    t.predict_with_extras = [&set, &p](const sim::EngineCosts& c, const sim::FitExtras& e) {
      return sim::predict_point(set, p, c, sim::ValidationUnknowns::from_named(e));
    };
    // A setup's unknowns touch only its points, a GPU's HBM efficiency only its.
    t.reads_extra = [&p](const std::string& extra) {
      const auto colon = extra.find(':');
      const std::string kind = extra.substr(0, colon), rest = extra.substr(colon + 1);
      if (kind == "hbm_efficiency") return rest == p.gpu;
      return rest == p.setup || rest.rfind(p.setup + ":", 0) == 0;
    };
    targets.push_back(std::move(t));
    gpus.insert(p.gpu);
    setups.insert(p.setup);
    if (!p.input_tokens) unknown_length_setups.insert(p.setup);
  }
  if (targets.empty()) throw UserError(set.source + ": no point has split \"fit\"");
  sim::CostFitOptions fo;
  fo.free = vc.fit_names;
  fo.max_evaluations = vc.max_evaluations;
  fo.polish = vc.polish;
  fo.polish_restarts = false;  // one Levenberg-Marquardt run: each costs as much as the whole simplex
  if (!vc.assume_input_tokens)
    for (const auto& s : unknown_length_setups)
      fo.extras.push_back({"input_tokens:" + s, static_cast<double>(set.assumed_input_tokens), 64, 16384,
                           std::log(vc.input_tokens_prior_factor), 0.05});
  add_setup_cost_extras(fo, setups, vc.setup_cost_names);
  if (vc.fit_hbm) {
    // Held near the spec's estimate (a factor of 1.25 at one standard
    // deviation): a GPU with one point (H200 here) must not take up what
    // that point's other unknowns leave over.
    for (const auto& g : gpus)
      fo.extras.push_back({"hbm_efficiency:" + g, sim::load_hardware_spec(g).eff_hbm, 0.3, 1.0, std::log(1.25)});
    // A GPU's HBM efficiency and the engine's weight-read scale multiply
    // the same term: fitting both leaves a valley the fit slides along.
    if (auto it = std::find(fo.free.begin(), fo.free.end(), "weight_read_scale"); it != fo.free.end()) {
      fo.free.erase(it);
      std::fprintf(stderr, "fit: weight_read_scale stays 1 (--fit-hbm-efficiency fits the same term per GPU)\n");
    }
  }
  if (verbose)
    fo.progress = [](int n, double f) {
      if (n % 20 == 0) std::fprintf(stderr, "fit: %d evaluations, objective %.4g\n", n, f);
    };
  // With --engine-profile the fit refits the free coefficients of that
  // profile and keeps the rest of it; without, the rest stay neutral.
  sim::EngineCosts start = vc.engine_profile.empty() ? sim::EngineCosts{} : sim::load_engine_costs(vc.engine_profile);
  start.name = "fitted";
  // An unpublished input length is where the loss has more than one
  // valley (a long prompt's KV read and a per-request cost grow alike
  // with the batch), so the fit starts it at 1, 2 and 4 times the set's
  // assumed length, the prior staying centred on it, and keeps the best.
  sim::CostFitResult fit;
  bool have_fit = false;
  const bool multi_start = std::any_of(fo.extras.begin(), fo.extras.end(),
                                       [](const sim::FitExtra& e) { return e.name.rfind("input_tokens:", 0) == 0; });
  for (const double factor : multi_start ? std::vector<double>{1, 2, 4} : std::vector<double>{1}) {
    sim::CostFitOptions run = fo;
    for (auto& e : run.extras)
      if (e.name.rfind("input_tokens:", 0) == 0) e.prior_centre = e.start, e.start *= factor;
    auto candidate = sim::fit_engine_costs(targets, start, run);
    if (multi_start && verbose)
      std::fprintf(stderr, "fit: input lengths started at %gx the assumed %d tokens: objective %.4g\n", factor,
                   set.assumed_input_tokens, candidate.objective);
    if (!have_fit || candidate.objective < fit.objective) fit = std::move(candidate), have_fit = true;
  }
  FitOutcome out;
  for (const auto& t : targets) out.labels.push_back(t.label);
  out.free = fo.free;
  out.unknowns = sim::ValidationUnknowns::from_named(fit.extras);
  // The profile's own value of a per-setup cost is what a deployment that
  // was never calibrated gets: the setups' central value.
  out.shipped = fit.costs;
  for (const auto& name : vc.setup_cost_names) out.shipped.at(name) = central_value(out.unknowns.setup_costs, name);
  out.fit = std::move(fit);
  return out;
}

// --lofo: for each family, the free coefficients refitted on every other
// family's fitting points, then that family's points scored (both halves:
// none of them reached this fit), beside their error with the profile as
// shipped. A family whose left-out error is far above its shipped error is
// one the shipped fit only serves because it saw it.
int run_leave_one_family_out(const SimValidateCommand& vc, const sim::ValidationSet& set,
                             const std::map<std::string, sim::EngineCosts>& costs,
                             const std::map<std::string, sim::ValidationUnknowns>& unknowns) {
  if (costs.size() != 1) throw UserError("--lofo refits one engine's profile: give --engine (sglang or vllm)");
  const std::string engine = costs.begin()->first;
  std::map<std::string, std::vector<const sim::ValidationPoint*>> by_family;
  for (const auto& p : set.points)
    if (p.excluded.empty()) by_family[score_group_of(p)].push_back(&p);
  std::printf("%-26s %7s %24s %24s\n", "family", "points", "shipped profile MAPE", "left out of the fit MAPE");
  std::string md = "| family left out | points | MAPE, shipped profile | MAPE, refitted without it |\n|---|---|---|---|\n";
  for (const auto& [fam, points] : by_family) {
    const FitOutcome fo =
        fit_validation(vc, set, [&fam = fam](const sim::ValidationPoint& p) { return score_group_of(p) != fam; }, false);
    std::vector<double> shipped_err, left_out_err;
    for (const auto* p : points) {
      shipped_err.push_back((sim::predict_point(set, *p, costs.at(engine), unknowns.at(engine)) - p->value) / p->value);
      left_out_err.push_back((sim::predict_point(set, *p, fo.shipped, fo.unknowns) - p->value) / p->value);
    }
    std::printf("%-26s %7zu %22.1f %% %22.1f %%\n", fam.c_str(), points.size(), sim::mape_percent(shipped_err),
                sim::mape_percent(left_out_err));
    std::fflush(stdout);
    char b[256];
    std::snprintf(b, sizeof b, "| %s | %zu | %.1f %% | %.1f %% |\n", fam.c_str(), points.size(),
                  sim::mape_percent(shipped_err), sim::mape_percent(left_out_err));
    md += b;
  }
  if (!vc.markdown_out.empty()) write_file_atomically(vc.markdown_out, md);
  return 0;
}

// The values of a fitted coefficient a spec holds: "layer_latency_scale"
// (one scale for both) is held by the decode and the prefill scale.
std::vector<double> spec_values(const sim::HardwareSpec& spec, const std::string& name) {
  if (name == "layer_latency_scale") return {spec.layer_latency_scale_decode, spec.layer_latency_scale_prefill};
  return {sim::hardware_coefficient(spec, name)};
}

// Prints each fitted coefficient beside its prior centre and every platform
// spec's value; false when a spec's is more than `tolerance` (relative)
// from the fit's (named on stderr when `name_misses`).
bool specs_hold_fit(const std::vector<std::string>& names, const std::map<std::string, double>& fitted,
                    const sim::HardwareSpec& centre, const std::map<std::string, sim::HardwareSpec>& specs,
                    double tolerance, bool name_misses) {
  std::printf("%-32s %12s %12s", "coefficient", "prior centre", "fitted");
  for (const auto& [gpu, spec] : specs) std::printf(" %12s", (gpu + " spec").c_str());
  std::printf("\n");
  bool hold = true;
  for (const auto& name : names) {
    const double v = fitted.at(name);
    std::printf("%-32s %12.4g %12.4g", name.c_str(), sim::hardware_coefficient(centre, name), v);
    for (const auto& [gpu, spec] : specs) {
      const auto shipped = spec_values(spec, name);
      std::printf(" %12.4g", shipped.front());
      for (const double x : shipped)
        if (std::abs(x / v - 1) > tolerance) {
          hold = false;
          if (name_misses)
            std::fprintf(stderr, "sim validate: data/hardware/%s.json %s is %.4g; this fit gives %.4g (more than %.0f "
                         "%% apart)\n", gpu.c_str(), name.c_str(), x, v, 100 * tolerance);
        }
    }
    std::printf("\n");
  }
  return hold;
}

// --fit-hardware PLATFORM: the hardware coefficients every GPU of the
// platform shares, fitted on the platform's fitting points with the engine
// profile kept as shipped, beside each fitting setup's own deployment costs
// (as `--fit` fits them: what follows one deployment's flags and engine
// version stays that deployment's, not the platform's). A held-out setup
// is uncalibrated: it runs with the profile's central deployment costs, so
// the coefficients are judged on what they carry to a deployment they did
// not see. Each coefficient has a prior centred on --hardware-start's value
// (default: the platform spec's), so one the points leave open stays put.
int run_hardware_fit(const SimValidateCommand& vc, const sim::ValidationSet& set,
                     const std::map<std::string, sim::EngineCosts>& costs,
                     const std::map<std::string, sim::ValidationUnknowns>& unknowns) {
  const std::string& platform = vc.fit_hardware;
  std::map<std::string, sim::HardwareSpec> specs;  // the platform's GPUs among the points
  for (const auto& p : set.points)  // an excluded point may name a GPU with no spec
    if (p.excluded.empty() && platform_of(p) == platform) specs.emplace(p.gpu, sim::load_hardware_spec(p.gpu));
  if (specs.empty())
    throw UserError("--fit-hardware: " + set.source + " has no point on a GPU of platform '" + platform + "'");
  for (const auto& name : vc.hardware_coefficients) {
    const auto& known = sim::hardware_coefficient_names();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw UserError("--hardware-coefficients: '" + name + "' is not a hardware coefficient (one of: " + list + ")");
    }
  }
  // The fit starts from the platform's spec as it is, and its prior is
  // centred on --hardware-start's values (default: the same spec). Run
  // again on the specs it wrote, the fit starts at its own answer and, the
  // prior unchanged, stays there: that is what --check asks.
  const sim::HardwareSpec start = specs.begin()->second;
  const sim::HardwareSpec centre = vc.hardware_start.empty() ? start : sim::load_hardware_spec(vc.hardware_start);
  const std::string centre_label = vc.hardware_start.empty() ? specs.begin()->first : vc.hardware_start;

  // The fit's unknowns over the profile's: the platform's coefficients and
  // each fitting setup's own deployment costs.
  const auto unknowns_with = [&](const sim::ValidationPoint& p, const sim::FitExtras& e) {
    sim::ValidationUnknowns u = unknowns.at(p.engine);
    const sim::ValidationUnknowns fitted = sim::ValidationUnknowns::from_named(e);
    u.hardware = fitted.hardware;
    for (const auto& [setup, coefs] : fitted.setup_costs)
      for (const auto& [name, v] : coefs) u.setup_costs[setup][name] = v;
    return u;
  };
  std::vector<sim::FitTarget> targets;
  std::set<std::string> fitting_setups;
  std::vector<const sim::ValidationPoint*> platform_points;
  for (const auto& p : set.points) {
    if (!p.excluded.empty() || platform_of(p) != platform) continue;
    platform_points.push_back(&p);
    if (p.held_out()) continue;  // the held-out half never reaches the fit
    sim::FitTarget t;
    t.label = p.id;
    t.measured = p.value;
    t.predict_with_extras = [&, pp = &p](const sim::EngineCosts&, const sim::FitExtras& e) {
      return sim::predict_point(set, *pp, costs.at(pp->engine), unknowns_with(*pp, e));
    };
    t.reads_extra = [pp = &p](const std::string& extra) {
      return extra.rfind("hardware:", 0) == 0 || extra.rfind("setup_cost:" + pp->setup + ":", 0) == 0;
    };
    targets.push_back(std::move(t));
    fitting_setups.insert(p.setup);
  }
  if (targets.empty())
    throw UserError("--fit-hardware: " + set.source + " has no scored fitting point on platform '" + platform + "'");
  sim::CostFitOptions fo;
  fo.max_evaluations = vc.max_evaluations;
  fo.polish = vc.polish;
  fo.polish_restarts = false;
  for (const auto& name : vc.hardware_coefficients) {
    const auto [lo, hi] = sim::hardware_coefficient_range(name);
    const double from = std::clamp(sim::hardware_coefficient(start, name), lo, hi);
    const double at = std::clamp(sim::hardware_coefficient(centre, name), lo, hi);
    fo.extras.push_back({"hardware:" + platform + ":" + name, from, lo, hi, std::log(vc.hardware_prior_factor), at});
  }
  // Each fitting setup's own costs, as `--fit` fits them beside the shared
  // coefficients: what follows one deployment's flags and engine version
  // stays that deployment's, not the platform's.
  add_setup_cost_extras(fo, fitting_setups, vc.setup_cost_names);
  fo.progress = [](int n, double f) {
    if (n % 20 == 0) std::fprintf(stderr, "fit: %d evaluations, objective %.4g\n", n, f);
  };
  std::fprintf(stderr, "fit: %zu hardware coefficients of %s and %zu setup costs on %zu fitting points, from %s's "
               "values, prior centred on %s's\n", vc.hardware_coefficients.size(), platform.c_str(),
               fo.extras.size() - vc.hardware_coefficients.size(), targets.size(), specs.begin()->first.c_str(),
               centre_label.c_str());
  const sim::CostFitResult fit = sim::fit_engine_costs(targets, costs.begin()->second, fo);
  const sim::ValidationUnknowns fitted = sim::ValidationUnknowns::from_named(fit.extras);
  const auto& values = fitted.hardware.at(platform);

  const bool hold =
      specs_hold_fit(vc.hardware_coefficients, values, centre, specs, vc.hardware_check_tolerance, vc.check);
  for (const auto& [setup, coefs] : fitted.setup_costs)
    for (const auto& [name, v] : coefs) std::printf("setup %s: %s %.4g\n", setup.c_str(), name.c_str(), v);
  std::printf("fit: %d evaluations, objective %.4g\n\n", fit.evaluations, fit.objective);

  // The platform's points, both halves, with the specs as shipped and with
  // the fitted coefficients.
  std::printf("%-48s %-8s %5s %5s %-14s %10s %12s %12s\n", "point", "split", "gpu", "conc", "metric", "published",
              "spec error", "fitted error");
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> held_by_group;  // spec, fitted
  std::vector<double> fit_spec, fit_fitted, held_spec, held_fitted;
  nlohmann::ordered_json residuals = nlohmann::ordered_json::object();
  for (const auto* p : platform_points) {
    sim::ValidationUnknowns with_fit = unknowns.at(p->engine);
    with_fit.hardware = fitted.hardware;
    for (const auto& [setup, coefs] : fitted.setup_costs)
      for (const auto& [name, v] : coefs) with_fit.setup_costs[setup][name] = v;
    const double e_spec = (sim::predict_point(set, *p, costs.at(p->engine), unknowns.at(p->engine)) - p->value) / p->value;
    const double e_fit = (sim::predict_point(set, *p, costs.at(p->engine), with_fit) - p->value) / p->value;
    std::printf("%-48s %-8s %5s %5d %-14s %10.4g %+11.1f%% %+11.1f%%\n", p->id.c_str(), p->split.c_str(),
                p->gpu.c_str(), p->concurrency, p->metric.c_str(), p->value, 100 * e_spec, 100 * e_fit);
    (p->held_out() ? held_spec : fit_spec).push_back(e_spec);
    (p->held_out() ? held_fitted : fit_fitted).push_back(e_fit);
    if (p->held_out()) {
      held_by_group[score_group_of(*p)].first.push_back(e_spec);
      held_by_group[score_group_of(*p)].second.push_back(e_fit);
    }
    residuals[p->id] = e_fit;
  }
  std::printf("\nMAPE with the specs as shipped: fitting half %.1f %% (%zu), held-out half %.1f %% (%zu)\n",
              sim::mape_percent(fit_spec), fit_spec.size(), sim::mape_percent(held_spec), held_spec.size());
  std::printf("MAPE with the fitted coefficients: fitting half %.1f %% (%zu), held-out half %.1f %% (%zu)\n",
              sim::mape_percent(fit_fitted), fit_fitted.size(), sim::mape_percent(held_fitted), held_fitted.size());
  for (const auto& [group, e] : held_by_group)
    std::printf("  held out, %s: %.1f %% as shipped, %.1f %% fitted (%zu)\n", group.c_str(), sim::mape_percent(e.first),
                sim::mape_percent(e.second), e.first.size());
  if (!vc.hardware_out.empty()) {
    nlohmann::ordered_json j = {{"platform", platform},
                                {"points", set.source},
                                {"fitted_on", "split == fit only, points on this platform's GPUs"},
                                {"start", specs.begin()->first},
                                {"prior_centre", centre_label},
                                {"prior_factor", vc.hardware_prior_factor},
                                {"coefficients", nlohmann::ordered_json::object()},
                                {"evaluations", fit.evaluations},
                                {"objective", fit.objective},
                                {"fit_mape_percent", sim::mape_percent(fit_fitted)},
                                {"held_out_mape_percent", sim::mape_percent(held_fitted)},
                                {"relative_residuals", residuals}};
    for (const auto& [name, v] : values) j["coefficients"][name] = v;
    write_file_atomically(vc.hardware_out, j.dump(2) + "\n");
  }
  if (vc.check && !hold) return 1;
  return 0;
}

// --engine and --gpu: keep the points whose `field` is one of `wanted`; a
// wanted value no point has is an error naming the flag and the values the
// set has (`named` says what was asked for: "of engine 'x'").
void keep_points_where(sim::ValidationSet& set, const char* flag, const std::vector<std::string>& wanted,
                       std::string sim::ValidationPoint::*field,
                       const std::function<std::string(const std::string&)>& named) {
  std::set<std::string> have;
  for (const auto& p : set.points) have.insert(p.*field);
  for (const auto& w : wanted)
    if (!have.count(w)) {
      std::string list;
      for (const auto& h : have) list += (list.empty() ? "" : ", ") + h;
      throw UserError(std::string(flag) + ": " + set.source + " has no point " + named(w) + " (it has: " + list + ")");
    }
  std::erase_if(set.points, [&](const sim::ValidationPoint& p) {
    return std::find(wanted.begin(), wanted.end(), p.*field) == wanted.end();
  });
}

}  // namespace

int execute_sim_validate_command(SimValidateCommand& vc) {
  if (!vc.cmd->parsed()) return -1;
  // An option of the other set would be silently ignored: name it instead.
  static const std::vector<const char*> step_level_only = {
      "--points",          "--engine",           "--gpu",           "--fit-coefficients",   "--fit-hbm-efficiency",
      "--assume-input-tokens", "--setup-costs",  "--input-tokens-prior", "--polish",         "--max-evaluations",
      "--max-held-out-mape", "--max-point-error", "--family-limits", "--lofo",               "--fit-hardware",
      "--hardware-coefficients", "--hardware-start", "--hardware-prior", "--hardware-out"};
  static const std::vector<const char*> agentx_only = {
      "--agentx-points", "--duration",      "--jobs",        "--series", "--json",        "--max-total-tput-mape",
      "--max-ttft-mape", "--max-tpot-mape", "--sample-orders", "--corpus", "--corpus-file", "--quiet"};
  for (const char* name : vc.agentx ? step_level_only : agentx_only)
    if (vc.cmd->count(name) > 0)
      throw UserError(std::string(name) + (vc.agentx ? " scores the step-level set, not --agentx's (its set is --agentx-points)"
                                                     : " applies to --agentx only"));
  if (vc.agentx) {
    if (!vc.fit_out.empty()) throw UserError("--agentx does not fit (--fit): its series are scored with the profiles as they are");
    vc.agentx_opts.engine_profile = vc.engine_profile;
    vc.agentx_opts.markdown_out = vc.markdown_out;
    vc.agentx_opts.check = vc.check;
    return run_sim_validate_agentx(vc.agentx_opts);
  }
  sim::ValidationSet set = sim::load_validation_set(vc.points);
  if (!vc.engine.empty())
    keep_points_where(set, "--engine", {vc.engine}, &sim::ValidationPoint::engine,
                      [](const std::string& e) { return "of engine '" + e + "'"; });
  if (!vc.gpus.empty())
    keep_points_where(set, "--gpu", vc.gpus, &sim::ValidationPoint::gpu, [&](const std::string& g) {
      return "on GPU '" + g + "'" + (vc.engine.empty() ? "" : " of engine '" + vc.engine + "'");
    });
  std::map<std::string, sim::EngineCosts> costs;  // by engine
  for (const auto& p : set.points)
    if (!costs.count(p.engine))
      costs[p.engine] = sim::load_engine_costs(vc.engine_profile.empty() ? p.engine : vc.engine_profile);
  // The setups' unknowns each engine's profile was fitted with (or, after
  // --fit, the ones fitted here).
  std::map<std::string, sim::ValidationUnknowns> unknowns;
  for (const auto& [engine, c] : costs)
    unknowns[engine] = sim::validation_unknowns_of_profile(vc.engine_profile.empty() ? engine : vc.engine_profile);
  std::string profile_label = vc.engine_profile.empty() ? "shipped profile of each point's engine" : vc.engine_profile;
  if (vc.setup_cost_names == std::vector<std::string>{"none"}) vc.setup_cost_names.clear();
  for (const auto& name : vc.setup_cost_names) {
    try {
      (void)sim::EngineCosts::range(name);
    } catch (const std::out_of_range&) {
      throw UserError("--setup-costs: '" + name + "' is not an engine cost coefficient");
    }
  }
  for (const auto& name : vc.setup_cost_names)
    if (std::find(vc.fit_names.begin(), vc.fit_names.end(), name) != vc.fit_names.end())
      throw UserError("--setup-costs: '" + name + "' is also in --fit-coefficients; a coefficient is fitted either "
                      "once for all setups or once per setup");
  if (vc.lofo) return run_leave_one_family_out(vc, set, costs, unknowns);
  if (!vc.fit_hardware.empty()) {
    if (!vc.fit_out.empty()) throw UserError("--fit-hardware keeps the engine profile: give it without --fit");
    return run_hardware_fit(vc, set, costs, unknowns);
  }

  if (!vc.fit_out.empty()) {
    FitOutcome fo = fit_validation(vc, set, [](const sim::ValidationPoint&) { return true; }, true);
    const auto& fit = fo.fit;
    nlohmann::ordered_json residuals = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < fo.labels.size(); ++i) residuals[fo.labels[i]] = fit.relative_error[i];
    const sim::ValidationUnknowns& fitted = fo.unknowns;
    const sim::EngineCosts& shipped = fo.shipped;
    nlohmann::ordered_json info = {{"points", set.source}, {"fitted_on", "split == fit only"},
                                   {"free", fo.free}, {"per_setup", vc.setup_cost_names},
                                   {"evaluations", fit.evaluations},
                                   {"validation_unknowns", fitted.to_json()},
                                   {"objective", fit.objective},
                                   {"fit_mape_percent", sim::mape_percent(fit.relative_error)},
                                   {"relative_residuals", residuals}};
    write_file_atomically(vc.fit_out, sim::engine_costs_json(shipped, "fitted by agentperf sim validate --fit", info).dump(2) + "\n");
    std::fprintf(stderr, "wrote %s (%d evaluations)\n", vc.fit_out.c_str(), fit.evaluations);
    for (const auto& [g, v] : fitted.hbm_efficiency)
      std::fprintf(stderr, "fitted HBM efficiency of %s: %.3f (data/hardware/%s.json efficiency.hbm)\n", g.c_str(), v,
                   g.c_str());
    for (const auto& [s, v] : fitted.input_tokens)
      std::fprintf(stderr, "fitted mean input length of setup %s: %.0f tokens\n", s.c_str(), v);
    for (const auto& [s, coefs] : fitted.setup_costs)
      for (const auto& [name, v] : coefs) std::fprintf(stderr, "fitted %s of setup %s: %.4g\n", name.c_str(), s.c_str(), v);
    for (auto& [engine, c] : costs) c = shipped;
    for (auto& [engine, u] : unknowns) u = fitted;
    profile_label = vc.fit_out;
  }

  // Each point twice: with its setup's own deployment costs (calibrated on
  // that setup's fitting points), and with the profile's central ones (what
  // a deployment nobody calibrated gets).
  std::vector<Row> rows;
  std::vector<double> fit_err, held_err, held_err_central;
  double worst = 0, worst_held = 0;
  bool any_setup_costs = false;
  for (const auto& [engine, u] : unknowns) any_setup_costs = any_setup_costs || !u.setup_costs.empty();
  std::printf("%-36s %-8s %-18s %-5s %3s %5s %-16s %10s %10s %8s%s\n", "point", "split", "model", "gpu", "tp", "conc",
              "metric", "published", "predicted", "error", any_setup_costs ? "  uncalibrated" : "");
  for (const auto& p : set.points) {
    Row r{&p};
    const auto& u = unknowns.at(p.engine);
    try {
      r.predicted = sim::predict_point(set, p, costs.at(p.engine), u);
    } catch (const UserError& e) {
      // An excluded point may be one the simulator cannot run at all (no
      // spec for its GPU): shown with the reason, never scored.
      if (p.excluded.empty()) throw;
      std::printf("%-36s %-8s %-18s %-5s %3d %5d %-16s %10.4g %10s (not scored: %s)\n", p.id.c_str(), "excluded",
                  p.model.c_str(), p.gpu.c_str(), p.tp, p.concurrency, p.metric.c_str(), p.value, "-", e.what());
      continue;
    }
    r.error = (r.predicted - p.value) / p.value;
    r.error_central = r.error;
    if (any_setup_costs) {
      auto central = u;
      central.setup_costs.clear();
      r.error_central = (sim::predict_point(set, p, costs.at(p.engine), central) - p.value) / p.value;
    }
    if (p.excluded.empty()) {
      (p.held_out() ? held_err : fit_err).push_back(r.error);
      if (p.held_out()) held_err_central.push_back(r.error_central);
      worst = std::max(worst, std::abs(r.error));
      if (p.held_out()) worst_held = std::max(worst_held, std::abs(r.error));
    }
    char central[32] = "";
    if (any_setup_costs) std::snprintf(central, sizeof central, "  %+11.1f%%", 100 * r.error_central);
    std::printf("%-36s %-8s %-18s %-5s %3d %5d %-16s %10.4g %10.4g %+7.1f%%%s%s\n", p.id.c_str(),
                p.excluded.empty() ? p.split.c_str() : "excluded",
                p.model.c_str(), p.gpu.c_str(), p.tp, p.concurrency, p.metric.c_str(), p.value, r.predicted,
                100 * r.error, central, p.excluded.empty() ? "" : " (not scored)");
    rows.push_back(r);
  }
  const double fit_mape = sim::mape_percent(fit_err), held_mape = sim::mape_percent(held_err);
  std::printf("MAPE: fitting half %.1f %% (%zu points), held-out half %.1f %% (%zu points); worst point %.1f %%, "
              "worst held-out point %.1f %%\n",
              fit_mape, fit_err.size(), held_mape, held_err.size(), 100 * worst, 100 * worst_held);
  if (any_setup_costs)
    std::printf("Uncalibrated (every setup with the profile's central deployment costs): held-out MAPE %.1f %%\n",
                sim::mape_percent(held_err_central));
  // Per model family: a coefficient fitted on one family must not make
  // another worse, so every family's error is shown on its own.
  const auto families = family_errors(rows);
  std::printf("\n%-26s %22s %22s %12s\n", "family", "fitting MAPE (points)", "held-out MAPE (points)", "worst held");
  for (const auto& [fam, e] : families)
    std::printf("%-26s %15.1f %% (%3zu) %15.1f %% (%3zu) %10.1f %%\n", fam.c_str(), sim::mape_percent(e.fit),
                e.fit.size(), sim::mape_percent(e.held), e.held.size(), 100 * e.worst_held);
  std::string md = markdown_table(set, rows, profile_label, unknowns, fit_mape, held_mape, any_setup_costs,
                                  sim::mape_percent(held_err_central));
  md += "\n| family | fitting MAPE (points) | held-out MAPE (points) | worst held-out point |\n|---|---|---|---|\n";
  for (const auto& [fam, e] : families) {
    char b[256];
    std::snprintf(b, sizeof b, "| %s | %.1f %% (%zu) | %.1f %% (%zu) | %.1f %% |\n", fam.c_str(), sim::mape_percent(e.fit),
                  e.fit.size(), sim::mape_percent(e.held), e.held.size(), 100 * e.worst_held);
    md += b;
  }
  if (!vc.markdown_out.empty()) write_file_atomically(vc.markdown_out, md);
  bool family_over = false;
  if (!vc.family_limits.empty()) family_over = !families_within_limits(families, vc.family_limits);
  if (family_over) return 1;
  if (vc.check && (held_mape > vc.max_held_out_mape || 100 * worst_held > vc.max_point_error)) {
    std::fprintf(stderr,
                 "sim validate: held-out MAPE %.1f %% (limit %.1f) or worst held-out point %.1f %% (limit %.1f) is over "
                 "its limit\n",
                 held_mape, vc.max_held_out_mape, 100 * worst_held, vc.max_point_error);
    return 1;
  }
  return 0;
}

}  // namespace agentperf::cli
