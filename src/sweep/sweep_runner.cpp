#include "sweep/sweep_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <nlohmann/json.hpp>

#include "metrics/confidence.h"
#include "common/atomic_file.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/run_control.h"
#include "common/version.h"
#include "load/load_runner.h"
#include "metrics/export.h"
#include "metrics/record_stream.h"
#include "metrics/inferencex_aggregate.h"
#include "metrics/progress.h"
#include "load/metrics_scraper.h"
#include "recipe/point_engine_config.h"
#include "recipe/recipe.h"
#include "replay/replay_outputs.h"
#include "replay/replay_runner.h"
#include "replay/virtual_replay.h"
#include "sim/engine.h"
#include "sim/predictor.h"
#include "sim/specs.h"
#include "sweep/point_ranks.h"
#include "sweep/server_process.h"
#include "trace/synth.h"
#include "trace/trace_loader.h"

namespace agentperf::sweep {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

bool final_status(const std::string& s) { return s == "done" || s == "failed" || s == "short_circuited"; }

// The time scale of a server command that serves the embedded simulator
// (`agentperf sim serve ... --time-scale N`): its measured throughputs are N
// times the modelled engine's. Other servers run in real time: unset.
std::optional<double> served_time_scale(const std::string& cmd) {
  if (cmd.find("sim serve") == std::string::npos) return std::nullopt;
  const auto value = recipe::command_flag_value(cmd, "--time-scale");
  if (!value) return 1.0;
  try {
    return std::stod(*value);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A point's outcome in this run.
struct Measured {
  std::string status;  // done | failed | short_circuited | interrupted
  bool reused = false;
  PointMetrics metrics;
};

void count(PointCounts& c, const Measured& m) {
  if (m.reused) {
    ++c.reused;
    if (m.status != "done") ++c.reused_failed;
  } else if (m.status == "done") {
    ++c.measured;
  } else if (m.status == "short_circuited") {
    ++c.short_circuited;
  } else if (m.status == "interrupted") {
    ++c.interrupted;
  } else {
    ++c.failed;
  }
}

std::string row_label(const recipe::SearchSpaceEntry& e) {
  return "tp" + std::to_string(e.tp) + (e.ep > 1 ? " ep" + std::to_string(e.ep) : "") + " spec:" + e.spec_decoding +
         " offload:" + e.kv_offloading;
}

// Fills the row's metrics from a replay aggregate: its InferenceX headline,
// and the 95 % intervals of throughput (as a share of the aggregate's total
// token throughput, on the per-GPU figure) and TTFT p50.
void take_metrics(PointRow& row, const replay::ReplayAggregate& agg) {
  const InferenceXHeadline& ix = agg.inferencex;
  row.total_tput_per_gpu = ix.total_tput_per_gpu;
  row.output_tput_per_gpu = ix.output_tput_per_gpu;
  row.intvty_p50 = ix.intvty_p50;
  row.e2e_norm_intvty_p50 = ix.e2e_norm_intvty_p50;
  row.ttft_p50_ms = 1000 * ix.ttft_p50_s;
  row.e2el_p50_s = ix.e2el_p50_s;
  row.cache_hit = ix.observed_cache_hit.value_or(0.0);
  row.requests = static_cast<long long>(ix.records_profiled);
  row.errors = static_cast<long long>(ix.records_error);
  row.valid = ix.valid;
  const auto& j = agg.json;
  if (j.contains("confidence_intervals") && j["confidence_intervals"].is_object())
    row.small_sample = j["confidence_intervals"].value("small_sample", false);
  if (const auto t = throughput_interval_on(j, row.total_tput_per_gpu)) std::tie(row.tput_ci_lo, row.tput_ci_hi) = *t;
  if (const auto t = aggregate_interval(j, "time_to_first_token", "p50"))
    std::tie(row.ttft_p50_ci_lo_ms, row.ttft_p50_ci_hi_ms) = *t;
}

PointMetrics metrics_of(const PointRow& r) {
  PointMetrics m;
  m.tput_per_gpu = r.total_tput_per_gpu;
  m.intvty_p50 = r.intvty_p50;
  m.ttft_p50_ms = r.ttft_p50_ms;
  m.ok = r.status == "done" && r.valid;
  if (r.cache_hit > 0) m.cache_hit = r.cache_hit;  // 0: the server reported no cached tokens
  if (r.tput_ci_hi > 0) m.tput_interval = std::make_pair(r.tput_ci_lo, r.tput_ci_hi);
  if (r.ttft_p50_ci_hi_ms > 0) m.ttft_p50_interval = std::make_pair(r.ttft_p50_ci_lo_ms, r.ttft_p50_ci_hi_ms);
  return m;
}

// Gauges as mean/max, counters (_total) as the delta over the run.
std::string summarize_server_metrics(const std::vector<std::map<std::string, double>>& samples) {
  ojson out = ojson::object();
  if (samples.empty()) return out.dump();
  std::map<std::string, std::vector<double>> series;
  for (const auto& s : samples)
    for (const auto& [k, v] : s) series[k].push_back(v);
  for (const auto& [k, v] : series) {
    if (k.size() > 6 && k.compare(k.size() - 6, 6, "_total") == 0) {
      out[k] = {{"delta", v.back() - v.front()}};
    } else {
      double sum = 0, mx = v.front();
      for (double x : v) {
        sum += x;
        mx = std::max(mx, x);
      }
      out[k] = {{"mean", sum / v.size()}, {"max", mx}};
    }
  }
  out["samples"] = samples.size();
  return out.dump();
}

// The first model of a /v1/models answer.
std::string first_model(const std::string& models_body) {
  const auto j = nlohmann::json::parse(models_body, nullptr, false);
  if (j.is_discarded() || !j.contains("data") || !j["data"].is_array() || j["data"].empty()) return {};
  return j["data"][0].value("id", "");
}

class Sweep {
 public:
  explicit Sweep(const SweepOptions& o) : o_(o), recipe_(recipe::load_recipe(o.recipe_path)) {
    if (o_.duration_s) recipe_.duration_s = *o_.duration_s;
    points_ = recipe::expand(recipe_);
    index_rows();
    if (points_.empty()) throw UserError(o.recipe_path + ": the recipe has no points (no search-space rows)");
    recipe::require_sweepable(recipe_, o_.dry_run);
    for (const auto& n : recipe_.notes) say("note: " + n);  // what a master-config entry says that is not modelled
    std::error_code ec;
    // Before anything is measured, an output folder or store that cannot be
    // made is an input error (exit 2), as in profile, replay and report;
    // exit 3 is for results a run could not write.
    fs::create_directories(o_.out_dir, ec);
    if (ec) throw UserError("cannot create the output directory '" + o_.out_dir + "': " + ec.message(), exit_code::usage);
    store_ = std::make_unique<ResultsStore>(o_.store_path.empty() ? (fs::path(o_.out_dir) / "sweep.sqlite").string()
                                                                  : o_.store_path);
  }

  SweepOutcome run() {
    SweepOutcome out;
    load_traces();  // a dry run replays them on the simulator
    start_progress();
    if (o_.point_index) {
      if (*o_.point_index < 0 || *o_.point_index >= static_cast<int>(points_.size()))
        throw UserError("--point-index " + std::to_string(*o_.point_index) + " is outside 0.." +
                        std::to_string(points_.size() - 1));
      const auto& p = points_[*o_.point_index];
      out.list_points = 1;
      if (stop_requested()) {
        out.interrupted = true;
        out.counts.pending = 1;
      } else {
        const Measured m = measure(p, row_of(p), false);
        count(out.counts, m);
        if (m.status != "interrupted") settled(1);
        out.interrupted = m.status == "interrupted";
      }
    } else {
      for (int row = 0; row < static_cast<int>(entries_.size()); ++row) {
        out.list_points += static_cast<int>(entries_[row]->conc_list.size());
        if (out.interrupted) out.counts.pending += static_cast<int>(entries_[row]->conc_list.size());
        else search_row(row, out);
      }
    }
    progress_.finish(out.counts.describe());
    out.rows = store_->list(recipe_.name);
    out.frontier = frontier_of(out.rows);
    write_frontier(out);
    return out;
  }

 private:
  // Rows in recipe order; entries_ are the search-space rows, row_of maps a point to its row.
  int row_of(const recipe::ExpandedPoint& p) {
    for (int i = 0; i < static_cast<int>(entries_.size()); ++i)
      if (entries_[i] == p.entry) return i;
    return 0;
  }
  void index_rows() {
    for (const auto& p : points_)
      if (std::find(entries_.begin(), entries_.end(), p.entry) == entries_.end()) entries_.push_back(p.entry);
  }

  void say(const std::string& s) const {
    if (o_.log) o_.log(s);
    else if (!o_.quiet) std::fprintf(stderr, "agentperf sweep: %s\n", s.c_str());
  }

  // ---- progress: one line per settled point (measured, failed, reused or
  // pruned) of the recipe's conc-lists, points the adaptive search adds
  // counted in; the rate is the last point's time, the ETA the mean. ----
  CountProgress progress_{"progress", [this] {
                             ProgressOutput o;
                             o.interval_s = o.file_interval_s = 0;  // every point
                             o.tty = false;
                             o.write = [this](std::string_view line) { say(std::string(line.substr(0, line.find('\n')))); };
                             return o;
                           }()};
  void start_progress() {
    int total = 0;
    for (const auto* e : entries_) total += static_cast<int>(e->conc_list.size());
    progress_.set_mean_rate(true);
    progress_.start(o_.point_index ? 1 : total, "points");
  }
  void settled(int points, bool added = false) {
    if (added) progress_.set_total(progress_.total() + points);
    progress_.update(progress_.done() + points);
  }

  void load_traces() {
    if (!recipe_.replay_traces.empty()) {
      trace::LoadStats st;
      CountProgress loading("agentperf sweep: loading traces", o_.quiet || bool(o_.log));
      trace::LoadOptions lo;
      lo.progress = &loading;
      traces_ = trace::load_traces(recipe_.replay_traces, "auto", lo, &st);
      stats_ = st;
      source_ = recipe_.replay_traces;
    } else {
      int max_conc = 1;
      for (const auto& p : points_) max_conc = std::max(max_conc, p.conc);
      // Modest sessions (contexts to 32k tokens) so a small model's context
      // limit does not turn the default into overflow errors.
      trace::SynthOptions so;
      so.traces = std::max(16, 2 * max_conc);
      so.system_tokens = 4000;
      so.tool_tokens = 1000;
      so.mean_turn_input = 1500;
      so.mean_output = 200;
      so.max_context = 32768;
      so.mean_think_time = 2.0;
      traces_ = trace::synthesize_traces(so);
      stats_.traces_kept = static_cast<std::int64_t>(traces_.size());
      source_ = "synthetic (traces synth --traces " + std::to_string(so.traces) +
                " --system-tokens 4000 --tool-tokens 1000 --mean-turn-input 1500 --mean-output 200 --max-context 32768"
                " --mean-think-time 2)";
    }
    if (traces_.empty()) throw UserError("no traces to replay from '" + source_ + "'");
    say("traces: " + source_ + ", " + std::to_string(traces_.size()) + " session trees");
  }

  // A point at any conc of a row: list points as expanded, others through a
  // one-conc copy of the recipe (the launcher's derived values follow conc).
  const recipe::ExpandedPoint& point_at(int row, int conc) {
    for (const auto& p : points_)
      if (p.entry == entries_[row] && p.conc == conc) return p;
    auto& r = extra_recipes_.emplace_back(recipe_);
    for (auto& block : r.agentic)
      for (auto& e : block.search_space) e.conc_list.clear();
    // Keep the block structure (dram utilization) of the row's entry.
    for (std::size_t b = 0; b < recipe_.agentic.size(); ++b)
      for (std::size_t e = 0; e < recipe_.agentic[b].search_space.size(); ++e)
        if (&recipe_.agentic[b].search_space[e] == entries_[row]) r.agentic[b].search_space[e].conc_list = {conc};
    auto expanded = recipe::expand(r);
    if (expanded.size() != 1) throw UserError("internal: adaptive point expansion gave " + std::to_string(expanded.size()) + " points");
    extra_points_.push_back(expanded.front());
    return extra_points_.back();
  }

  // One row: every list point, or the adaptive search's. A stop (SIGINT or
  // SIGTERM) ends the row at once: the point in progress is stored as
  // interrupted and the row's other points are left alone (pending), since
  // the search did not finish and decided nothing about them.
  void search_row(int row, SweepOutcome& out) {
    const auto* entry = entries_[row];
    RowOutcome ro;
    ro.row = row;
    ro.label = row_label(*entry);
    ro.list_points = static_cast<int>(entry->conc_list.size());
    std::set<int> visited;  // concs with an outcome in this run
    // nullopt: the sweep was stopped (before or during this point).
    auto run_point = [&](int conc, bool added) -> std::optional<PointMetrics> {
      if (stop_requested()) {
        out.interrupted = true;
        return std::nullopt;
      }
      const Measured m = measure(point_at(row, conc), row, added);
      visited.insert(conc);
      count(ro.counts, m);
      if (m.status != "interrupted") settled(1, added);
      if (m.status == "interrupted") {
        out.interrupted = true;
        return std::nullopt;
      }
      return m.metrics;
    };
    if (!o_.adaptive) {
      for (int conc : entry->conc_list)
        if (!run_point(conc, false)) break;
    } else {
      AdaptiveSearch search(entry->conc_list, o_.search);
      while (auto conc = search.next()) {
        const auto m = run_point(*conc, !search.in_list(*conc));
        if (!m) break;
        search.report(*conc, *m);
      }
      if (!out.interrupted) {
        ro.cliff = search.cliff();
        ro.limit = search.limit();
        ro.pruned = search.pruned();
        for (int conc : ro.pruned) record_pruned(point_at(row, conc), row, ro);
        if (!ro.pruned.empty()) settled(static_cast<int>(ro.pruned.size()));
        ro.counts.pruned = static_cast<int>(ro.pruned.size());
      }
    }
    if (out.interrupted)
      for (int conc : std::set<int>(entry->conc_list.begin(), entry->conc_list.end()))
        if (!visited.count(conc)) ++ro.counts.pending;
    say(ro.label + ": " + std::to_string(ro.list_points) + " list points: " + ro.counts.describe() +
        (out.interrupted ? ", search stopped"
         : ro.cliff      ? std::string(", ") + limit_kind_name(ro.limit.kind) + " between conc " +
                          std::to_string(ro.cliff->first) + " and " + std::to_string(ro.cliff->second) + " (" +
                          ro.limit.why + ")"
                         : ", no cliff within the list"));
    out.counts += ro.counts;
    out.searches.push_back(ro);
  }

  void record_pruned(const recipe::ExpandedPoint& p, int row, const RowOutcome& ro) {
    if (auto old = store_->get(recipe_.name, p.exp_name); old && final_status(old->status)) return;
    PointRow r = base_row(p, row, false);
    r.status = "pruned";
    r.diagnosis = ro.cliff ? std::string("not measured: past the ") + limit_kind_name(ro.limit.kind) + " between conc " +
                                 std::to_string(ro.cliff->first) + " and " + std::to_string(ro.cliff->second) +
                                 " (lower interactivity for no more throughput)"
                           : "not measured: between coarse points that still scaled";
    r.finished_at = utc_now_iso();
    store_->put(r);
  }

  PointRow base_row(const recipe::ExpandedPoint& p, int row, bool added) const {
    PointRow r;
    r.sweep = recipe_.name;
    r.exp_name = p.exp_name;
    r.row = row;
    r.tp = p.entry->tp;
    r.conc = p.conc;
    r.kv_offloading = p.entry->kv_offloading;
    r.spec_decoding = p.entry->spec_decoding;
    r.mode = o_.dry_run ? "predict" : "server";
    r.adaptive_added = added;
    r.agentperf_version = std::string(version());
    return r;
  }

  Measured measure(const recipe::ExpandedPoint& p, int row, bool added) {
    if (o_.resume)
      if (auto old = store_->get(recipe_.name, p.exp_name); old && final_status(old->status) && old->mode == (o_.dry_run ? "predict" : "server")) {
        say(p.exp_name + ": " + old->status + " in the store, reused");
        return {old->status, true, metrics_of(*old)};
      }
    PointRow r = base_row(p, row, added);
    const fs::path dir = fs::path(o_.out_dir) / p.exp_name;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw UserError("cannot create '" + dir.string() + "': " + ec.message(), exit_code::write_failed);
    r.result_dir = dir.string();
    r.status = "running";
    r.started_at = utc_now_iso();
    store_->put(r);
    say(p.exp_name + ": " + (o_.dry_run ? "predicting" : "starting"));
    try {
      if (o_.dry_run) predict_point(p, dir, r);
      else serve_point(p, dir, r);
    } catch (const UserError& e) {
      r.status = "failed";
      r.diagnosis = e.what();
    }
    // A point that did not finish while a stop was requested ended because
    // of the stop (the replay cut short, the readiness wait abandoned): it
    // is interrupted, not failed, and a resumed sweep measures it again.
    // One that finished (done, short-circuited) keeps its result.
    if (r.status == "interrupted" || (r.status == "failed" && stop_requested())) {
      r.status = "interrupted";
      r.diagnosis = (stop_requested() ? stop_reason() : std::string("interrupted")) +
                    " while this point was measured; a resumed sweep measures it again";
    }
    r.finished_at = utc_now_iso();
    store_->put(r);
    if (r.status == "done")
      // With the 95 % interval of the throughput, and a small sample said as
      // such (metrics/confidence.h): a point on a few session trees is not firm.
      say(p.exp_name + ": done  tput/GPU " + fmt(r.total_tput_per_gpu) +
          (r.tput_ci_hi > 0 ? " [" + fmt(r.tput_ci_lo) + ", " + fmt(r.tput_ci_hi) + "]" : std::string()) +
          " tok/s, intvty p50 " + fmt(r.intvty_p50) + " tok/s, TTFT p50 " + fmt(r.ttft_p50_ms) + " ms, hit " +
          fmt(100 * r.cache_hit) + "%" + (r.small_sample ? " (small sample: not firm)" : ""));
    else  // the whole diagnosis: a server's failure carries the last lines of its log
      say(p.exp_name + ": " + r.status + ": " + trim_trailing_newlines(r.diagnosis));
    return {r.status, false, metrics_of(r)};
  }

  static std::string trim_trailing_newlines(std::string s) {
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }

  static std::string fmt(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", v);
    return b;
  }

  void serve_point(const recipe::ExpandedPoint& p, const fs::path& dir, PointRow& r) {
    const int port = free_local_port();
    std::string cmd = p.command;
    for (std::size_t at; (at = cmd.find("{port}")) != std::string::npos;) cmd.replace(at, 6, std::to_string(port));
    if (!o_.agentperf_exe.empty() && cmd.rfind("agentperf ", 0) == 0) cmd = o_.agentperf_exe + cmd.substr(9);
    r.server_command = cmd;
    // Absolute: the store and the diagnosis are read from other directories.
    r.server_log = fs::absolute(dir / "server.log").string();
    const std::string base = "http://127.0.0.1:" + std::to_string(port);
    const auto stop_grace = std::chrono::milliseconds(static_cast<long long>(o_.stop_grace_s * 1000));
    ServerProcess server(cmd, recipe_.server_env, r.server_log, stop_grace);
    const std::string models = wait_until_ready(
        server, base, std::chrono::milliseconds(static_cast<long long>(recipe_.server_startup_timeout_s * 1000)),
        [&](const std::string& s) { say(p.exp_name + ": " + s); });
    const std::string model = first_model(models);
    if (model.empty()) throw UserError("server at " + base + " lists no model on /v1/models");

    replay::ReplayConfig cfg = replay_config_for(p, dir);
    cfg.client.url = base;
    cfg.client.model = model;
    cfg.benchmark_id = recipe_.name + "/" + p.exp_name + "/" + std::to_string(wall_ns());
    auto stop = std::make_shared<replay::StopSignal>();
    cfg.stop = stop;

    std::vector<std::map<std::string, double>> samples;
    std::mutex samples_mu;
    ShortCircuitDetector detector(o_.short_circuit_opts);
    const auto t0 = std::chrono::steady_clock::now();
    MetricsScraper scraper(base + "/metrics", o_.metrics_interval_s, (dir / "server_metrics_timeline.jsonl").string());
    scraper.on_sample([&](const std::map<std::string, double>& m) {
      std::lock_guard lk(samples_mu);
      samples.push_back(m);
      if (!o_.short_circuit) return;
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (auto why = detector.feed(t, m)) stop->request("short-circuited: " + *why);
    });
    scraper.start();
    // Records reach disk while the point runs (a killed sweep keeps them).
    RecordStreamWriter records(dir / "profile_export.jsonl");
    cfg.sink = &records;
    auto res = replay::run_replay(cfg, traces_, model);
    cfg.sink = nullptr;
    scraper.set_export_window(replay::profiling_window_start_wall_ns(res), 0);
    scraper.set_benchmark_id(cfg.benchmark_id);
    scraper.stop();
    const std::string ended = server.stop(stop_grace);
    say(p.exp_name + ": server " + ended);
    {
      std::lock_guard lk(samples_mu);
      r.server_metrics = summarize_server_metrics(samples);
    }
    replay::ReplayRunInfo info;
    info.traces_source = source_;
    info.stats = stats_;
    info.gpus = p.entry->tp;
    info.cli_command = "agentperf sweep " + o_.recipe_path + " (point " + p.exp_name + ")";
    info.traces = &traces_;
    info.inferencex_env = inferencex_env_of(p);
    info.description = describe_point(p, "measured");
    info.description.served_model = model;
    info.description.time_scale = served_time_scale(cmd);
    r.time_scale = info.description.time_scale.value_or(0.0);
    info.records_streamed = true;
    info.records_error = records.close();
    if (info.records_error) throw UserError("sweep point " + p.exp_name + ": " + *info.records_error, exit_code::write_failed);
    const auto agg = replay::write_replay_outputs(res, cfg, info, dir, replay::judge_replay(res, 0.10));
    take_metrics(r, agg);
    if (res.run.interrupted) {
      r.status = "interrupted";
      r.diagnosis = res.abort_reason;
    } else if (!res.abort_reason.empty()) {
      r.status = stop->requested() ? "short_circuited" : "failed";
      r.diagnosis = res.abort_reason;
    } else {
      r.status = r.valid ? "done" : "failed";
      if (!r.valid) r.diagnosis = "invalid run: error rate above the InferenceX threshold (" + std::to_string(r.errors) + " errors)";
    }
  }

  // The replay of one point, the same for a measured run and a prediction.
  replay::ReplayConfig replay_config_for(const recipe::ExpandedPoint& p, const fs::path& dir) const {
    replay::ReplayConfig cfg;
    cfg.client.endpoint_type = recipe_.replay_endpoint_type == "chat" ? EndpointType::chat : EndpointType::completions;
    cfg.output.quiet = true;
    cfg.output.artifact_dir = dir.string();
    cfg.lanes = p.conc;
    cfg.duration_s = recipe_.duration_s;
    cfg.grace_s = recipe_.replay_grace_s;
    cfg.system_idle_cap_s = recipe_.replay_system_idle_cap_s;
    cfg.warmup = recipe_.replay_warmup;
    cfg.seed = recipe_.replay_seed;
    return cfg;
  }

  // InferenceX's process_agentic_result variables for a point, from the
  // recipe (the launcher exports the same from its master-config entry);
  // the environment still fills what a recipe does not say.
  InferenceXEnv inferencex_env_of(const recipe::ExpandedPoint& p) const {
    InferenceXEnv e;
    auto put = [&](const char* k, const std::string& v) {
      if (!v.empty()) e[k] = v;
    };
    put("MODEL", recipe_.model);
    put("MODEL_PREFIX", recipe_.model_prefix);
    put("FRAMEWORK", recipe_.framework);
    put("PRECISION", recipe_.precision);
    put("IMAGE", recipe_.image);
    put("RUNNER_TYPE", recipe_.runner);
    put("CONC", std::to_string(p.conc));
    put("TP", std::to_string(p.entry->tp));
    put("EP_SIZE", std::to_string(p.entry->ep));
    put("PP_SIZE", std::to_string(p.entry->pp));
    put("SPEC_DECODING", p.entry->spec_decoding);
    if (p.entry->multinode()) {
      // process_agentic_result.py's multinode shape: GPUs per pool are
      // workers x TP x PP x PCP, and an aggregated entry has no decode pool.
      put("IS_MULTINODE", "true");
      put("DISAGG", recipe_.disagg ? "true" : "false");
      const recipe::WorkerSpec none{};  // an aggregated entry's decode side: no workers
      for (const auto& [role, w] : {std::pair{"PREFILL", &*p.entry->prefill},
                                    std::pair{"DECODE", p.entry->decode ? &*p.entry->decode : &none}}) {
        const std::string r(role);
        put((r + "_NUM_WORKERS").c_str(), std::to_string(w->num_worker));
        put((r + "_TP").c_str(), std::to_string(w->tp));
        put((r + "_EP").c_str(), std::to_string(w->ep));
        put((r + "_PP_SIZE").c_str(), std::to_string(w->pp));
        put((r + "_DCP_SIZE").c_str(), std::to_string(w->dcp));
        put((r + "_PCP_SIZE").c_str(), std::to_string(w->pcp));
        put((r + "_DP_ATTN").c_str(), w->dp_attn ? "true" : "false");
      }
    }
    put("KV_OFFLOADING", p.entry->kv_offloading);
    put("KV_OFFLOAD_BACKEND", p.entry->kv_offload_backend);
    if (p.total_cpu_dram_gb > 0) put("TOTAL_CPU_DRAM_GB", std::to_string(p.total_cpu_dram_gb));
    return e;
  }

  // The GPUs a point's throughput per GPU is over: a single-node point's
  // TP; a multinode point's workers, as InferenceX counts them
  // (SemiAnalysisAI/InferenceX @ 843c6254ff69,
  // utils/agentic/aggregation/process_agentic_result.py, _gpu_shape:
  // workers x TP x PP x PCP per pool, prefill plus decode).
  static int point_gpus(const recipe::ExpandedPoint& p) {
    if (!p.entry->multinode()) return p.entry->tp;
    int n = 0;
    for (const auto& w : {p.entry->prefill, p.entry->decode})
      if (w) n += w->num_worker * w->tp * w->pp * w->pcp;
    return n;
  }

  // A point's run description, the same words for its measurement and its
  // prediction (so the report pairs them): the recipe's model and the
  // simulator's hardware spec (the deployment's GPU), else the runner.
  RunDescription describe_point(const recipe::ExpandedPoint& p, const std::string& kind) const {
    RunDescription d;
    d.kind = kind;
    if (!recipe_.model.empty()) d.model = recipe_.model;
    if (!recipe_.sim_hardware_spec.empty()) d.hardware = recipe_.sim_hardware_spec;
    else if (!recipe_.runner.empty()) d.hardware = recipe_.runner;
    if (!recipe_.framework.empty()) d.engine = recipe_.framework;
    d.recipe = recipe_.name;
    d.point = p.exp_name;
    d.tp = p.entry->tp;
    d.ep = p.entry->ep;
    d.gpus = point_gpus(p);
    d.gpus_source = p.entry->multinode() ? "the workers' GPUs (workers x TP x PP x PCP, prefill and decode)"
                                         : "the recipe's tp";
    d.concurrency = p.conc;
    d.kv_offload = p.entry->kv_offloading;
    d.spec_decoding = p.entry->spec_decoding;
    d.workload = "traces " + source_;
    d.gpu_price_per_hour = recipe_.gpu_price_per_hour;
    d.gpu_power_watts = recipe_.gpu_power_watts;
    return d;
  }

  // A dry-run point: the recipe's traces replayed on the simulated engine in
  // virtual time (replay/virtual_replay.h), with the measured run's schedule,
  // written in the measured run's results shape plus a "sim" section.
  void predict_point(const recipe::ExpandedPoint& p, const fs::path& dir, PointRow& r) {
    const sim::ModelSpec model = sim::load_model_spec(recipe_.sim_model_spec);
    const sim::HardwareSpec hw = sim::load_hardware_spec(recipe_.sim_hardware_spec);
    const bool vllm = recipe::runs_vllm_scheduler(recipe_, p);
    const sim::EngineCosts costs =
        sim::load_engine_costs(!o_.engine_profile.empty() ? o_.engine_profile : vllm ? "vllm" : "sglang");
    replay::ReplayConfig cfg = replay_config_for(p, dir);
    cfg.benchmark_id = "sim-predict/" + recipe_.name + "/" + p.exp_name;
    // The point's engines as the matrix plans them (recipe::engines_for):
    // a DP-attention point's DP ranks, each sized as the memory plan sizes
    // one, behind the launchers' consistent hashing, stepping in lockstep
    // (sim/lockstep_group.h); a TensorRT-LLM entry sized and scheduled as
    // TensorRT-LLM; every other single-node point one engine of its TP.
    PointRanks served;
    if (p.entry->multinode()) {
      // Its worker pools: an aggregated entry's replicas, or prefill and
      // decode pools with the KV transfer between.
      served = multinode_ranks(recipe::engines_for(recipe_, p, costs, &model, &hw), model, hw);
    } else {
      const recipe::PointEngine pe = recipe::engines_for(recipe_, p, costs, &model, &hw).front();
      served = point_ranks(pe, model, hw, pe.config);
    }
    cfg.routing_headers = served.routing_headers;
    const auto& ranks = served.ranks;
    const auto& vo = served.options;
    const sim::Engine& engine = *served.owned.front();
    auto res = replay::predict_replay(ranks, cfg, traces_, vo);
    replay::ReplayRunInfo info;
    info.traces_source = source_;
    info.stats = stats_;
    info.gpus = point_gpus(p);
    info.cli_command = "agentperf sweep --dry-run " + o_.recipe_path + " (point " + p.exp_name + ")";
    info.traces = &traces_;
    info.inferencex_env = inferencex_env_of(p);
    info.description = describe_point(p, "predicted");
    info.description.engine = "agentperf-sim";
    info.description.engine_version = std::string(version());
    info.description.time_scale = 1.0;  // virtual time stands for real time
    auto agg = replay::build_replay_aggregate(res.replay, cfg, info, replay::judge_replay(res.replay, 0.10));
    agg.json["input_config"]["engine"] = {{"model", recipe_.sim_model_spec}, {"hardware", recipe_.sim_hardware_spec},
                                          {"tp", p.entry->tp}, {"dp", static_cast<int>(ranks.size())},
                                          {"dp_attention", vo.lockstep_ranks > 1}, {"virtual_time", true},
                                          {"scheduler", sim::scheduler_name(engine.config().scheduler)},
                                          {"engine_profile", costs.name}};
    if (vo.decode) {
      auto& e = agg.json["input_config"]["engine"];
      e["prefill_engines"] = static_cast<int>(ranks.size());
      e["decode_engines"] = static_cast<int>(vo.decode->engines.size());
      e["decode_dp_attention"] = vo.decode->lockstep_ranks > 1;
      e["kv_transfer_bytes_per_s"] = vo.decode->transfer_bytes_per_s;
    }
    agg.json["sim"] = sim::prediction_json(res.engine, engine.plan(), res.virtual_seconds, res.cpu_seconds);
    if (res.per_engine.size() > 1) agg.json["sim"]["per_engine"] = sim::per_engine_json(res.per_engine);
    if (auto h = replay::handoff_json(res); !h.is_null()) agg.json["sim"]["handoff"] = std::move(h);
    write_run_results(dir, res.replay.run.records, agg.json, false);
    r.server_command = "sim predict --traces (virtual time): " + recipe_.sim_model_spec + " on " + recipe_.sim_hardware_spec;
    take_metrics(r, agg);
    r.binding_pool = sim::binding_pool(res.engine);
    if (!res.replay.abort_reason.empty()) {
      r.status = "failed";
      r.diagnosis = res.replay.abort_reason;
    } else {
      r.status = r.valid ? "done" : "failed";
      if (!r.valid) r.diagnosis = "invalid prediction: error rate above the InferenceX threshold";
    }
    char line[160];
    std::snprintf(line, sizeof line, ": predicted %.0f s of serving in %.1f s of CPU (%lld requests)", res.virtual_seconds,
                  res.cpu_seconds, static_cast<long long>(res.replay.run.records.size()));
    say(p.exp_name + line);
  }

  static ojson counts_json(const PointCounts& c) {
    return {{"measured", c.measured}, {"short_circuited", c.short_circuited}, {"failed", c.failed},
            {"interrupted", c.interrupted}, {"pending", c.pending}, {"pruned", c.pruned}, {"reused", c.reused},
            {"reused_failed", c.reused_failed}};
  }

  void write_frontier(const SweepOutcome& out) const {
    ojson j = {{"sweep", recipe_.name}, {"x", "interactivity p50 (tok/s/user)"}, {"y", "total throughput per GPU (tok/s)"},
               {"interrupted", out.interrupted}, {"counts", counts_json(out.counts)},
               {"frontier", ojson::array()}, {"searches", ojson::array()}};
    for (const auto& name : out.frontier)
      for (const auto& r : out.rows)
        if (r.exp_name == name)
          j["frontier"].push_back({{"exp_name", r.exp_name}, {"tp", r.tp}, {"conc", r.conc}, {"intvty_p50", r.intvty_p50},
                                   {"total_tput_per_gpu", r.total_tput_per_gpu}});
    for (const auto& s : out.searches) {
      ojson c = s.cliff ? ojson::array({s.cliff->first, s.cliff->second}) : ojson(nullptr);
      j["searches"].push_back({{"row", s.row}, {"label", s.label}, {"list_points", s.list_points},
                               {"counts", counts_json(s.counts)}, {"cliff", c},
                               {"limit", s.cliff ? ojson(limit_kind_name(s.limit.kind)) : ojson(nullptr)},
                               {"limit_why", s.cliff ? ojson(s.limit.why) : ojson(nullptr)}, {"pruned", s.pruned}});
    }
    write_file_atomically(fs::path(o_.out_dir) / "frontier.json", j.dump(2) + "\n");
  }

  SweepOptions o_;
  recipe::Recipe recipe_;
  std::vector<recipe::ExpandedPoint> points_;
  std::vector<const recipe::SearchSpaceEntry*> entries_;
  std::deque<recipe::Recipe> extra_recipes_;
  std::deque<recipe::ExpandedPoint> extra_points_;
  std::unique_ptr<ResultsStore> store_;
  std::vector<trace::WekaTrace> traces_;
  trace::LoadStats stats_;
  std::string source_;
};

}  // namespace

std::vector<std::string> frontier_of(const std::vector<PointRow>& rows) {
  std::vector<std::pair<double, double>> pts;
  std::vector<const PointRow*> done;
  for (const auto& r : rows)
    if (r.status == "done") {
      pts.emplace_back(r.intvty_p50, r.total_tput_per_gpu);
      done.push_back(&r);
    }
  std::vector<std::string> out;
  for (std::size_t i : pareto_frontier(pts)) out.push_back(done[i]->exp_name);
  return out;
}

SweepOutcome run_sweep(const SweepOptions& opts) { return Sweep(opts).run(); }

PointCounts& PointCounts::operator+=(const PointCounts& o) {
  measured += o.measured;
  short_circuited += o.short_circuited;
  failed += o.failed;
  interrupted += o.interrupted;
  pending += o.pending;
  pruned += o.pruned;
  reused += o.reused;
  reused_failed += o.reused_failed;
  return *this;
}

std::string PointCounts::describe() const {
  std::string s = std::to_string(measured) + " measured, " + std::to_string(failed) + " failed, " +
                  std::to_string(short_circuited) + " short-circuited, " + std::to_string(pruned) + " pruned, " +
                  std::to_string(interrupted) + " interrupted";
  if (pending > 0) s += ", " + std::to_string(pending) + " pending";
  if (reused > 0)
    s += ", " + std::to_string(reused) + " reused from the store" +
         (reused_failed > 0 ? " (" + std::to_string(reused_failed) + " failed or short-circuited)" : "");
  return s;
}

int sweep_exit_code(const SweepOutcome& o) {
  if (o.interrupted) {
    const int code = stop_exit_code();
    return code != 0 ? code : exit_code::sigint;
  }
  const auto& c = o.counts;
  return c.failed + c.short_circuited + c.reused_failed > 0 ? exit_code::invalid : exit_code::valid;
}

std::string emit_slurm(const SweepOptions& o) {
  const auto recipe = recipe::load_recipe(o.recipe_path);
  recipe::require_sweepable(recipe, o.dry_run);
  const auto points = recipe::expand(recipe);
  if (points.empty()) throw UserError(o.recipe_path + ": the recipe has no points");
  int gpus = 1;
  for (const auto& p : points) gpus = std::max(gpus, p.entry->tp * p.entry->pp);
  fs::create_directories(fs::path(o.out_dir) / "store");
  const std::string exe = o.agentperf_exe.empty() ? "agentperf" : o.agentperf_exe;
  const std::string recipe_abs = fs::absolute(o.recipe_path).string(), out_abs = fs::absolute(o.out_dir).string();
  std::string s = "#!/bin/bash\n";
  s += "# agentperf sweep of " + recipe.name + ": one array task per point (" + std::to_string(points.size()) +
       " points, the recipe's full conc-lists; the adaptive search needs its points in sequence and runs locally).\n";
  s += "# Submit: sbatch " + out_abs + "/sweep.sbatch   Then: agentperf results list --store " + out_abs + "/store\n";
  s += "#SBATCH --job-name=agentperf-" + recipe.name + "\n";
  s += "#SBATCH --array=0-" + std::to_string(points.size() - 1) + "\n";
  s += "#SBATCH --nodes=1\n#SBATCH --gpus-per-node=" + std::to_string(gpus) + "\n#SBATCH --exclusive\n";
  s += "#SBATCH --output=" + out_abs + "/slurm-%A_%a.log\n";
  s += "set -euo pipefail\n";
  s += "# Task i runs point i of `agentperf recipe expand " + recipe_abs + "`:\n";
  for (std::size_t i = 0; i < points.size(); ++i) s += "#   " + std::to_string(i) + " " + points[i].exp_name + "\n";
  s += "exec " + exe + " sweep " + recipe_abs + " --point-index \"$SLURM_ARRAY_TASK_ID\" --no-adaptive --out " + out_abs +
       " --store " + out_abs + "/store/point-\"$SLURM_ARRAY_TASK_ID\".sqlite\n";
  const fs::path path = fs::path(o.out_dir) / "sweep.sbatch";
  write_file_atomically(path, s);
  fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
  return path.string();
}

}  // namespace agentperf::sweep
