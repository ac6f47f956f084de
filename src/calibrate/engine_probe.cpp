#include "calibrate/engine_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/error.h"
#include "load/load_runner.h"
#include "sim/cost_fit.h"

namespace agentperf::calibrate {
namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// "decode batch 4", "prefill 4096", "cached prefix 4096 (+256 new)"
std::string describe(const EngineProbe& p) {
  if (p.kind == "decode") return "decode batch " + std::to_string(p.shape.concurrency);
  if (p.kind == "prefill") return "prefill " + std::to_string(p.shape.input_tokens);
  return "cached prefix " + std::to_string(p.shape.input_tokens) + " (+" +
         std::to_string(p.shape.input_tokens - p.shape.prefix_tokens) + " new)";
}

// "tpot" from "tpot_ms_mean"
std::string metric_short(const std::string& metric) { return metric.substr(0, metric.find('_')); }

bool is_number(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool probe_matches(const EngineProbe& p, const std::string& token) {
  if (token == p.label || token == p.kind) return true;
  if (!is_number(token) || token.size() > 9) return false;
  const long v = std::stol(token);
  return p.kind == "decode" ? v == p.shape.concurrency : v == p.shape.input_tokens;
}

std::vector<EngineProbe> plan_engine_probes(const EngineProbePlanOptions& o) {
  const auto& metrics = sim::validation_metric_names();
  if (o.decode_metric.rfind("tpot_", 0) != 0 && o.decode_metric.rfind("itl_", 0) != 0)
    throw UserError("--decode-metric must be a TPOT or ITL metric (tpot_ms_mean, tpot_ms_median, itl_ms_mean, "
                    "itl_ms_median), not '" + o.decode_metric + "'");
  if (std::find(metrics.begin(), metrics.end(), o.decode_metric) == metrics.end())
    throw UserError("--decode-metric '" + o.decode_metric + "' is not a metric sim::metric_of knows");
  if (o.decode_output_tokens < 2) throw UserError("--output-tokens must be at least 2 (TPOT needs two tokens)");
  if (o.decode_waves < 1 || o.prefill_requests < 1) throw UserError("a probe needs at least one request");
  const auto fits = [&](int input, int output) { return o.max_context <= 0 || input + output <= o.max_context; };
  std::vector<EngineProbe> plan;
  std::vector<int> batches = o.batches, lengths = o.input_lengths;
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  for (int b : batches) {
    if (b < 1) throw UserError("--batches: " + std::to_string(b) + " is not a batch size (>= 1)");
    if (!fits(o.decode_input_tokens, o.decode_output_tokens))
      throw UserError("decode probes need " + std::to_string(o.decode_input_tokens + o.decode_output_tokens) +
                      " tokens of context; the model has " + std::to_string(o.max_context));
    EngineProbe p;
    p.kind = "decode";
    p.label = "decode-b" + std::to_string(b);
    p.shape.concurrency = b;
    p.shape.input_tokens = o.decode_input_tokens;
    p.shape.output_tokens = o.decode_output_tokens;
    p.shape.num_prompts = o.decode_waves * b;
    if (o.decode_warmup) p.shape.warmup_prompts = b;
    p.shape.metric = o.decode_metric;
    plan.push_back(p);
  }
  for (const bool cached : {false, true}) {
    if (cached && !o.prefix_probes) break;
    for (int len : lengths) {
      if (len < 1) throw UserError("--input-lengths: " + std::to_string(len) + " is not a length (>= 1)");
      if (!fits(len, o.prefill_output_tokens)) continue;  // beyond the model's context
      if (cached && len <= o.prefix_new_tokens) continue;    // no prefix to cache
      EngineProbe p;
      p.kind = cached ? "prefix" : "prefill";
      p.label = p.kind + "-" + std::to_string(len);
      p.shape.concurrency = 1;
      p.shape.input_tokens = len;
      p.shape.output_tokens = o.prefill_output_tokens;
      p.shape.num_prompts = o.prefill_requests;
      if (cached) {
        p.shape.prefix_tokens = len - o.prefix_new_tokens;
        p.shape.warmup_prompts = 1;  // leaves the prefix in the server's cache
      }
      p.shape.metric = "ttft_ms_mean";
      plan.push_back(p);
    }
  }
  if (plan.empty()) throw UserError("the probe plan is empty: give --batches or --input-lengths within the model's context");
  for (const auto& h : o.hold_out) {
    bool any = false;
    for (auto& p : plan)
      if (probe_matches(p, h)) p.held_out = any = true;
    if (!any) throw UserError("--hold-out '" + h + "' names no probe of the plan");
  }
  return plan;
}

std::vector<ProbeMeasurement> measure_engine_probes(const std::vector<EngineProbe>& plan,
                                                    const EngineProbeRunOptions& o) {
  if (o.repeats < 1) throw UserError("--repeats must be at least 1");
  if (!(o.time_scale > 0)) throw UserError("--time-scale must be > 0");
  const auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  const std::string total = std::to_string(plan.size());
  ClientConfig client = o.client;
  bool has_ignore_eos = false;
  for (const auto& [k, v] : client.extra_inputs) has_ignore_eos |= k == "ignore_eos";
  if (!has_ignore_eos) client.extra_inputs.emplace_back("ignore_eos", "true");
  try {
    const ServedModel served = preflight_served_model(client);
    client.model = served.id;
    if (client.uses_token_ids()) {
      if (!client.token_id_range_given && served.vocab_size && client.token_id_max > *served.vocab_size)
        client.token_id_max = static_cast<int>(*served.vocab_size);
      check_token_ids_fit(client.token_id_min, client.token_id_max, served, "--token-id-range");
    }
  } catch (const UserError& e) {
    throw UserError("calibrate engine: probe 1/" + total + " (" + plan.front().label + ") cannot start: " + e.what());
  }
  if (o.served_model) *o.served_model = client.model;
  say("probing " + client.url + " (model " + client.model + "): " + total + " probes x " + std::to_string(o.repeats) +
      " repeat" + (o.repeats > 1 ? "s" : ""));

  std::vector<ProbeMeasurement> out;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const EngineProbe& p = plan[i];
    const std::string name = "probe " + std::to_string(i + 1) + "/" + total + " " + p.label;
    ProbeMeasurement m;
    m.probe = p;
    const auto t0 = std::chrono::steady_clock::now();
    for (int rep = 0; rep < o.repeats; ++rep) {
      ProfileConfig cfg;
      static_cast<ClientConfig&>(cfg) = client;
      cfg.concurrency = p.shape.concurrency;
      cfg.request_count = p.shape.num_prompts.value_or(std::max(4, 2 * p.shape.concurrency));
      cfg.warmup_request_count = p.shape.warmup_prompts;
      cfg.isl = {static_cast<double>(p.shape.input_tokens), 0, 1};
      cfg.osl = {static_cast<double>(p.shape.output_tokens), 0, 1};
      if (p.shape.prefix_tokens > 0) {
        cfg.prefix_length = p.shape.prefix_tokens;
        cfg.num_prefix_groups = 1;
      }
      cfg.seed = o.seed + 1000 * (i + 1) + static_cast<std::uint64_t>(rep);  // fresh prompts (and prefix) each time
      cfg.quiet = true;
      RunResult r;
      try {
        cfg.validate();
        LoadRunner runner(cfg, client.model);
        r = runner.run();
      } catch (const UserError& e) {
        throw UserError("calibrate engine: " + name + ": " + e.what());
      }
      if (r.interrupted) throw UserError("calibrate engine: interrupted during " + name, 130);
      std::size_t failed = 0, scored = 0;
      const RequestRecord* first_bad = nullptr;
      for (const auto& rec : r.records) {
        if (rec.error) {
          ++failed;
          if (!first_bad) first_bad = &rec;
        } else if (rec.phase == Phase::profiling) {
          ++scored;
        }
      }
      if (failed > 0) {
        const auto& e = *first_bad->error;
        std::string why = e.type;
        if (e.code) why += " (HTTP " + std::to_string(*e.code) + ")";
        if (!e.message.empty()) why += ": " + e.message.substr(0, 200);
        std::replace(why.begin(), why.end(), '\n', ' ');
        throw UserError("calibrate engine: " + name + ": " + std::to_string(failed) + " of " +
                        std::to_string(r.records.size()) + " requests failed: " + why);
      }
      if (!r.abort_reason.empty()) throw UserError("calibrate engine: " + name + ": run stopped: " + r.abort_reason);
      const double v = scored > 0 ? sim::metric_of(p.shape.metric, r.records, 1) : 0.0;
      if (!(v > 0) || !std::isfinite(v))
        throw UserError("calibrate engine: " + name + ": no " + p.shape.metric + " from " + std::to_string(scored) +
                        " answered requests (did the server stream " + std::to_string(p.shape.output_tokens) +
                        " tokens with ignore_eos?)");
      m.repeats.push_back(v * o.time_scale);
    }
    m.measured = median_of(m.repeats);
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string line = "probe " + std::to_string(i + 1) + "/" + total + " " + describe(p) + ": " +
                       metric_short(p.shape.metric) + " " + fmt("%.2f", m.measured) + " ms";
    if (m.repeats.size() > 1) {
      line += " (median of";
      for (double v : m.repeats) line += " " + fmt("%.2f", v);
      line += "; ";
    } else {
      line += " (";
    }
    line += fmt("%.1f", m.seconds) + " s)";
    if (p.held_out) line += " [held out]";
    say(line);
    out.push_back(std::move(m));
  }
  return out;
}

EngineCalibration fit_engine_calibration(const sim::ModelSpec& model, const sim::HardwareSpec& hw,
                                         const sim::EngineConfig& base, const std::vector<ProbeMeasurement>& measured,
                                         const EngineFitSettings& s) {
  if (s.free.empty()) throw UserError("--fit-coefficients: name at least one coefficient");
  for (const auto& f : s.free) {
    const auto& names = sim::EngineCosts::names();
    if (std::find(names.begin(), names.end(), f) == names.end()) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      throw UserError("--fit-coefficients: '" + f + "' is not a coefficient (" + list + ")");
    }
  }
  const auto predictor = [&model, &hw, base](const sim::BenchmarkShape& shape) {
    return [&model, &hw, base, shape](const sim::EngineCosts& costs) {
      sim::EngineConfig cfg = base;
      cfg.costs = costs;
      return sim::predict_metric(model, hw, cfg, shape);
    };
  };
  std::vector<sim::FitTarget> targets;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    if (measured[i].probe.held_out) continue;
    sim::FitTarget t;
    t.label = measured[i].probe.label;
    t.measured = measured[i].measured;
    t.predict = predictor(measured[i].probe.shape);
    targets.push_back(std::move(t));
  }
  if (targets.empty()) throw UserError("every probe is held out: nothing to fit");
  if (targets.size() < s.free.size())
    throw UserError("fitting " + std::to_string(s.free.size()) + " coefficients needs at least as many probes; " +
                    std::to_string(targets.size()) + " are not held out");

  sim::CostFitOptions opts;
  opts.free = s.free;
  opts.max_evaluations = s.max_evaluations;
  opts.restarts = s.restarts;
  opts.polish = true;
  if (s.progress) {
    const auto t0 = std::chrono::steady_clock::now();
    opts.progress = [&s, t0](int evaluation, double objective) {
      if (evaluation % 50 != 0) return;
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      s.progress("fit: " + std::to_string(evaluation) + " evaluations, objective " + fmt("%.4g", objective) + " (" +
                 fmt("%.1f", el) + " s)");
    };
  }
  const sim::CostFitResult fit = sim::fit_engine_costs(targets, base.costs, opts);

  EngineCalibration c;
  c.costs = fit.costs;
  c.free = s.free;
  c.objective = fit.objective;
  c.evaluations = fit.evaluations;
  if (s.progress)
    s.progress("fit: objective " + fmt("%.4g", fit.objective) + " (" + std::to_string(fit.evaluations) +
               " evaluations, simplex then Levenberg-Marquardt)");
  c.probes.resize(measured.size());
  for (std::size_t i = 0; i < measured.size(); ++i) c.probes[i].m = measured[i];
  std::vector<double> fit_err, held_err;
  for (auto& r : c.probes) {
    r.predicted = predictor(r.m.probe.shape)(c.costs);
    r.relative_error = (r.predicted - r.m.measured) / r.m.measured;
    (r.m.probe.held_out ? held_err : fit_err).push_back(r.relative_error);
  }
  c.fit_mape_percent = sim::mape_percent(fit_err);
  if (!held_err.empty()) c.held_out_mape_percent = sim::mape_percent(held_err);
  return c;
}

