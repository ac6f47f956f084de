#include "sweep/agentx_validation.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "common/error.h"
#include "common/json_reader.h"
#include "recipe/inferencex_map.h"
#include "recipe/point_engine_config.h"
#include "recipe/recipe.h"
#include "replay/replay_outputs.h"
#include "replay/virtual_replay.h"
#include "sim/builtin_specs.h"
#include "sim/engine.h"
#include "sim/specs.h"
#include "sweep/point_ranks.h"
#include "trace/synth.h"
#include "trace/trace_loader.h"

namespace agentperf::sweep {

const std::vector<std::string>& agentx_metric_names() {
  static const std::vector<std::string> m = {"total_tok_s_gpu",   "output_tok_s_gpu",      "ttft_mean_ms",
                                             "ttft_p50_ms",       "ttft_p90_ms",           "tpot_mean_ms",
                                             "interactivity_p50", "e2e_interactivity_p90", "cache_hit_observed"};
  return m;
}

namespace {

AgentxSeries read_series(const std::string& id, const JsonReader& s) {
  s.reject_unknown_keys({"split", "family", "master_key", "engine", "engine_image", "model_spec", "hardware", "num_gpus",
                         "tp", "ep", "dp_attention", "kv_offload", "runner", "dram_utilization", "spec", "kv_dtype_bytes",
                         "mem_fraction_static", "launcher_flags", "max_total_tokens", "context_length", "corpus", "rerun_of", "cliff_after", "excluded", "source", "notes",
                         "prefill", "decode"});
  AgentxSeries v;
  v.id = id;
  v.split = s.string("split");
  if (v.split != "fit" && v.split != "held_out") s.fail("split", "must be \"fit\" or \"held_out\"");
  v.family = s.string("family");
  v.master_key = s.string_or("master_key", "");
  v.engine = s.string("engine");
  if (v.engine != "sglang" && v.engine != "vllm")
    s.fail("engine", "must be sglang or vllm (the schedulers the simulator has)");
  v.engine_image = s.string_or("engine_image", "");
  v.model_spec = s.string("model_spec");
  v.hardware = s.string("hardware");
  v.num_gpus = s.integer("num_gpus", JsonRange::between(1, 1024));
  v.tp = s.integer("tp", JsonRange::between(1, 1024));
  v.ep = s.integer_or("ep", 1, JsonRange::between(1, 1024));
  v.dp_attention = s.boolean_or("dp_attention", false);
  for (const char* role : {"prefill", "decode"}) {
    if (!s.has(role)) continue;
    const JsonReader w = s.object(role);
    w.reject_unknown_keys({"workers", "tp", "ep", "dp_attention"});
    AgentxSeries::Workers ws;
    ws.workers = w.integer("workers", JsonRange::between(std::string(role) == "decode" ? 0 : 1, 1024));
    ws.tp = w.integer("tp", JsonRange::between(1, 1024));
    ws.ep = w.integer_or("ep", 1, JsonRange::between(1, 1024));
    ws.dp_attention = w.boolean_or("dp_attention", false);
    (std::string(role) == "prefill" ? v.prefill : v.decode) = ws;
  }
  if (v.decode && !v.prefill) s.fail("decode", "needs a prefill block (the workers that take the requests first)");
  v.kv_offload = s.string_or("kv_offload", "none");
  if (v.kv_offload != "none" && v.kv_offload != "dram") s.fail("kv_offload", "must be none or dram");
  v.runner = s.string_or("runner", "");
  if (v.kv_offload == "dram" && !recipe::find_runner(v.runner))
    s.fail("runner", "must name an InferenceX runner with a DRAM size (src/recipe/inferencex_map.cpp) for a dram series");
  v.dram_utilization = s.number_or("dram_utilization", 0.8, JsonRange::fraction());
  if (s.has("spec")) {
    const JsonReader sp = s.object("spec");
    sp.reject_unknown_keys({"method", "acceptance_length", "num_steps", "num_draft_tokens", "block_size"});
    const std::string m = sp.string("method");
    if (m != "mtp" && m != "dspark" && m != "none") sp.fail("method", "must be mtp, dspark or none");
    v.spec.enabled = m != "none";
    if (m == "mtp") {
      if (sp.has("block_size")) sp.fail("block_size", "belongs to method dspark (a block drafter)");
      v.spec.draft_chain(sp.integer_or("num_steps", 3, JsonRange::between(1, 16)));
      v.spec.num_draft_tokens =
          sp.integer_or("num_draft_tokens", v.spec.num_steps + 1, JsonRange::between(1, 32));
    } else if (m == "dspark") {
      // One draft forward proposes block_size tokens; SGLang verifies them
      // with the root (speculative_num_draft_tokens = block + 1).
      if (sp.has("num_steps") || sp.has("num_draft_tokens"))
        sp.fail("method", "dspark takes block_size alone (one draft forward, block_size + 1 tokens verified)");
      v.spec.draft_block(sp.integer("block_size", JsonRange::between(1, 31)));
    }
    // A round accepts at most the verified chain (or block) and the bonus token.
    if (v.spec.enabled)
      v.spec.accept_length = sp.number("acceptance_length", JsonRange::between(1, v.spec.max_accepted()));
  }
  v.kv_dtype_bytes = s.integer_or("kv_dtype_bytes", 0, JsonRange::between(0, 4));
  v.launcher_flags = s.string_or("launcher_flags", "");
  // A number a launcher flag gives, checked once here: (lo, hi), or (lo, hi] when hi_closed.
  auto flag_number = [&](const char* flag, double lo, double hi, bool hi_closed, const char* expected) {
    std::optional<double> out;
    if (const auto f = recipe::command_flag_value(v.launcher_flags, flag)) {
      char* end = nullptr;
      const double x = std::strtod(f->c_str(), &end);
      if (end == f->c_str() || *end != '\0' || !(x > lo && (hi_closed ? x <= hi : x < hi)))
        s.fail("launcher_flags", std::string(flag) + " must be " + expected);
      out = x;
    }
    return out;
  };
  const auto flag_fraction = flag_number("--mem-fraction-static", 0, 1, false, "a number between 0 and 1");
  if (s.has("mem_fraction_static") && flag_fraction)
    s.fail("mem_fraction_static", "is given twice: drop it or the --mem-fraction-static in launcher_flags");
  v.mem_fraction_static = s.number_or("mem_fraction_static", flag_fraction.value_or(0.80), JsonRange::fraction());
  // Checked here; the engine reads it from the flags (sim::apply_scheduling_flags).
  flag_number("--swa-full-tokens-ratio", 0, 1, true, "a number in (0, 1]");
  if (const auto tails = recipe::command_flag_value(v.launcher_flags, "--swa-prefix-tails")) {
    char* end = nullptr;
    const long n = std::strtol(tails->c_str(), &end, 10);
    if (end == tails->c_str() || *end != '\0' || n < 0) s.fail("launcher_flags", "--swa-prefix-tails must be a whole number >= 0");
  }
  v.max_total_tokens = s.integer_or("max_total_tokens", 0, JsonRange::between(0, 1e9));
  v.context_length = s.integer_or("context_length", 0, JsonRange::between(0, 1e8));
  v.corpus = s.string("corpus");
  const auto presets = trace::synth_preset_names();
  if (std::find(presets.begin(), presets.end(), v.corpus) == presets.end())
    s.fail("corpus", "must name a synthetic corpus preset (agentperf traces synth --preset)");
  v.rerun_of = s.string_or("rerun_of", "");
  v.cliff_after = s.integer_or("cliff_after", 0, JsonRange::between(0, 100000));
  v.excluded = s.string_or("excluded", "");
  v.source = s.string("source");
  v.notes = s.string_or("notes", "");
  return v;
}

}  // namespace

AgentxSet load_agentx_set(const std::string& name_or_path) {
  nlohmann::json j;
  AgentxSet set;
  if (name_or_path == "builtin") {
    const auto& b = sim::builtin_validation_json();
    auto it = b.find("agentx_points");
    if (it == b.end()) throw UserError("this build has no built-in AgentX validation set (data/validation/agentx_points.json)");
    j = nlohmann::json::parse(it->second);
    set.source = "built-in AgentX validation set (data/validation/agentx_points.json)";
  } else {
    std::ifstream in(name_or_path);
    if (!in) throw UserError("AgentX validation set '" + name_or_path + "': cannot open it (" + std::strerror(errno) + ")");
    j = parse_json(in, name_or_path);
    set.source = name_or_path;
  }
  const JsonReader f(j, set.source);
  f.reject_unknown_keys({"schema", "notes", "series", "points"});
  const JsonReader ss = f.object("series", true);
  for (const auto& [id, s] : ss.entries()) set.series.emplace(id, read_series(id, s));
  for (const auto& [id, s] : set.series)
    if (!s.rerun_of.empty()) {
      auto it = set.series.find(s.rerun_of);
      if (it == set.series.end()) ss.fail(id + ".rerun_of", "names no series of the set");
      if (it->second.split != s.split) ss.fail(id + ".split", "must be its original's (" + it->second.split + "): a rerun is the same deployment");
    }
  const JsonReader pts = f.array("points", true);
  std::set<std::string> ids;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const JsonReader p = pts.at(i);
    p.reject_unknown_keys({"id", "series", "concurrency", "published", "source_detail", "excluded"});
    AgentxPoint v;
    v.id = p.string("id");
    if (!ids.insert(v.id).second) p.fail("id", "repeats an earlier point's id");
    v.series = p.string("series");
    if (!set.series.count(v.series)) p.fail("series", "names no entry of the set's \"series\"");
    v.concurrency = p.integer("concurrency", JsonRange::between(1, 100000));
    // A point past its series' published cliff may publish nothing: it is
    // there to place the predicted cliff (the published text names the
    // collapse, not its numbers).
    const int cliff_after = set.series.at(v.series).cliff_after;
    const bool past_cliff = cliff_after > 0 && v.concurrency > cliff_after;
    const JsonReader pub = p.object("published", !past_cliff);
    for (const auto& [name, value] : pub.entries()) {
      const auto& known = agentx_metric_names();
      if (std::find(known.begin(), known.end(), name) == known.end())
        pub.fail(name, "is not an AgentX metric (known: total_tok_s_gpu, output_tok_s_gpu, ttft_mean_ms, ttft_p50_ms, "
                       "ttft_p90_ms, tpot_mean_ms, interactivity_p50, e2e_interactivity_p90, cache_hit_observed)");
      v.published[name] = value.number("", JsonRange::positive());
    }
    v.source_detail = p.string_or("source_detail", "");
    v.excluded = p.string_or("excluded", "");
    set.points.push_back(std::move(v));
  }
  return set;
}

