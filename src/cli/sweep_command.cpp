#include "cli/sweep_command.h"

#include "sim/engine_costs.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_numbers.h"
#include "load/profile_config.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/run_control.h"
#include "sweep/sweep_runner.h"

namespace agentperf::cli {

struct SweepCommand {
  CLI::App* sweep = nullptr;
  CLI::App *list = nullptr, *show = nullptr, *exportc = nullptr;
  sweep::SweepOptions opts;
  bool no_adaptive = false, restart = false, no_short_circuit = false;
  std::string emit_slurm_dir;
  int point_index = -1;
  double duration = 0;
  // results
  std::vector<std::string> stores;
  std::string sweep_name, exp_name, format = "csv", output;
};

namespace {

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("agentperf") : p.string();
}

// Every store named: files, or directories of *.sqlite (Slurm array tasks
// write one each; a capacity search writes capacity.sqlite into its folder).
struct LoadedStores {
  std::vector<sweep::PointRow> rows;
  std::vector<sweep::CapacityRow> capacity;  // capacity searches' answers
};
LoadedStores load_stores(const std::vector<std::string>& stores, const std::string& sweep_name) {
  LoadedStores out;
  for (const auto& s : stores) {
    std::vector<std::string> files;
    if (std::filesystem::is_directory(s)) {
      for (const auto& e : std::filesystem::directory_iterator(s))
        if (e.path().extension() == ".sqlite") files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      if (files.empty()) throw UserError("no *.sqlite results stores in directory '" + s + "'");
    } else {
      if (!std::filesystem::exists(s)) throw UserError("no results store at '" + s + "'");
      files.push_back(s);
    }
    for (const auto& f : files) {
      sweep::ResultsStore store(f);
      for (auto& r : store.list(sweep_name)) out.rows.push_back(std::move(r));
      for (auto& r : store.list_capacity(sweep_name)) out.capacity.push_back(std::move(r));
    }
  }
  return out;
}
std::vector<sweep::PointRow> load_rows(const std::vector<std::string>& stores, const std::string& sweep_name) {
  return load_stores(stores, sweep_name).rows;
}

// One line per capacity search: its answer, as `capacity` printed it.
void print_capacity(const std::vector<sweep::CapacityRow>& searches) {
  for (const auto& c : searches) {
    std::string answer;
    if (!c.complete) answer = "stopped after " + std::to_string(c.measured_points) + " points (highest meeting so far " +
                              std::to_string(c.capacity) + ")";
    else if (c.capacity == 0) answer = "0 (c=1 misses " + c.limiting_slo + ")";
    else if (c.at_max) answer = "at least " + std::to_string(c.capacity) + " (the search's maximum)";
    else answer = std::to_string(c.capacity) + " (c=" + std::to_string(c.lowest_missing) + " misses " + c.limiting_slo + ")";
    std::printf("capacity search %s under %s: %s; %d measured points%s; %s\n", c.search.c_str(), c.slos.c_str(),
                answer.c_str(), c.measured_points,
                c.predicted_edge >= 0 ? (", the simulator's edge c=" + std::to_string(c.predicted_edge)).c_str() : "",
                c.result_dir.c_str());
  }
}

// A stored interval, or null where the point has none (0, 0).
nlohmann::ordered_json interval_json(double lo, double hi) {
  if (lo == 0 && hi == 0) return nullptr;
  return nlohmann::ordered_json::array({lo, hi});
}

nlohmann::ordered_json row_json(const sweep::PointRow& r) {
  nlohmann::ordered_json server_metrics = nlohmann::ordered_json::parse(r.server_metrics.empty() ? "{}" : r.server_metrics, nullptr, false);
  return {{"sweep", r.sweep}, {"exp_name", r.exp_name}, {"row", r.row}, {"tp", r.tp}, {"conc", r.conc},
          {"kv_offloading", r.kv_offloading}, {"spec_decoding", r.spec_decoding}, {"status", r.status}, {"mode", r.mode},
          {"adaptive_added", r.adaptive_added}, {"total_tput_per_gpu", r.total_tput_per_gpu},
          {"output_tput_per_gpu", r.output_tput_per_gpu}, {"intvty_p50", r.intvty_p50},
          {"e2e_norm_intvty_p50", r.e2e_norm_intvty_p50}, {"ttft_p50_ms", r.ttft_p50_ms}, {"e2el_p50_s", r.e2el_p50_s},
          {"cache_hit", r.cache_hit}, {"requests", r.requests}, {"errors", r.errors}, {"valid", r.valid},
          {"diagnosis", r.diagnosis}, {"result_dir", r.result_dir}, {"server_command", r.server_command},
          {"server_log", r.server_log}, {"server_metrics", server_metrics}, {"agentperf_version", r.agentperf_version},
          {"started_at", r.started_at}, {"finished_at", r.finished_at},
          {"total_tput_per_gpu_ci95", interval_json(r.tput_ci_lo, r.tput_ci_hi)},
          {"ttft_p50_ms_ci95", interval_json(r.ttft_p50_ci_lo_ms, r.ttft_p50_ci_hi_ms)},
          {"small_sample", r.small_sample},
          {"binding_pool", r.binding_pool.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.binding_pool)},
          {"time_scale", r.time_scale > 0 ? nlohmann::ordered_json(r.time_scale) : nlohmann::ordered_json(nullptr)}};
}