std::string format_residuals(const EngineCalibration& c) {
  std::ostringstream o;
  char line[256];
  std::snprintf(line, sizeof line, "%-18s %-13s %12s %12s %9s\n", "probe", "metric", "measured", "predicted", "error %");
  o << line;
  for (const auto& r : c.probes) {
    std::snprintf(line, sizeof line, "%-18s %-13s %12.3f %12.3f %+9.1f%s\n", r.m.probe.label.c_str(),
                  r.m.probe.shape.metric.c_str(), r.m.measured, r.predicted, 100 * r.relative_error,
                  r.m.probe.held_out ? "  held out" : "");
    o << line;
  }
  std::snprintf(line, sizeof line, "fit MAPE %.2f %% over %zu probes", c.fit_mape_percent,
                static_cast<std::size_t>(std::count_if(c.probes.begin(), c.probes.end(),
                                                       [](const ProbeResult& r) { return !r.m.probe.held_out; })));
  o << line;
  if (c.held_out_mape_percent >= 0) {
    std::snprintf(line, sizeof line, "; held-out MAPE %.2f %%", c.held_out_mape_percent);
    o << line;
  }
  o << "\nfitted:";
  for (const auto& f : c.free) o << " " << f << "=" << fmt("%.4g", c.costs.at(f));
  o << "\n";
  return o.str();
}

