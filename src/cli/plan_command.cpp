#include "cli/plan_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "metrics/stats.h"
#include "recipe/point_engine_config.h"
#include "recipe/recipe.h"
#include "sim/memory_plan.h"
#include "trace/corpus_stats.h"
#include "trace/corpus_stats.h"
#include "trace/trace_loader.h"

namespace agentperf::cli {

struct PlanCommand {
  CLI::App* validate = nullptr;
  CLI::App* expand = nullptr;
  CLI::App* plan = nullptr;
  std::string recipe, traces, hardware_profile;
  bool json = false;
};

std::shared_ptr<PlanCommand> add_plan_commands(CLI::App& app) {
  auto pc = std::make_shared<PlanCommand>();
  auto* recipe = app.add_subcommand("recipe", "Deployment recipes (InferenceX master-config entries)");
  recipe->require_subcommand(1);
  pc->validate = recipe->add_subcommand("validate", "Check a recipe; errors name the file, line and key");
  pc->validate->add_option("recipe", pc->recipe, "Recipe YAML")->required();
  pc->expand = recipe->add_subcommand("expand", "List every point of a recipe with its derived server settings");
  pc->expand->add_option("recipe", pc->recipe, "Recipe YAML")->required();
  pc->expand->add_flag("--json", pc->json, "JSON instead of a table");
  pc->plan = app.add_subcommand("plan", "Capacity plan of a recipe: host DRAM and HiCache budget, HBM pools, the "
                                        "no-offload cliff");
  pc->plan->add_option("recipe", pc->recipe, "Recipe YAML")->required();
  pc->plan->add_option("--traces", pc->traces, "Trace set whose lanes' working sets to fit (Weka/mooncake file or directory, or synth:PRESET); default: the recipe's replay.traces");
  pc->plan->add_option("--hardware-profile", pc->hardware_profile,
                       "Measured hardware profile (agentperf calibrate): the device's reported HBM size")
      ->check(CLI::ExistingFile);
  pc->plan->add_flag("--json", pc->json, "JSON instead of a table");
  return pc;
}

namespace {

int run_expand(PlanCommand& pc) {
  const auto r = recipe::load_recipe(pc.recipe);
  const auto points = recipe::expand(r);
  if (pc.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const auto& p : points)
      j.push_back({{"exp_name", p.exp_name}, {"tp", p.entry->tp}, {"ep", p.entry->ep}, {"conc", p.conc},
                   {"spec_decoding", p.entry->spec_decoding}, {"kv_offloading", p.entry->kv_offloading},
                   {"max_running_requests", p.max_running_requests}, {"cuda_graph_max_bs", p.cuda_graph_max_bs},
                   {"total_cpu_dram_gb", p.total_cpu_dram_gb}, {"hicache_size_gb", p.hicache_size_gb},
                   {"duration", r.duration_s}, {"command", p.command}});
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("%-62s %3s %5s %8s %6s %8s %7s\n", "point", "tp", "conc", "max_run", "graph", "dram_gb", "H_gb");
  for (const auto& p : points)
    std::printf("%-62s %3d %5d %8d %6d %8lld %7lld\n", p.exp_name.c_str(), p.entry->tp, p.conc, p.max_running_requests,
                p.cuda_graph_max_bs, static_cast<long long>(p.total_cpu_dram_gb), static_cast<long long>(p.hicache_size_gb));
  std::printf("%zu points\n", points.size());
  return 0;
}

int run_plan(PlanCommand& pc) {
  const auto r = recipe::load_recipe(pc.recipe);
  if (r.sim_model_spec.empty()) throw UserError(pc.recipe + ": plan needs a 'sim' block (model-spec, hardware)");
  const auto model = sim::load_model_spec(r.sim_model_spec);
  const auto hw = sim::load_hardware_spec(r.sim_hardware_spec, pc.hardware_profile);
  const auto points = recipe::expand(r);

  // Working set of a lane: the time-averaged context of its live streams
  // while it replays a trace (trace/corpus_stats.h), span-weighted over the
  // traces; lanes are de-phased (t* cuts, recycling), so the pool holds
  // about lanes x this, not lanes x each trace's peak.
  const std::string traces_path = pc.traces.empty() ? r.replay_traces : pc.traces;
  std::vector<trace::TraceWorkingSet> sets;
  if (!traces_path.empty()) sets = trace::time_averaged_working_sets(trace::load_traces(traces_path, "auto", {}), 300);
  std::vector<double> ws, peaks;
  for (const auto& w : sets) {
    ws.push_back(w.mean_tokens);
    peaks.push_back(w.peak_tokens);
  }
  const double lane_ws = trace::lane_working_set(sets);
  Summary wss = summarize(ws);
  Summary pks = summarize(peaks);

  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  if (!pc.json)
    std::printf("%-62s %5s %11s %6s %7s %11s %7s %9s\n", "point", "conc", "kv_tokens", "slots", "run_cap", "host_tokens",
                "H_gb", ws.empty() ? "" : "ws_fits");
  for (const auto& p : points) {
    const auto mp = sim::plan_memory(model, hw, recipe::engine_config_for(p, sim::EngineCosts{}));  // pools only: costs play no part
    nlohmann::ordered_json row = {{"exp_name", p.exp_name}, {"tp", p.entry->tp}, {"conc", p.conc}, {"kv_tokens", mp.kv_tokens},
                                  {"state_slots", mp.mamba_slots}, {"max_running_requests", mp.max_running_requests},
                                  {"host_kv_tokens", mp.host_kv_tokens}, {"host_state_slots", mp.host_mamba_slots},
                                  {"total_cpu_dram_gb", p.total_cpu_dram_gb}, {"hicache_size_gb", p.hicache_size_gb},
                                  {"projected_host_gb", p.projected_host_gb}, {"derivation", mp.derivation}};
    std::string fits;
    if (!ws.empty()) {
      // Lanes whose time-averaged working sets the device (and host) pools hold.
      const double sessions_device = static_cast<double>(mp.kv_tokens) / lane_ws;
      const double sessions_total = static_cast<double>(mp.kv_tokens + mp.host_kv_tokens) / lane_ws;
      row["sessions_fit_device"] = sessions_device;
      row["sessions_fit_with_host"] = sessions_total;
      fits = p.conc <= sessions_device ? "device" : p.conc <= sessions_total ? "host" : "NO";
      row["working_set_fits"] = fits;
    }
    if (p.total_cpu_dram_gb > 0 && p.projected_host_gb > static_cast<double>(p.total_cpu_dram_gb))
      throw UserError(p.exp_name + ": the HiCache pools need " + std::to_string(p.projected_host_gb) + " GB but the DRAM budget is " +
                      std::to_string(p.total_cpu_dram_gb) + " GB");
    if (!pc.json)
      std::printf("%-62s %5d %11lld %6lld %7lld %11lld %7lld %9s\n", p.exp_name.c_str(), p.conc,
                  static_cast<long long>(mp.kv_tokens), static_cast<long long>(mp.mamba_slots),
                  static_cast<long long>(mp.max_running_requests), static_cast<long long>(mp.host_kv_tokens),
                  static_cast<long long>(p.hicache_size_gb), fits.c_str());
    rows.push_back(std::move(row));
  }
  nlohmann::ordered_json out = {{"recipe", r.name}, {"model_spec", r.sim_model_spec}, {"hardware", r.sim_hardware_spec},
                                {"points", rows}};
  if (!ws.empty()) {
    out["working_set_tokens"] = {{"lane", lane_ws},
                                 {"per_trace_time_averaged", {{"p50", wss.percentile(50)}, {"p90", wss.percentile(90)}, {"max", wss.max}}},
                                 {"per_trace_peak", {{"p50", pks.percentile(50)}, {"p90", pks.percentile(90)}, {"max", pks.max}}},
                                 {"traces", ws.size()}, {"source", traces_path}};
    // The no-offload cliff of each TP: the concurrency where the lanes' working sets stop fitting on the device.
    nlohmann::ordered_json cliff = nlohmann::ordered_json::object();
    for (const auto& row : rows)
      if (row["host_kv_tokens"] == 0) {
        const std::string key = "tp" + std::to_string(row["tp"].get<int>());
        cliff[key] = std::floor(row["sessions_fit_device"].get<double>());
      }
    out["predicted_no_offload_cliff_conc"] = cliff;
    if (!pc.json) {
      std::printf("working set of a lane (time-averaged under replay, idle gaps capped at 300 s): %.0f tokens over %zu "
                  "traces of %s\n  per trace: time-averaged p50 %.0f, p90 %.0f; peak p50 %.0f, p90 %.0f (a plan from "
                  "peaks would hold %.1fx fewer lanes)\n",
                  lane_ws, ws.size(), traces_path.c_str(), wss.percentile(50), wss.percentile(90), pks.percentile(50),
                  pks.percentile(90), pks.percentile(50) > 0 ? pks.percentile(50) / lane_ws : 0.0);
      for (auto it = cliff.begin(); it != cliff.end(); ++it)
        std::printf("predicted no-offload cliff: %s at about %d lanes (device KV pool / lane working set)\n",
                    it.key().c_str(), it.value().get<int>());
    }
  }
  if (pc.json) std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace

int execute_plan_command(PlanCommand& pc) {
  if (pc.validate->parsed()) {
    const auto r = recipe::load_recipe(pc.recipe);
    std::printf("%s: valid (%zu points)\n", pc.recipe.c_str(), recipe::expand(r).size());
    return 0;
  }
  if (pc.expand->parsed()) return run_expand(pc);
  if (pc.plan->parsed()) return run_plan(pc);
  return -1;
}

}  // namespace agentperf::cli
