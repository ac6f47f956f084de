#include "cli/sim_validate_command.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "sim/cost_fit.h"
#include "sim/specs.h"
#include "sim/validation.h"

namespace agentperf::cli {

struct SimValidateCommand {
  CLI::App* cmd = nullptr;
  std::string points = "builtin";
  std::string engine_profile;  // empty: each point's engine's shipped profile
  std::string fit_out, markdown_out;
  std::vector<std::string> fit_names = {"step_s", "request_s", "attention_request_s", "weight_read_scale",
                                        "kv_read_scale", "gemm_scale", "attention_scale", "moe_half_tokens_per_expert"};
  bool fit_hbm = false;  // also fit each GPU's HBM efficiency (the specs' are estimates)
  int max_evaluations = 300;
  bool check = false;
  double max_held_out_mape = 10, max_point_error = 25;
};

namespace {

struct Row {
  const sim::ValidationPoint* p;
  double predicted = 0, error = 0;  // error: signed, relative
};

std::string markdown_table(const sim::ValidationSet& set, const std::vector<Row>& rows, const std::string& profile,
                           double fit_mape, double held_mape) {
  std::ostringstream o;
  o << "| point | split | engine | model | GPU | TP | conc | ISL/OSL | metric | published | predicted | error | source |\n"
       "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const auto& p = *r.p;
    char buf[1024];
    const std::string isl = p.input_tokens ? std::to_string(*p.input_tokens)
                                           : std::to_string(set.assumed_input_tokens) + "*";
    const std::string split = p.excluded.empty() ? p.split : "excluded: " + p.excluded;
    std::snprintf(buf, sizeof buf, "| %s | %s | %s %s | %s | %s | %d | %d | %s/%d | %s | %.4g | %.4g | %+.1f %% | [link](%s) |\n",
                  p.id.c_str(), split.c_str(), p.engine.c_str(), p.engine_version.c_str(), p.model.c_str(),
                  p.gpu.c_str(), p.tp, p.concurrency, isl.c_str(), p.output_tokens, p.metric.c_str(), p.value,
                  r.predicted, 100 * r.error, p.source.c_str());
    o << buf;
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "\nEngine profile: %s. MAPE: fitting half %.1f %%, held-out half %.1f %%. "
                "`*`: input length not published; the set's assumed %d tokens.\n",
                profile.c_str(), fit_mape, held_mape, set.assumed_input_tokens);
  o << buf;
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
                      "Engine costs for every point (default: the shipped profile of each point's engine)");
  vc->cmd->add_option("--fit", vc->fit_out,
                      "Fit the engine costs on the fitting half only, write them here as an engine profile, and "
                      "score both halves with them");
  vc->cmd->add_option("--fit-coefficients", vc->fit_names, "Coefficients --fit varies (the rest stay neutral)")
      ->delimiter(',')->capture_default_str();
  vc->cmd->add_flag("--fit-hbm-efficiency", vc->fit_hbm,
                    "With --fit: also fit one HBM efficiency per GPU (the specs' are estimates); reported, to be "
                    "copied into data/hardware by hand");
  vc->cmd->add_option("--max-evaluations", vc->max_evaluations, "Simulator runs of the whole fitting half a fit may use")
      ->check(CLI::Range(10, 100000))->capture_default_str();
  vc->cmd->add_option("--markdown", vc->markdown_out, "Also write the table as markdown (docs/sim-validation.md's)");
  vc->cmd->add_flag("--check", vc->check,
                    "Exit 1 unless the held-out MAPE is at most --max-held-out-mape and no point is off by more than "
                    "--max-point-error");
  vc->cmd->add_option("--max-held-out-mape", vc->max_held_out_mape, "Percent")->capture_default_str();
  vc->cmd->add_option("--max-point-error", vc->max_point_error, "Percent")->capture_default_str();
  return vc;
}