void print_table(const std::vector<sweep::PointRow>& rows, const std::vector<std::string>& frontier) {
  // "binds": a predicted point's binding pool (kv, state, cap; "-" when
  // admission never waited on one), blank for a measured point.
  std::printf("%-58s %4s %5s %-16s %11s %10s %10s %6s %-5s %s\n", "point", "tp", "conc", "status", "tput/GPU",
              "intvty p50", "TTFT p50", "hit", "binds", "");
  for (const auto& r : rows) {
    const bool on = std::find(frontier.begin(), frontier.end(), r.exp_name) != frontier.end();
    char scaled[48] = "";
    if (r.time_scale > 0 && r.time_scale != 1) std::snprintf(scaled, sizeof scaled, " [x%g time scale]", r.time_scale);
    const std::string binds = r.binding_pool == "none"          ? "-"
                              : r.binding_pool == "running_cap" ? "cap"
                                                                : r.binding_pool;
    std::printf("%-58s %4d %5d %-16s %11.1f %10.1f %8.0fms %5.1f%% %-5s %s%s%s\n", r.exp_name.c_str(), r.tp, r.conc,
                r.status.c_str(), r.total_tput_per_gpu, r.intvty_p50, r.ttft_p50_ms, 100 * r.cache_hit,
                binds.c_str(), on ? "frontier" : "", r.adaptive_added ? " (added)" : "", scaled);
  }
  // Points measured on a time-scaled simulator are said to be, with what it means.
  if (std::any_of(rows.begin(), rows.end(), [](const sweep::PointRow& r) { return r.time_scale > 0 && r.time_scale != 1; }))
    std::printf("[xN time scale]: measured on the simulator served N times faster than real time: throughput N x, "
                "latencies 1/N of the engine it models\n");
  // How many points are in each state, failed ones never counted as measured.
  static const std::pair<const char*, const char*> kStates[] = {
      {"done", "done"}, {"failed", "failed"}, {"short_circuited", "short-circuited"}, {"pruned", "pruned"},
      {"interrupted", "interrupted (measured again on resume)"},
      {"running", "running (or left by a killed sweep: measured again on resume)"}};
  std::string summary;
  std::size_t known = 0;
  for (const auto& [status, words] : kStates) {
    const auto n = std::count_if(rows.begin(), rows.end(), [&](const sweep::PointRow& r) { return r.status == status; });
    known += static_cast<std::size_t>(n);
    if (n > 0 || std::string(status) == "done" || std::string(status) == "failed")
      summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " + words;
  }
  if (known < rows.size()) summary += ", " + std::to_string(rows.size() - known) + " other";
  std::printf("%zu points: %s\n", rows.size(), summary.c_str());
}

}  // namespace