nlohmann::ordered_json engine_profile_json(const EngineCalibration& c, const CalibrationContext& ctx,
                                           const std::string& name) {
  sim::EngineCosts costs = c.costs;
  costs.name = name;
  nlohmann::ordered_json fit;
  fit["method"] = "agentperf calibrate engine: least squares on ln(predicted / measured) (sim/cost_fit.h)";
  fit["url"] = ctx.url;
  fit["served_model"] = ctx.served_model;
  fit["model_spec"] = ctx.model_spec;
  fit["hardware"] = ctx.hardware;
  fit["scheduler"] = ctx.scheduler;
  fit["tp"] = ctx.tp;
  fit["repeats"] = ctx.repeats;
  fit["free"] = c.free;
  fit["objective"] = c.objective;
  fit["evaluations"] = c.evaluations;
  fit["mape_percent"] = c.fit_mape_percent;
  if (c.held_out_mape_percent >= 0) fit["held_out_mape_percent"] = c.held_out_mape_percent;
  auto probes = nlohmann::ordered_json::array();
  for (const auto& r : c.probes) {
    const auto& s = r.m.probe.shape;
    nlohmann::ordered_json p;
    p["label"] = r.m.probe.label;
    p["kind"] = r.m.probe.kind;
    p["held_out"] = r.m.probe.held_out;
    p["metric"] = s.metric;
    p["concurrency"] = s.concurrency;
    p["input_tokens"] = s.input_tokens;
    p["prefix_tokens"] = s.prefix_tokens;
    p["output_tokens"] = s.output_tokens;
    p["requests"] = s.num_prompts.value_or(0);
    p["warmup_requests"] = s.warmup_prompts;
    p["measured"] = r.m.measured;
    p["measured_repeats"] = r.m.repeats;
    p["predicted"] = r.predicted;
    p["residual"] = r.relative_error;
    probes.push_back(std::move(p));
  }
  fit["probes"] = std::move(probes);
  std::string notes = "fitted by `agentperf calibrate engine` against " + ctx.url + " (" + ctx.served_model + "; model spec " +
                      ctx.model_spec + ", hardware " + ctx.hardware + ", scheduler " + ctx.scheduler + ", TP " +
                      std::to_string(ctx.tp) + "): fit MAPE " + fmt("%.2f", c.fit_mape_percent) + " %";
  if (c.held_out_mape_percent >= 0) notes += ", held-out MAPE " + fmt("%.2f", c.held_out_mape_percent) + " %";
  return sim::engine_costs_json(costs, notes, fit);
}

void write_engine_profile(const std::string& path, const nlohmann::ordered_json& profile) {
  namespace fs = std::filesystem;
  const std::string text = profile.dump(2) + "\n";
  // Load it back as the simulator will before the real file exists: a
  // fitted value outside a coefficient's range never leaves a profile behind.
  const fs::path check = fs::temp_directory_path() /
                         ("agentperf-engine-profile-" + std::to_string(::getpid()) + "-check.json");
  write_file_atomically(check, text);
  try {
    (void)sim::load_engine_costs(check.string());
  } catch (const UserError& e) {
    std::error_code ec;
    fs::remove(check, ec);
    std::string why = e.what();
    const auto at = why.find(check.string());
    if (at != std::string::npos) why.replace(at, check.string().size(), path);
    throw UserError("calibrate engine: the fitted profile does not load (" + why +
                    "); nothing written. Check --model-spec and --hardware, or fit fewer coefficients");
  }
  std::error_code ec;
  fs::remove(check, ec);
  write_file_atomically(path, text);
}

}  // namespace agentperf::calibrate