int execute_sim_validate_command(SimValidateCommand& vc) {
  if (!vc.cmd->parsed()) return -1;
  const sim::ValidationSet set = sim::load_validation_set(vc.points);
  std::map<std::string, sim::EngineCosts> costs;  // by engine
  for (const auto& p : set.points)
    if (!costs.count(p.engine))
      costs[p.engine] = sim::load_engine_costs(vc.engine_profile.empty() ? p.engine : vc.engine_profile);
  std::map<std::string, double> hbm_fitted;  // with --fit: per GPU
  std::string profile_label = vc.engine_profile.empty() ? "shipped profile of each point's engine" : vc.engine_profile;

  if (!vc.fit_out.empty()) {
    std::vector<sim::FitTarget> targets;
    std::set<std::string> gpus;
    for (const auto& p : set.points) {
      if (p.held_out() || !p.excluded.empty()) continue;  // the held-out half never reaches the fit
      sim::FitTarget t{p.id, p.value, nullptr,
                       [&set, &p](const sim::EngineCosts& c, const sim::FitExtras& e) {
                         std::map<std::string, double> hbm;
                         for (const auto& [k, v] : e) hbm[k.substr(k.find(':') + 1)] = v;
                         return sim::predict_point(set, p, c, hbm);
                       }};
      targets.push_back(std::move(t));
      gpus.insert(p.gpu);
    }
    if (targets.empty()) throw UserError(set.source + ": no point has split \"fit\"");
    sim::CostFitOptions fo;
    fo.free = vc.fit_names;
    fo.max_evaluations = vc.max_evaluations;
    if (vc.fit_hbm)
      for (const auto& g : gpus) fo.extras.push_back({"hbm_efficiency:" + g, sim::load_hardware_spec(g).eff_hbm, 0.3, 1.0});
    fo.progress = [](int n, double f) {
      if (n % 20 == 0) std::fprintf(stderr, "fit: %d evaluations, objective %.4g\n", n, f);
    };
    sim::EngineCosts start;
    start.name = "fitted";
    const auto fit = sim::fit_engine_costs(targets, start, fo);
    nlohmann::ordered_json residuals = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < targets.size(); ++i) residuals[targets[i].label] = fit.relative_error[i];
    nlohmann::ordered_json hbm = nlohmann::ordered_json::object();
    for (const auto& [k, v] : fit.extras) {
      hbm[k.substr(k.find(':') + 1)] = v;
      hbm_fitted[k.substr(k.find(':') + 1)] = v;
    }
    nlohmann::ordered_json info = {{"points", set.source}, {"fitted_on", "split == fit only"},
                                   {"free", vc.fit_names}, {"evaluations", fit.evaluations},
                                   {"hbm_efficiency_by_gpu", hbm},
                                   {"objective_sum_sq_log_ratio", fit.objective},
                                   {"fit_mape_percent", sim::mape_percent(fit.relative_error)},
                                   {"relative_residuals", residuals}};
    write_file_atomically(vc.fit_out, sim::engine_costs_json(fit.costs, "fitted by agentperf sim validate --fit", info).dump(2) + "\n");
    std::fprintf(stderr, "wrote %s (%d evaluations)\n", vc.fit_out.c_str(), fit.evaluations);
    for (const auto& [g, v] : hbm_fitted)
      std::fprintf(stderr, "fitted HBM efficiency of %s: %.3f (data/hardware/%s.json efficiency.hbm)\n", g.c_str(), v,
                   g.c_str());
    for (auto& [engine, c] : costs) c = fit.costs;
    profile_label = vc.fit_out;
  }

  std::vector<Row> rows;
  std::vector<double> fit_err, held_err;
  double worst = 0;
  std::printf("%-36s %-8s %-18s %-5s %3s %5s %-16s %10s %10s %8s\n", "point", "split", "model", "gpu", "tp", "conc",
              "metric", "published", "predicted", "error");
  for (const auto& p : set.points) {
    Row r{&p};
    r.predicted = sim::predict_point(set, p, costs.at(p.engine), hbm_fitted);
    r.error = (r.predicted - p.value) / p.value;
    if (p.excluded.empty()) {
      (p.held_out() ? held_err : fit_err).push_back(r.error);
      worst = std::max(worst, std::abs(r.error));
    }
    std::printf("%-36s %-8s %-18s %-5s %3d %5d %-16s %10.4g %10.4g %+7.1f%%%s\n", p.id.c_str(),
                p.excluded.empty() ? p.split.c_str() : "excluded",
                p.model.c_str(), p.gpu.c_str(), p.tp, p.concurrency, p.metric.c_str(), p.value, r.predicted,
                100 * r.error, p.excluded.empty() ? "" : " (not scored)");
    rows.push_back(r);
  }
  const double fit_mape = sim::mape_percent(fit_err), held_mape = sim::mape_percent(held_err);
  std::printf("MAPE: fitting half %.1f %% (%zu points), held-out half %.1f %% (%zu points); worst point %.1f %%\n",
              fit_mape, fit_err.size(), held_mape, held_err.size(), 100 * worst);
  if (!vc.markdown_out.empty())
    write_file_atomically(vc.markdown_out, markdown_table(set, rows, profile_label, fit_mape, held_mape));
  if (vc.check && (held_mape > vc.max_held_out_mape || 100 * worst > vc.max_point_error)) {
    std::fprintf(stderr, "sim validate: held-out MAPE %.1f %% (limit %.1f) or worst point %.1f %% (limit %.1f) is over its limit\n",
                 held_mape, vc.max_held_out_mape, 100 * worst, vc.max_point_error);
    return 1;
  }
  return 0;
}

}  // namespace agentperf::cli
