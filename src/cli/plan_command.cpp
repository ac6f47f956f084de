#include "cli/plan_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "metrics/progress.h"
#include "metrics/stats.h"
#include "recipe/point_engine_config.h"
#include "recipe/master_config.h"
#include "recipe/master_matrix.h"
#include "recipe/recipe.h"
#include "sim/memory_plan.h"
#include "trace/corpus_stats.h"
#include "trace/corpus_stats.h"
#include "trace/trace_loader.h"

namespace agentperf::cli {

struct PlanCommand {
  CLI::App* validate = nullptr;
  CLI::App* expand = nullptr;
  CLI::App* list = nullptr;    // recipe list MASTER.yaml
  CLI::App* matrix = nullptr;  // recipe matrix MASTER.yaml...
  std::vector<std::string> files;
  CLI::App* plan = nullptr;
  std::string recipe, traces, hardware_profile;
  bool json = false;
  bool quiet = false;  // plan: no progress lines
};

std::shared_ptr<PlanCommand> add_plan_commands(CLI::App& app) {
  auto pc = std::make_shared<PlanCommand>();
  auto* recipe = app.add_subcommand("recipe", "Deployment recipes (InferenceX master-config entries)");
  recipe->require_subcommand(1);
  pc->validate = recipe->add_subcommand("validate", "Check a recipe; errors name the file, line and key");
  const char* recipe_help = "Recipe YAML, or MASTER.yaml#KEY: an entry of an InferenceX master config";
  pc->validate->add_option("recipe", pc->recipe, recipe_help)->required();
  pc->expand = recipe->add_subcommand("expand", "List every point of a recipe with its derived server settings");
  pc->expand->add_option("recipe", pc->recipe, recipe_help)->required();
  pc->expand->add_flag("--json", pc->json, "JSON instead of a table");
  pc->list = recipe->add_subcommand("list", "List the entries of an InferenceX master config that have an agentic-coding "
                                            "scenario (each is a recipe as MASTER.yaml#KEY)");
  pc->list->add_option("master", pc->recipe, "InferenceX master config (configs/nvidia-master.yaml, amd-master.yaml)")
      ->required()
      ->check(CLI::ExistingFile);
  pc->list->add_flag("--json", pc->json, "JSON instead of a table");
  pc->matrix = recipe->add_subcommand(
      "matrix", "Plan every agentic entry of InferenceX master configs: KV pool tokens and state slots per engine shape "
                "(docs/inferencex-matrix.md)");
  pc->matrix->add_option("master", pc->files, "InferenceX master configs")->required()->check(CLI::ExistingFile);
  pc->matrix->add_flag("--json", pc->json, "JSON instead of a Markdown table");
  pc->plan = app.add_subcommand("plan", "Capacity plan of a recipe: host DRAM and HiCache budget, HBM pools, the "
                                        "no-offload cliff");
  pc->plan->add_option("recipe", pc->recipe, recipe_help)->required();
  pc->plan->add_option("--traces", pc->traces, "Trace set whose lanes' working sets to fit (Weka/mooncake file or directory, or synth:PRESET); default: the recipe's replay.traces");
  pc->plan->add_option("--hardware-profile", pc->hardware_profile,
                       "Measured hardware profile (agentperf calibrate): the device's reported HBM size")
      ->check(CLI::ExistingFile);
  pc->plan->add_flag("--json", pc->json, "JSON instead of a table");
  pc->plan->add_flag("-q,--quiet", pc->quiet, "No progress lines (loading the traces)");
  return pc;
}

namespace {

// What a master-config entry says that the tools do not model (warnings).
void print_notes(const recipe::Recipe& r) {
  const std::string& file = r.master_file.empty() ? r.source : r.master_file;
  for (const auto& n : r.notes) std::fprintf(stderr, "agentperf: note: %s: %s\n", file.c_str(), n.c_str());
}

nlohmann::ordered_json worker_json(const recipe::WorkerSpec& w) {
  return {{"num_worker", w.num_worker}, {"tp", w.tp}, {"ep", w.ep}, {"dp_attn", w.dp_attn}, {"pp", w.pp},
          {"dcp_size", w.dcp}, {"pcp_size", w.pcp}};
}

int run_list(PlanCommand& pc) {
  const recipe::MasterConfig mc(pc.recipe);
  const auto keys = mc.agentic_keys();
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  if (!pc.json)
    std::printf("%-66s %-36s %-5s %-14s %-20s %-8s %4s %6s  %s\n", "key (use as MASTER.yaml#KEY)", "model", "prec",
                "framework", "runner", "nodes", "rows", "points", "sim model spec");
  for (const auto& k : keys) {
    const auto s = mc.summary(k);
    const char* nodes = !s.multinode ? "single" : s.disagg ? "disagg" : "multi";
    if (pc.json)
      j.push_back({{"key", s.key}, {"model", s.model}, {"precision", s.precision}, {"framework", s.framework},
                   {"runner", s.runner}, {"multinode", s.multinode}, {"disagg", s.disagg}, {"rows", s.rows},
                   {"points", s.points}, {"model_spec", s.model_spec}});
    else
      std::printf("%-66s %-36s %-5s %-14s %-20s %-8s %4d %6d  %s\n", s.key.c_str(), s.model.c_str(), s.precision.c_str(),
                  s.framework.c_str(), s.runner.c_str(), nodes, s.rows, s.points,
                  s.model_spec.empty() ? "- (no spec)" : s.model_spec.c_str());
  }
  if (pc.json) std::printf("%s\n", j.dump(2).c_str());
  else std::printf("%zu of %zu entries have an agentic-coding scenario\n", keys.size(), mc.entry_count());
  return 0;
}

std::string with_commas(long long v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > (v < 0 ? 1 : 0); i -= 3) s.insert(static_cast<std::size_t>(i), 1, ',');
  return s;
}

int run_matrix(PlanCommand& pc) {
  std::vector<recipe::MatrixRow> all;
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& f : pc.files) {
    const recipe::MasterConfig mc(f);
    auto rows = recipe::plan_matrix(mc);
    if (!pc.json) {
      std::printf("\n### %s (%zu agentic entries)\n\n", f.c_str(), mc.agentic_keys().size());
      std::printf("| entry | GPU | engine | conc | sim spec | KV pool tokens | state slots | running cap | DRAM GB | H GB |\n");
      std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    }
    std::string last;
    for (const auto& r : rows) {
      using S = recipe::MatrixRow::Status;
      if (pc.json) {
        nlohmann::ordered_json row = {{"file", f}, {"key", r.key}, {"model", r.model}, {"precision", r.precision},
                                      {"framework", r.framework}, {"gpu", r.gpu}, {"model_spec", r.model_spec},
                                      {"role", r.role}, {"tp", r.tp}, {"ep", r.ep}, {"dp_attn", r.dp_attn},
                                      {"spec_decoding", r.spec_decoding}, {"kv_offloading", r.kv_offloading},
                                      {"kv_offload_backend", r.kv_offload_backend}, {"conc", r.max_conc},
                                      {"total_cpu_dram_gb", r.total_cpu_dram_gb}, {"hicache_size_gb", r.hicache_size_gb},
                                      {"status", r.status == S::planned ? "planned" : r.status == S::no_spec ? "no_spec" : "does_not_fit"}};
        if (r.status == S::planned) {
          row["kv_tokens"] = r.plan.kv_tokens;
          row["state_slots"] = r.plan.mamba_slots;
          row["max_running_requests"] = r.plan.max_running_requests;
        } else {
          row["why"] = r.why;
        }
        j.push_back(std::move(row));
        continue;
      }
      const bool first = r.key != last;
      last = r.key;
      std::string kv, slots, cap;
      if (r.status == S::planned) {
        kv = with_commas(r.plan.kv_tokens);
        slots = r.plan.mamba_slots > 0 ? with_commas(r.plan.mamba_slots) : "-";
        cap = with_commas(r.plan.max_running_requests);
      } else {
        kv = r.status == S::no_spec ? "no spec" : "does not fit";
      }
      std::printf("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", first ? ("`" + r.key + "`").c_str() : "",
                  first ? r.gpu.c_str() : "", r.shape().c_str(), r.max_conc,
                  r.model_spec.empty() ? "-" : r.model_spec.c_str(), kv.c_str(), slots.c_str(), cap.c_str(),
                  r.total_cpu_dram_gb > 0 ? with_commas(r.total_cpu_dram_gb).c_str() : "-",
                  r.hicache_size_gb > 0 ? with_commas(r.hicache_size_gb).c_str() : "-");
    }
    all.insert(all.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  }
  const auto c = recipe::coverage(all);
  if (pc.json) {
    nlohmann::ordered_json out = {{"rows", j},
                                  {"coverage",
                                   {{"entries", c.entries}, {"entries_with_spec", c.entries_with_spec}, {"rows", c.rows},
                                    {"rows_planned", c.rows_planned}, {"rows_no_spec", c.rows_no_spec},
                                    {"rows_not_fitting", c.rows_not_fitting}, {"tuples", c.tuples},
                                    {"tuples_with_spec", c.tuples_with_spec}, {"tuples_planned", c.tuples_planned}}}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("\n%d entries, %d with a model spec; %d engine shapes: %d planned, %d without a spec, %d do not fit; "
                "%d distinct (model, precision, GPU, TP, EP, DP attention): %d with a spec, %d planned\n",
                c.entries, c.entries_with_spec, c.rows, c.rows_planned, c.rows_no_spec, c.rows_not_fitting, c.tuples,
                c.tuples_with_spec, c.tuples_planned);
  }
  for (const auto& r : all)
    if (r.status == recipe::MatrixRow::Status::does_not_fit)
      std::fprintf(stderr, "agentperf: %s %s: %s\n", r.key.c_str(), r.shape().c_str(), r.why.c_str());
  return 0;
}

int run_expand(PlanCommand& pc) {
  const auto r = recipe::load_recipe(pc.recipe);
  print_notes(r);
  const auto points = recipe::expand(r);
  if (pc.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const auto& p : points)
      j.push_back({{"exp_name", p.exp_name}, {"tp", p.entry->tp}, {"ep", p.entry->ep}, {"conc", p.conc},
                   {"spec_decoding", p.entry->spec_decoding}, {"kv_offloading", p.entry->kv_offloading},
                   {"max_running_requests", p.max_running_requests}, {"cuda_graph_max_bs", p.cuda_graph_max_bs},
                   {"total_cpu_dram_gb", p.total_cpu_dram_gb}, {"hicache_size_gb", p.hicache_size_gb},
                   {"duration", r.duration_s}, {"command", p.command}});
    if (!points.empty() && points.front().entry->multinode())
      for (std::size_t i = 0; i < points.size(); ++i) {
        j[i]["prefill"] = worker_json(*points[i].entry->prefill);
        j[i]["decode"] = worker_json(*points[i].entry->decode);
      }
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
  print_notes(r);
  if (r.sim_model_spec.empty())
    throw UserError(!r.sim_missing.empty() ? r.sim_missing : pc.recipe + ": plan needs a 'sim' block (model-spec, hardware)");
  const auto model = sim::load_model_spec(r.sim_model_spec);
  const auto hw = sim::load_hardware_spec(r.sim_hardware_spec, pc.hardware_profile);
  const auto points = recipe::expand(r);

  // Working set of a lane: the time-averaged context of its live streams
  // while it replays a trace (trace/corpus_stats.h), span-weighted over the
  // traces; lanes are de-phased (t* cuts, recycling), so the pool holds
  // about lanes x this, not lanes x each trace's peak.
  const std::string traces_path = pc.traces.empty() ? r.replay_traces : pc.traces;
  std::vector<trace::TraceWorkingSet> sets;
  std::int64_t longest_call = 0;  // the corpus's largest in + out of one call
  if (!traces_path.empty()) {
    CountProgress loading("agentperf: loading traces", pc.quiet);
    trace::LoadOptions lo;
    lo.progress = &loading;
    const auto traces = trace::load_traces(traces_path, "auto", lo);
    for (const auto& t : traces) longest_call = std::max(longest_call, t.peak_context());
    sets = trace::time_averaged_working_sets(traces, 300);
  }
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
  // A single-node point is one engine; a multinode point one per worker pool.
  for (const auto& p : points)
  for (const auto& eng : recipe::engines_for(r, p, sim::EngineCosts{}, &model, &hw)) {  // pools only: costs play no part
    const std::string label = eng.role.empty() ? p.exp_name : p.exp_name + " " + eng.role;
    sim::MemoryPlan mp;
    try {
      mp = sim::plan_memory(eng.model ? *eng.model : model, hw, eng.config);
    } catch (const UserError& e) {
      throw UserError(label + " (" + r.sim_model_spec + " on " + r.sim_hardware_spec + ", TP" +
                      std::to_string(eng.config.tp) + "): " + e.what());
    }
    mp.derivation.insert(mp.derivation.begin(), eng.sizing.begin(), eng.sizing.end());
    nlohmann::ordered_json row = {{"exp_name", p.exp_name}, {"tp", eng.config.tp}, {"conc", p.conc}, {"kv_tokens", mp.kv_tokens},
                                  {"state_slots", mp.mamba_slots}, {"max_running_requests", mp.max_running_requests},
                                  {"host_kv_tokens", mp.host_kv_tokens}, {"host_state_slots", mp.host_mamba_slots},
                                  {"total_cpu_dram_gb", p.total_cpu_dram_gb}, {"hicache_size_gb", p.hicache_size_gb},
                                  {"projected_host_gb", p.projected_host_gb}, {"derivation", mp.derivation}};
    if (!eng.role.empty()) {
      row["role"] = eng.role;
      row["workers"] = eng.workers;
    }
    if (eng.dp > 1) row["dp_attention_ranks"] = eng.dp;  // the pools are one DP rank's
    std::string fits;
    if (!ws.empty()) {
      // Lanes whose time-averaged working sets the device (and host) pools hold.
      // (A DP-attention rank or a worker pool's engine holds its share: the role holds ranks x engines of it.)
      const double copies = static_cast<double>(eng.dp) * eng.workers;
      const double sessions_device = copies * static_cast<double>(mp.kv_tokens) / lane_ws;
      const double sessions_total = copies * static_cast<double>(mp.kv_tokens + mp.host_kv_tokens) / lane_ws;
      row["sessions_fit_device"] = sessions_device;
      row["sessions_fit_with_host"] = sessions_total;
      fits = p.conc <= sessions_device ? "device" : p.conc <= sessions_total ? "host" : "NO";
      row["working_set_fits"] = fits;
    }
    // A call longer than the rank's pool but within the model's context:
    // SGLang rejects it (its longest input is min(context, pool) - 1,
    // TpModelWorker.max_req_input_len in python/sglang/srt/managers/tp_worker.py,
    // github.com/sgl-project/sglang), with an error that is not a context
    // overflow to AIPerf, whose warmup aborts the run on a failed primer;
    // vLLM does not start with a max model length its KV cache cannot hold
    // one request of (check_enough_kv_cache_memory in
    // vllm/v1/core/kv_cache_utils.py, github.com/vllm-project/vllm), so it
    // runs only with --max-model-len lowered, which turns those calls into
    // context overflows. (Calls over the context are overflows, which end
    // their trajectory.)
    const std::int64_t servable = std::min<std::int64_t>(longest_call, eng.model ? eng.model->max_context : model.max_context);
    if (servable > mp.kv_tokens) {
      row["longest_call_tokens"] = longest_call;
      row["rejects_longest_calls"] = true;
      std::fprintf(stderr,
                   "agentperf: warning: %s: its KV pool (%lld tokens a rank) is smaller than the corpus's longest calls "
                   "within the model's context (up to %lld tokens, %s): SGLang rejects such a call and a replay stops at "
                   "one in warmup; vLLM starts only with --max-model-len at or below the pool, which makes them context "
                   "overflows\n",
                   label.c_str(), static_cast<long long>(mp.kv_tokens), static_cast<long long>(servable),
                   traces_path.c_str());
    }
    if (p.launcher_host && p.projected_host_gb > static_cast<double>(p.total_cpu_dram_gb))
      std::fprintf(stderr,
                   "agentperf: warning: %s: its launcher gives the KV connector %.0f GB of host memory, more than the "
                   "point's %lld GB DRAM budget\n",
                   label.c_str(), p.projected_host_gb, static_cast<long long>(p.total_cpu_dram_gb));
    else if (p.total_cpu_dram_gb > 0 && p.projected_host_gb > static_cast<double>(p.total_cpu_dram_gb))
      throw UserError(p.exp_name + ": the HiCache pools need " + std::to_string(p.projected_host_gb) + " GB but the DRAM budget is " +
                      std::to_string(p.total_cpu_dram_gb) + " GB");
    if (!pc.json)
      std::printf("%-62s %5d %11lld %6lld %7lld %11lld %7lld %9s\n", label.c_str(), p.conc,
                  static_cast<long long>(mp.kv_tokens), static_cast<long long>(mp.mamba_slots),
                  static_cast<long long>(mp.max_running_requests), static_cast<long long>(mp.host_kv_tokens),
                  static_cast<long long>(eng.config.hicache.enabled ? p.hicache_size_gb : 0), fits.c_str());
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
        const std::string key =
            "tp" + std::to_string(row["tp"].get<int>()) +
            (row.contains("dp_attention_ranks") ? "-dp" + std::to_string(row["dp_attention_ranks"].get<int>()) : std::string()) +
            (row.contains("role") ? "-" + row["role"].get<std::string>() : std::string());
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
    print_notes(r);
    std::printf("%s: valid (%zu points)\n", pc.recipe.c_str(), recipe::expand(r).size());
    if (!r.master_key.empty()) {  // what a plan and a sweep of the entry can do
      std::printf("  sim: %s\n", r.sim_model_spec.empty() ? r.sim_missing.c_str()
                                                           : (r.sim_model_spec + " on " + r.sim_hardware_spec).c_str());
      std::printf("  server command: %s\n", r.server_command.empty() ? r.server_missing.c_str()
                                                                     : "generated (`recipe expand --json` shows it)");
    }
    return 0;
  }
  if (pc.list->parsed()) return run_list(pc);
  if (pc.matrix->parsed()) return run_matrix(pc);
  if (pc.expand->parsed()) return run_expand(pc);
  if (pc.plan->parsed()) return run_plan(pc);
  return -1;
}

}  // namespace agentperf::cli
