#include "cli/capacity_command.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_numbers.h"
#include "cli/profile_command.h"
#include "cli/run_descriptions.h"
#include "cli/sim_options.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/output_folder.h"
#include "common/run_control.h"
#include "common/version.h"
#include "metrics/export.h"
#include "metrics/slo.h"
#include "sim/engine.h"
#include "sim/predictor.h"
#include "sim/sim_server.h"
#include "sweep/capacity_search.h"
#include "sweep/profile_point.h"
#include "sweep/results_store.h"

namespace agentperf::cli {

struct CapacityCommand {
  CLI::App* app = nullptr;
  ProfileConfig cfg;
  ProfileCliText text;
  SimEngineOptions engine;
  int max_concurrency = 256;
  double resolution = 0.1;
  double time_scale = 1;
  bool predict = true;
  bool embedded_sim = false;
  std::string store_path;  // default <folder>/capacity.sqlite
};

namespace {

using ojson = nlohmann::ordered_json;

// The SLOs as the simulator's virtual clock sees them: a server that runs
// `scale` times faster than real time answers in 1/scale of the simulated
// latency, so a latency threshold is scale times looser in virtual time and
// a speed threshold scale times tighter.
std::vector<Slo> in_virtual_time(std::vector<Slo> slos, double scale) {
  for (auto& s : slos) s.threshold = s.at_most ? s.threshold * scale : s.threshold / scale;
  return slos;
}

std::string value_text(const ojson& detail) {
  std::string out;
  for (const auto& d : detail) {
    if (!out.empty()) out += ", ";
    const std::string slo = d["slo"].get<std::string>();
    char buf[64];
    if (d["value"].is_null()) std::snprintf(buf, sizeof buf, "n/a");
    else std::snprintf(buf, sizeof buf, "%.4g", d["value"].get<double>());
    out += slo.substr(0, slo.find_first_of("<>")) + " " + buf;
    if (d.contains("interval")) {
      char iv[64];
      std::snprintf(iv, sizeof iv, " [%.4g, %.4g]", d["interval"][0].get<double>(), d["interval"][1].get<double>());
      out += iv;
    }
    out += d["met"].get<bool>() ? "" : " (missed)";
  }
  return out;
}

int run_capacity(CapacityCommand& cc, const std::string& cli_command) {
  auto& cfg = cc.cfg;
  if (cfg.concurrency || cfg.request_rate)
    throw UserError("capacity chooses the concurrency itself: drop --concurrency/--request-rate (--max-concurrency "
                    "bounds the search)");
  if (cfg.slos.empty()) throw UserError("capacity needs at least one --slo (e.g. --slo ttft_p90<=2s)");
  if (cc.embedded_sim && cc.app->count("--url") > 0)
    throw UserError("--embedded-sim searches the simulator started in-process: drop --url (or --embedded-sim)");
  finish_profile_options(cfg, cc.text);
  const auto slos = parse_slos(cfg.slos);
  cfg.concurrency = 1;  // for validation; each point sets its own
  cfg.validate();
  cfg.concurrency.reset();

  // The folder of the search: one sub-folder per measured point.
  const std::filesystem::path base =
      cfg.artifact_dir_given ? std::filesystem::path(cfg.artifact_dir)
                             : default_run_folder(cfg.artifact_dir, "capacity", endpoint_type_name(cfg.endpoint_type),
                                                  "slo");
  // A folder that holds an earlier search is not written over unasked
  // (common/output_folder.h's rule for run folders).
  if (std::filesystem::exists(base / "capacity.json") && !cfg.overwrite)
    throw UserError("'" + base.string() + "' holds an earlier capacity search (capacity.json): pass --overwrite to "
                    "replace it, or choose another -o");
  std::error_code ec;
  std::filesystem::create_directories(base, ec);
  if (ec) throw UserError("cannot create the output directory '" + base.string() + "': " + ec.message());
  if (!cfg.quiet) std::fprintf(stderr, "agentperf: capacity search into %s\n", base.c_str());
  // The store: the answer and every measured point (sweep/results_store.h),
  // named after the search's folder. Opened before any point runs, so that a
  // store that cannot be written fails the search at once.
  auto folder = std::filesystem::absolute(base).lexically_normal();
  if (folder.filename().empty()) folder = folder.parent_path();  // "-o cap/"
  const std::string search_name = folder.filename().string();
  sweep::ResultsStore store(cc.store_path.empty() ? (base / "capacity.sqlite").string() : cc.store_path);

  // --embedded-sim: the server is the engine simulator, in-process on an
  // ephemeral port (as `agentperf run` does), the same engine the
  // prediction runs, at --time-scale.
  RunDescription description;
  std::unique_ptr<sim::SimServer> server;
  if (cc.predict || cc.embedded_sim) finish_sim_engine_options(cc.engine);
  if (cc.embedded_sim) {
    sim::SimServerOptions so;
    so.time_scale = cc.time_scale;
    server = std::make_unique<sim::SimServer>(
        std::make_unique<sim::Engine>(sim::load_model_spec(cc.engine.model), load_engine_hardware(cc.engine),
                                      cc.engine.cfg),
        so);
    server->start();
    cfg.url = server->url();
    description = describe_sim_engine(cc.engine);
    description.time_scale = cc.time_scale;
    if (!cfg.quiet)
      std::fprintf(stderr, "agentperf: started the embedded simulator (%s on %s TP%d, time scale %.3g) at %s\n",
                   cc.engine.model.c_str(), cc.engine.hardware.c_str(), cc.engine.cfg.tp, cc.time_scale,
                   cfg.url.c_str());
  }
  apply_describe(cc.text.describe, description);

  ojson predicted_points = ojson::array();
  std::optional<int> edge;
  if (cc.predict) {
    const auto model = sim::load_model_spec(cc.engine.model);
    const auto hw = load_engine_hardware(cc.engine);
    const auto virtual_slos = in_virtual_time(slos, cc.time_scale);
    edge = sweep::predicted_edge(cc.max_concurrency, [&](int c) {
      sim::Engine engine(model, hw, cc.engine.cfg);
      ProfileConfig load = cfg;
      load.concurrency = c;
      load.quiet = true;
      if (!load.request_count && !load.duration_s) load.request_count = std::max<std::int64_t>(100, 10 * c);
      sim::PredictConfig pc{load, {}};
      auto res = sim::predict(engine, pc);
      AggregateInputs in;
      in.run = &res.run;
      in.benchmark_id = "capacity-predict-c" + std::to_string(c);
      const auto agg = build_aggregate(res.run.records, in);
      const auto v = judge_slos(virtual_slos, agg);
      predicted_points.push_back({{"concurrency", c}, {"met", v.met}, {"slos", v.detail}});
      if (!cfg.quiet)
        std::printf("predicted  c=%-5d %s  [virtual time; /%g on this server]\n", c, v.met ? "meets" : "misses",
                    cc.time_scale);
      return v.met;
    });
    if (!cfg.quiet) std::printf("predicted edge: c=%d (%s %s)\n", *edge, cc.engine.model.c_str(), cc.engine.hardware.c_str());
  }

  ojson measured_points = ojson::array();
  int last_code = 0;
  sweep::CapacityOptions opts;
  opts.max_concurrency = cc.max_concurrency;
  opts.resolution = cc.resolution;
  opts.predicted_edge = edge;
  const auto result = sweep::search_capacity(opts, [&](int c) -> std::optional<sweep::CapacityPoint> {
    if (stop_requested()) return std::nullopt;
    ProfileConfig one = cfg;
    one.concurrency = c;
    one.artifact_dir = (base / ("c" + std::to_string(c))).string();
    one.artifact_dir_given = true;
    one.overwrite = true;
    one.quiet = true;
    one.summary = false;
    const std::string started_at = sweep::utc_now_iso();
    const int code = run_profile(one, cli_command, description);
    last_code = code;
    if (stop_requested()) return std::nullopt;
    std::ifstream in(std::filesystem::path(one.artifact_dir) / "profile_export_aiperf.json");
    const auto agg = nlohmann::json::parse(in, nullptr, false);
    sweep::CapacityPoint p;
    ojson entry = {{"concurrency", c}, {"folder", one.artifact_dir}, {"exit_code", code}};
    sweep::PointRow row;
    row.sweep = search_name;
    row.exp_name = search_name + "/c" + std::to_string(c);
    row.row = static_cast<int>(measured_points.size());  // the order measured
    row.conc = c;
    row.mode = "capacity";
    row.result_dir = one.artifact_dir;
    row.agentperf_version = std::string(version());
    row.started_at = started_at;
    row.finished_at = sweep::utc_now_iso();
    if (!agg.is_discarded()) sweep::take_profile_metrics(row, agg);
    if (agg.is_discarded() || code != 0) {
      // A run that failed or is invalid does not meet the SLOs.
      p.met = false;
      p.limiting = "the run failed (exit " + std::to_string(code) + ")";
      entry["met"] = false;
      entry["limiting"] = p.limiting;
      row.status = "failed";
      row.diagnosis = "misses: " + p.limiting;
      std::printf("measured   c=%-5d misses %s; see %s\n", c, p.limiting.c_str(), one.artifact_dir.c_str());
      std::fflush(stdout);
    } else {
      const auto v = judge_slos(slos, agg);
      p.met = v.met;
      p.uncertain = v.uncertain;
      p.limiting = v.limiting;
      entry["met"] = v.met;
      entry["uncertain"] = v.uncertain;
      entry["slos"] = v.detail;
      if (agg.contains("goodput")) entry["goodput"] = agg["goodput"]["avg"];
      if (!v.limiting.empty()) entry["limiting"] = v.limiting;
      row.status = "done";
      row.diagnosis = (v.met ? "meets every SLO" : "misses " + v.limiting) +
                      (v.uncertain ? " (uncertain: a 95 % interval straddles an SLO)" : "");
      std::printf("measured   c=%-5d %-6s %s%s\n", c, v.met ? "meets" : "misses", value_text(v.detail).c_str(),
                  v.uncertain ? "  [uncertain: a 95 % interval straddles an SLO]" : "");
      std::fflush(stdout);
    }
    measured_points.push_back(std::move(entry));
    store.put(row);
    return p;
  });
  if (server) server->stop();

  const bool interrupted = stop_requested();
  ojson out = {{"slos", cfg.slos},
               {"capacity", result.capacity},
               {"at_max_concurrency", result.at_max},
               {"lowest_missing", result.lowest_missing ? ojson(*result.lowest_missing) : ojson(nullptr)},
               {"limiting_slo", result.limiting.empty() ? ojson(nullptr) : ojson(result.limiting)},
               {"resolution", cc.resolution},
               {"max_concurrency", cc.max_concurrency},
               {"measured_point_count", result.measured.size()},
               {"predicted_edge", edge ? ojson(*edge) : ojson(nullptr)},
               {"time_scale", cc.time_scale},
               {"complete", !interrupted},
               {"measured", measured_points},
               {"predicted", predicted_points},
               {"cli_command", cli_command}};
  if (cc.predict)
    out["prediction_engine"] = {{"model", cc.engine.model}, {"hardware", cc.engine.hardware}, {"tp", cc.engine.cfg.tp},
                                {"scheduler", cc.engine.scheduler}};
  const auto file = base / "capacity.json";
  write_file_atomically(file, [&](std::ostream& o) { o << out.dump(2) << '\n'; });
  {
    sweep::CapacityRow row;
    row.search = search_name;
    for (const auto& s : cfg.slos) row.slos += (row.slos.empty() ? "" : "; ") + s;
    row.capacity = result.capacity;
    row.lowest_missing = result.lowest_missing.value_or(0);
    row.limiting_slo = result.limiting;
    row.at_max = result.at_max;
    row.predicted_edge = edge.value_or(-1);
    row.measured_points = static_cast<int>(result.measured.size());
    row.complete = !interrupted;
    row.result_dir = base.string();
    row.agentperf_version = std::string(version());
    row.finished_at = sweep::utc_now_iso();
    store.put_capacity(row);
  }

  if (interrupted) {
    std::printf("Capacity: search stopped after %zu measured points (highest meeting so far: %d)\n",
                result.measured.size(), result.capacity);
    return stop_exit_code();
  }
  if (result.capacity == 0)
    std::printf("Capacity: 0 - concurrency 1 already misses %s\n", result.limiting.c_str());
  else if (result.at_max)
    std::printf("Capacity: at least %d (--max-concurrency) meets every SLO\n", result.capacity);
  else
    std::printf("Capacity: %d (c=%d misses %s)\n", result.capacity, *result.lowest_missing, result.limiting.c_str());
  std::printf("%zu measured points%s; %s, store %s (search '%s')\n", result.measured.size(),
              edge ? (", the simulator's edge c=" + std::to_string(*edge)).c_str() : "", file.c_str(),
              store.path().c_str(), search_name.c_str());
  return 0;
}

}  // namespace

std::shared_ptr<CapacityCommand> add_capacity_command(CLI::App& app) {
  auto cc = std::make_shared<CapacityCommand>();
  auto* cmd = app.add_subcommand(
      "capacity",
      "Find the highest concurrency whose measured runs meet every --slo (the simulator proposes the bracket, measured "
      "points narrow it)");
  cc->app = cmd;
  add_target_options(*cmd, cc->cfg, cc->text);
  add_load_options(*cmd, cc->cfg, cc->text);
  add_prompt_length_options(*cmd, cc->cfg);
  add_prompt_encoding_options(*cmd, cc->cfg, cc->text);
  add_client_options(*cmd, cc->cfg);
  add_output_options(*cmd, cc->cfg);
  auto* search = "Search";
  cmd->add_option("--max-concurrency", cc->max_concurrency, "Highest concurrency the search may measure")
      ->transform(int_in(1, limits::max_concurrency))->group(search)->capture_default_str();
  cmd->add_option("--resolution", cc->resolution,
                  "Stop when the gap between the highest meeting and the lowest missing concurrency is at most "
                  "max(1, this x the highest meeting); 0: exact")
      ->check(real_in(0, 1))->group(search)->capture_default_str();
  cmd->add_flag("!--no-predict", cc->predict,
                "Start at concurrency 1 and double, without the simulator's proposed edge")
      ->group(search);
  cmd->add_option("--time-scale", cc->time_scale,
                  "The server runs this many times faster than real time (a `sim serve --time-scale`): the "
                  "simulator's latencies are divided by it before they meet the SLOs")
      ->check(real_in(0, 1e6, true))->group(search)->capture_default_str();
  cmd->add_flag("--embedded-sim", cc->embedded_sim,
                "Search against the engine simulator started in-process (the engine flags below, at --time-scale), "
                "as `agentperf run` does, instead of --url")
      ->group(search);
  cmd->add_option("--store", cc->store_path,
                  "SQLite results store for the answer and the measured points (default <-o>/capacity.sqlite; a "
                  "sweep's store works too: `agentperf results list --store` reads both)")
      ->group(search);
  add_sim_engine_options(*cmd, cc->engine);
  return cc;
}

int execute_capacity_command(CapacityCommand& cc, const std::string& cli_command) {
  if (!cc.app->parsed()) return -1;
  return run_capacity(cc, cli_command);
}

}  // namespace agentperf::cli