std::shared_ptr<SweepCommand> add_sweep_commands(CLI::App& app) {
  auto sc = std::make_shared<SweepCommand>();
  auto& o = sc->opts;
  sc->sweep = app.add_subcommand(
      "sweep", "Run a recipe's points against real servers (start, wait ready, replay, scrape, stop), store them in SQLite, "
               "search each row's cliff adaptively, and compute the Pareto frontier");
  auto* c = sc->sweep;
  c->add_option("recipe", o.recipe_path, "Recipe YAML, or MASTER.yaml#KEY: an entry of an InferenceX master config")
      ->required()
      ->check(CLI::Validator(
          [](std::string& s) {  // the file part of PATH#KEY must exist
            return std::filesystem::exists(s) || std::filesystem::exists(s.substr(0, s.rfind('#')))
                       ? std::string()
                       : "File does not exist: " + s.substr(0, s.rfind('#'));
          },
          "FILE[#KEY]"));
  c->add_option("-o,--out", o.out_dir, "Directory for per-point results, server logs and frontier.json")->capture_default_str();
  c->add_option("--store", o.store_path, "SQLite results store (default <out>/sweep.sqlite)");
  c->add_option("--duration", sc->duration, "Seconds per point, instead of the recipe's replay duration")
      ->check(positive_seconds_up_to(limits::max_seconds));
  c->add_flag("--dry-run", o.dry_run, "Run the whole search on `sim predict` (virtual time) instead of servers");
  c->add_option("--engine-profile", o.engine_profile,
                "With --dry-run: engine costs, a shipped profile (sglang, vllm, roofline) or a file from `agentperf "
                "calibrate engine` (default: the shipped profile of each entry's engine, vllm for vLLM entries)");
  c->add_flag("--no-adaptive", sc->no_adaptive, "Measure every conc of every row (the recipe's full conc-lists)");
  c->add_flag("--restart", sc->restart, "Measure again points the store already holds (default: resume, reuse them)");
  c->add_option("--point-index", sc->point_index, "Run only point N of `recipe expand` (a Slurm array task)")
      ->transform(int_in(0, 1000000000));
  c->add_option("--emit-slurm", sc->emit_slurm_dir, "Write a Slurm job array (one task per point) to this directory instead of running");
  auto* g = "Adaptive search";
  c->add_option("--min-gain", o.search.min_gain,
                 "Compute saturation: throughput per GPU rose by less than this share (the cache holding)")
      ->check(real_in(0, 10))->group(g)->capture_default_str();
  c->add_option("--latency-jump", o.search.latency_jump, "A cache cliff: TTFT p50 rose by more than this factor")
      ->check(real_in(1, 1000))->group(g)->capture_default_str();
  c->add_option("--hit-drop", o.search.hit_drop,
                "A cache cliff: the observed prefix-cache hit rate fell by more than this (absolute, 0..1)")
      ->check(real_in(0, 1))->group(g)->capture_default_str();
  c->add_option("--resolution", o.search.resolution, "Stop refining once the cliff bracket is this narrow (0 = the list's smallest step)")
      ->transform(int_in(0, 1000000))->group(g)->capture_default_str();
  g = "Short-circuit";
  c->add_flag("--no-short-circuit", sc->no_short_circuit, "Never stop a point early")->group(g);
  c->add_option("--stall-seconds", o.short_circuit_opts.stall_s, "Stop a point with no generated tokens for this long")
      ->check(positive_seconds_up_to(limits::max_seconds))->group(g)->capture_default_str();
  c->add_option("--pinned-seconds", o.short_circuit_opts.pinned_s, "Stop a point whose KV stays full while the queue grows this long")
      ->check(positive_seconds_up_to(limits::max_seconds))->group(g)->capture_default_str();
  c->add_option("--stop-grace", o.stop_grace_s, "Seconds between SIGTERM and SIGKILL when stopping a server")
      ->check(positive_seconds_up_to(limits::max_seconds))->group(g)->capture_default_str();
  c->add_flag("-q,--quiet", o.quiet, "No progress lines");

  auto* results = app.add_subcommand("results", "Read sweep results stores");
  results->require_subcommand(1);
  sc->list = results->add_subcommand("list", "One line per point, the Pareto frontier marked");
  sc->show = results->add_subcommand("show", "Everything stored about one point, as JSON");
  sc->exportc = results->add_subcommand("export", "All points as CSV or JSON");
  for (auto* sub : {sc->list, sc->show, sc->exportc}) {
    sub->add_option("--store", sc->stores, "Results store(s): .sqlite files or directories of them")->required();
    sub->add_option("--sweep", sc->sweep_name, "Only this sweep (recipe name)");
  }
  sc->show->add_option("point", sc->exp_name, "Point name (exp_name)")->required();
  sc->exportc->add_option("--format", sc->format, "csv or json")->check(CLI::IsMember({"csv", "json"}))->capture_default_str();
  sc->exportc->add_option("-o,--output", sc->output, "File to write (default: standard output)");
  return sc;
}