const std::vector<trace::WekaTrace>& agentx_corpus(const std::string& source) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<std::vector<trace::WekaTrace>>> made;
  std::lock_guard lk(mu);
  auto& slot = made[source];
  if (!slot) {
    trace::LoadOptions lo;
    if (source.rfind("synth:", 0) != 0) lo.num_dataset_entries = 393;
    auto traces = trace::load_traces(source, "weka", lo);
    if (traces.empty()) throw UserError("corpus " + source + ": no trace to replay");
    slot = std::make_unique<std::vector<trace::WekaTrace>>(std::move(traces));
  }
  return *slot;
}

const std::string& corpus_of(const AgentxSeries& s, const AgentxPredictOptions& o) {
  return o.corpus.empty() ? s.corpus : o.corpus;
}

std::string corpus_source(const AgentxSeries& s, const AgentxPredictOptions& o) {
  const std::string& preset = corpus_of(s, o);
  if (auto it = o.corpus_files.find(preset); it != o.corpus_files.end()) return it->second;
  return "synth:" + preset;
}

namespace {

// The series at one concurrency as an InferenceX search-space row and its
// expanded point, so the launcher's rules (recipe/point_engine_config.h:
// running cap, graph cap, HiCache pool, DP-attention ranks) size it as a
// sweep's dry run would.
struct SeriesPoint {
  recipe::Recipe recipe;
  recipe::SearchSpaceEntry entry;
  recipe::ExpandedPoint point;
};

std::unique_ptr<SeriesPoint> series_point(const AgentxSeries& s, int conc) {
  auto sp = std::make_unique<SeriesPoint>();
  auto& e = sp->entry;
  e.tp = s.tp;
  e.ep = s.ep;
  e.dp_attn = s.dp_attention;
  if (s.prefill) {
    auto worker = [](const AgentxSeries::Workers& w) {
      recipe::WorkerSpec ws;
      ws.num_worker = w.workers;
      ws.tp = w.tp;
      ws.ep = w.ep;
      ws.dp_attn = w.dp_attention;
      return ws;
    };
    e.prefill = worker(*s.prefill);
    e.decode = s.decode ? worker(*s.decode) : recipe::WorkerSpec{};  // none: aggregated
  }
  e.spec_decoding = s.spec.enabled ? "mtp" : "none";
  e.kv_offloading = s.kv_offload;
  e.conc_list = {conc};
  auto& p = sp->point;
  p.entry = &sp->entry;
  p.conc = conc;
  p.max_running_requests = 2 * conc;
  p.cuda_graph_max_bs = std::min(conc, 64);
  p.command = s.launcher_flags;
  if (s.kv_offload == "dram") {
    const recipe::RunnerRow* r = recipe::find_runner(s.runner);
    p.dram_ranks = s.tp;
    p.total_cpu_dram_gb = recipe::total_cpu_dram_gb(r->available_cpu_dram_mib, s.dram_utilization, s.num_gpus, r->gpus_per_node);
    p.hicache_size_gb = recipe::hicache_size_per_rank_gb(p.total_cpu_dram_gb, s.tp);
  }
  sp->recipe.framework = s.engine;
  sp->recipe.sim_model_spec = s.model_spec;
  sp->recipe.sim_hardware_spec = s.hardware;
  return sp;
}

}  // namespace