int execute_sweep_command(SweepCommand& sc) {
  if (sc.sweep->parsed()) {
    auto& o = sc.opts;
    o.adaptive = !sc.no_adaptive;
    o.resume = !sc.restart;
    o.short_circuit = !sc.no_short_circuit;
    o.agentperf_exe = self_exe();
    if (sc.point_index >= 0) o.point_index = sc.point_index;
    if (sc.duration > 0) o.duration_s = sc.duration;
    // Options of the other kind of sweep would be ignored: name them instead.
    if (!o.dry_run && !o.engine_profile.empty())
      throw UserError("--engine-profile applies to --dry-run (a measured sweep runs the recipe's servers): add "
                      "--dry-run or drop it");
    if (o.dry_run && !sc.emit_slurm_dir.empty())
      throw UserError("--emit-slurm writes a Slurm array of measured points and --dry-run predicts here: drop one");
    if (o.dry_run && !o.engine_profile.empty()) (void)sim::load_engine_costs(o.engine_profile);  // fails before any point
    if (!sc.emit_slurm_dir.empty()) {
      o.out_dir = sc.emit_slurm_dir;
      std::printf("wrote %s\n", sweep::emit_slurm(o).c_str());
      return 0;
    }
    // SIGINT/SIGTERM: the point in progress stops (its replay gives in-flight
    // requests the grace period), is stored as interrupted, and the sweep
    // ends with 130/143; a second signal cancels its in-flight requests at
    // once, a third exits (common/run_control.h).
    install_stop_signal_handlers();
    const auto res = sweep::run_sweep(o);
    if (!o.quiet) print_table(res.rows, res.frontier);
    std::printf("this run: %s (of %d points in the recipe's conc-lists); frontier: %zu points; results in %s\n",
                res.counts.describe().c_str(), res.list_points, res.frontier.size(), o.out_dir.c_str());
    const int code = sweep::sweep_exit_code(res);
    if (res.interrupted)
      std::fprintf(stderr, "agentperf sweep: %s; run the same command again to resume\n",
                   stop_reason().empty() ? "interrupted" : stop_reason().c_str());
    return code;
  }
  if (sc.list->parsed()) {
    const auto loaded = load_stores(sc.stores, sc.sweep_name);
    print_table(loaded.rows, sweep::frontier_of(loaded.rows));
    print_capacity(loaded.capacity);
    return 0;
  }
  if (sc.show->parsed()) {
    for (const auto& r : load_rows(sc.stores, sc.sweep_name))
      if (r.exp_name == sc.exp_name) {
        std::printf("%s\n", row_json(r).dump(2).c_str());
        return 0;
      }
    throw UserError("no point '" + sc.exp_name + "' in the store(s)");
  }
  if (sc.exportc->parsed()) {
    const auto rows = load_rows(sc.stores, sc.sweep_name);
    const auto frontier = sweep::frontier_of(rows);
    std::string out;
    if (sc.format == "json") {
      nlohmann::ordered_json j = nlohmann::ordered_json::array();
      for (const auto& r : rows) {
        auto o = row_json(r);
        o["on_frontier"] = std::find(frontier.begin(), frontier.end(), r.exp_name) != frontier.end();
        j.push_back(o);
      }
      out = j.dump(2) + "\n";
    } else {
      out = "sweep,exp_name,tp,conc,kv_offloading,spec_decoding,status,mode,adaptive_added,total_tput_per_gpu,"
            "output_tput_per_gpu,intvty_p50,e2e_norm_intvty_p50,ttft_p50_ms,e2el_p50_s,cache_hit,requests,errors,valid,"
            "on_frontier,result_dir,tput_ci_lo,tput_ci_hi,ttft_p50_ci_lo_ms,ttft_p50_ci_hi_ms,small_sample,time_scale,"
            "binding_pool\n";
      for (const auto& r : rows) {
        char line[1024];
        std::snprintf(line, sizeof line,
                      "%s,%s,%d,%d,%s,%s,%s,%s,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%lld,%lld,%d,%d,%s,%.3f,%.3f,%.3f,%.3f,%d,%g,%s\n",
                      r.sweep.c_str(), r.exp_name.c_str(), r.tp, r.conc, r.kv_offloading.c_str(), r.spec_decoding.c_str(),
                      r.status.c_str(), r.mode.c_str(), r.adaptive_added ? 1 : 0, r.total_tput_per_gpu,
                      r.output_tput_per_gpu, r.intvty_p50, r.e2e_norm_intvty_p50, r.ttft_p50_ms, r.e2el_p50_s, r.cache_hit,
                      r.requests, r.errors, r.valid ? 1 : 0,
                      std::find(frontier.begin(), frontier.end(), r.exp_name) != frontier.end() ? 1 : 0,
                      r.result_dir.c_str(), r.tput_ci_lo, r.tput_ci_hi, r.ttft_p50_ci_lo_ms, r.ttft_p50_ci_hi_ms,
                      r.small_sample ? 1 : 0, r.time_scale, r.binding_pool.c_str());
        out += line;
      }
    }
    if (sc.output.empty()) std::fputs(out.c_str(), stdout);
    else write_file_atomically(sc.output, out);
    return 0;
  }
  return -1;
}

}  // namespace agentperf::cli