AgentxPrediction predict_agentx_point(const AgentxSet& set, const AgentxPoint& p, const AgentxPredictOptions& o) {
  const AgentxSeries& s = set.series_of(p);
  AgentxPrediction out;
  const auto t0 = std::chrono::steady_clock::now();
  sim::ModelSpec model = sim::load_model_spec(s.model_spec);
  if (s.kv_dtype_bytes > 0) model.kv_dtype_bytes = s.kv_dtype_bytes;
  if (s.context_length > 0) model.max_context = static_cast<int>(s.context_length);
  const sim::HardwareSpec hw = sim::load_hardware_spec(s.hardware);
  const sim::EngineCosts costs = o.costs ? o.costs(s.engine) : sim::load_engine_costs(s.engine);
  auto sp = series_point(s, p.concurrency);
  auto engines = recipe::engines_for(sp->recipe, sp->point, costs, &model, &hw);
  // The series' engine flags over the launcher rules' ones, on every pool.
  for (auto& pe : engines) {
    sim::EngineConfig& cfg = pe.config;
    cfg.scheduler = s.engine == "vllm" ? sim::SchedulerKind::vllm : sim::SchedulerKind::sglang;
    cfg.mem_fraction_static = s.mem_fraction_static;
    cfg.max_total_tokens = s.max_total_tokens;
    cfg.spec = s.spec;
  }
  PointRanks served = sp->entry.multinode() ? multinode_ranks(engines, model, hw)
                                            : point_ranks(engines.front(), model, hw, engines.front().config);
  replay::ReplayConfig rc;
  rc.lanes = p.concurrency;
  rc.duration_s = o.duration_s;
  rc.first_trace = o.first_trace;
  rc.grace_s = 30;
  rc.output.quiet = true;
  rc.benchmark_id = "sim-validate-agentx/" + p.id;
  // InferenceX runs AIPerf with --random-seed 42 (build_replay_cmd in
  // benchmarks/benchmark_lib.sh @ 843c6254ff69): each lane's t* is drawn
  // from it and the trace's id, so a real corpus file (--corpus-file)
  // starts every lane where the published hour did.
  rc.seed = 42;
  rc.routing_headers = served.routing_headers;
  const std::string source = corpus_source(s, o);
  const auto& traces = agentx_corpus(source);
  auto res = replay::predict_replay(served.ranks, rc, traces, served.options);
  replay::ReplayRunInfo info;
  info.traces_source = source;
  info.gpus = s.num_gpus;
  info.traces = &traces;
  info.cli_command = "agentperf sim validate --agentx (point " + p.id + ")";
  const auto agg = replay::build_replay_aggregate(res.replay, rc, info, replay::judge_replay(res.replay, 0.10));
  const auto& ix = agg.inferencex;
  const auto& full = agg.inferencex_full.json;
  static const nlohmann::ordered_json none = nlohmann::ordered_json::object();
  const auto& lat = full.contains("latency") ? full.at("latency") : none;
  // A latency statistic, when the run produced it (a run with no profiled
  // success has none: the metric is then absent, not 0).
  auto put = [&](const char* name, const char* block, const char* stat, double scale) {
    if (!lat.contains(block) || !lat.at(block).is_object()) return;
    const auto& b = lat.at(block);
    if (b.contains(stat) && b.at(stat).is_number()) out.metrics[name] = scale * b.at(stat).get<double>();
  };
  if (ix.records_profiled > 0) {
    out.metrics["total_tok_s_gpu"] = ix.total_tput_per_gpu;
    out.metrics["output_tok_s_gpu"] = ix.output_tput_per_gpu;
  }
  put("ttft_mean_ms", "ttft", "mean", 1000);
  put("ttft_p50_ms", "ttft", "p50", 1000);
  put("ttft_p90_ms", "ttft", "p90", 1000);
  put("tpot_mean_ms", "tpot", "mean", 1000);
  put("interactivity_p50", "intvty", "p50", 1);
  put("e2e_interactivity_p90", "e2e_norm_intvty", "p90", 1);
  if (ix.observed_cache_hit) out.metrics["cache_hit_observed"] = *ix.observed_cache_hit;
  out.requests = ix.records_profiled;
  if (const auto& b = res.ttft_breakdown; b.requests > 0) {
    const double n = static_cast<double>(b.requests);
    out.breakdown["ttft_front_end_wait_ms"] = 1000 * b.front_end_wait_s / n;
    out.breakdown["ttft_front_end_ms"] = 1000 * b.front_end_s / n;
    out.breakdown["ttft_scheduler_wait_ms"] = 1000 * b.scheduler_wait_s / n;
    out.breakdown["ttft_first_step_ms"] = 1000 * b.first_step_s / n;
    out.breakdown["ttft_network_ms"] = 1000 * b.network_s / n;
    // Disaggregated: from the prefill's first token to the decode's.
    if (res.handoffs > 0) out.breakdown["ttft_handoff_ms"] = 1000 * res.handoff_s / static_cast<double>(res.handoffs);
  }
  const auto& e = res.engine;
  if (e.decode_steps > 0) {
    const double round_ms = 1000 * e.decode_busy_s / static_cast<double>(e.decode_steps);
    const double al = e.spec_verify_steps ? e.spec_accept_length_sum / static_cast<double>(e.spec_verify_steps) : 1.0;
    out.breakdown["decode_round_ms"] = round_ms;
    out.breakdown["tpot_decode_only_ms"] = round_ms / al;
  }
  if (e.prefill_busy_s + e.decode_busy_s > 0)
    out.breakdown["prefill_share_of_busy"] = e.prefill_busy_s / (e.prefill_busy_s + e.decode_busy_s);
  if (const double walk = e.serial_walk_share(); walk > 0) out.breakdown["serial_walk_share_of_busy"] = walk;
  out.binding_pool = sim::binding_pool(e);
  out.virtual_seconds = res.virtual_seconds;
  if (!res.replay.abort_reason.empty()) out.failure = res.replay.abort_reason;
  out.cpu_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

bool past_published_cliff(const AgentxSet& set, const AgentxPoint& p) {
  const int after = set.series_of(p).cliff_after;
  return after > 0 && p.concurrency > after;
}

std::optional<PredictedCliff> predicted_cliff(const std::vector<std::pair<int, double>>& conc_and_hit,
                                              double collapse_share) {
  auto v = conc_and_hit;
  std::sort(v.begin(), v.end());
  double best = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0 && v[i].second < collapse_share * best) return PredictedCliff{v[i - 1].first, v[i].first};
    best = std::max(best, v[i].second);
  }
  return std::nullopt;
}

}  // namespace agentperf::sweep
