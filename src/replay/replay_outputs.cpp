#include "replay/replay_outputs.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>

#include "load/profile_config.h"
#include "metrics/export.h"
#include "metrics/inferencex_aggregate.h"
#include "trace/session_tree.h"

namespace agentperf::replay {

RunVerdict judge_replay(const ReplayResult& res, double max_error_rate) {
  RunVerdict v = judge_run(res.run.records, res.run, max_error_rate);
  const double n = static_cast<double>(std::max<std::size_t>(1, res.run.records.size()));
  // AIPerf's AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT (0.01, a strict
  // bound on overflows over all responses) and its reason tag.
  if (static_cast<double>(res.context_overflow_errors) / n > 0.01) {
    v.invalid_reasons.push_back("context_overflow_rate_exceeded: " + std::to_string(res.context_overflow_errors) +
                                " of " + std::to_string(res.run.records.size()) + " responses overflowed the context (limit 1 %)");
    v.valid = false;
    if (v.exit_code == 0) v.exit_code = 1;
  }
  return v;
}

TheoreticalHit theoretical_hit_of_records(const std::vector<RequestRecord>& records,
                                          const std::vector<trace::WekaTrace>& traces) {
  std::map<std::string, const trace::WekaTrace*> by_id;
  for (const auto& t : traces) by_id.emplace(t.id, &t);
  // One tree per trace, its streams by conversation id (the records'
  // conversation_id and turn_index are the tree's stream and turn).
  struct Tree {
    trace::SessionTree tree;
    std::map<std::string, const trace::Stream*> streams;
  };
  std::map<std::string, Tree> trees;
  TheoreticalHit out;
  for (const auto& r : records) {
    if (r.phase != Phase::profiling || !r.ok()) continue;
    const std::string id = r.conversation_id.substr(0, r.conversation_id.find("::"));
    auto t = by_id.find(id);
    if (t == by_id.end()) continue;
    auto [it, fresh] = trees.try_emplace(id);
    if (fresh) {
      it->second.tree = trace::build_session_tree(*t->second);
      for (const auto& s : it->second.tree.streams) it->second.streams.emplace(s.conversation_id, &s);
    }
    auto s = it->second.streams.find(r.conversation_id);
    if (s == it->second.streams.end() || r.turn_index < 0 ||
        static_cast<std::size_t>(r.turn_index) >= s->second->turns.size())
      continue;
    const auto& turn = s->second->turns[static_cast<std::size_t>(r.turn_index)];
    const auto total = static_cast<std::int64_t>(turn.call->hash_ids.size());
    if (total <= 0) continue;
    out.hit_blocks += std::clamp<std::int64_t>(turn.theoretical_hit_blocks, 0, total);
    out.total_blocks += total;
  }
  return out;
}

ExpectedOutputs expected_outputs_of(const std::vector<trace::WekaTrace>& traces) {
  ExpectedOutputs out;
  for (const auto& t : traces) {
    std::vector<std::int64_t> outs;
    for (const auto& e : t.entries)
      if (!e.is_subagent) outs.push_back(e.call.out);
    if (!outs.empty()) out[t.id] = std::move(outs);  // a repeated id: the last wins, as in the Python dict
  }
  return out;
}

std::int64_t profiling_window_start_wall_ns(const ReplayResult& res) {
  std::int64_t first = 0;
  bool warmup = false;
  for (const auto& r : res.run.records) {
    if (r.phase != Phase::profiling) warmup = true;
    else if (r.start_wall_ns && (first == 0 || r.start_wall_ns < first)) first = r.start_wall_ns;
  }
  return warmup ? first : 0;
}

InferenceXEnv resolve_inferencex_env(const ReplayConfig& cfg, const ReplayRunInfo& info) {
  InferenceXEnv env = inferencex_env_from_process();
  for (const auto& [k, v] : info.inferencex_env) env[k] = v;
  auto set_default = [&](const char* k, const std::string& v) {
    auto it = env.find(k);
    if (it == env.end() || it->second.empty()) env[k] = v;
  };
  set_default("CONC", std::to_string(cfg.lanes));
  set_default("MODEL", cfg.client.model);
  if (env.find("IS_MULTINODE") == env.end() || env["IS_MULTINODE"].empty()) set_default("TP", std::to_string(info.gpus));
  set_default("KV_OFFLOADING", "none");
  return env;
}

namespace {
// info.description completed with what the replay itself knows. Only the
// InferenceX variables actually given (process environment, --inferencex-env,
// a sweep's recipe) count: resolve_inferencex_env's defaults are guesses.
RunDescription describe_replay(const ReplayConfig& cfg, const ReplayRunInfo& info) {
  RunDescription d = info.description;
  InferenceXEnv env = inferencex_env_from_process();
  for (const auto& [k, v] : info.inferencex_env) env[k] = v;
  auto text = [&](std::optional<std::string>& field, const char* key) {
    auto it = env.find(key);
    if (!field && it != env.end() && !it->second.empty()) field = it->second;
  };
  auto number = [&](std::optional<int>& field, const char* key) {
    auto it = env.find(key);
    if (field || it == env.end()) return;
    try {
      field = std::stoi(it->second);
    } catch (const std::exception&) {
    }
  };
  text(d.model, "MODEL");
  text(d.hardware, "RUNNER_TYPE");
  text(d.engine, "FRAMEWORK");
  text(d.kv_offload, "KV_OFFLOADING");
  text(d.spec_decoding, "SPEC_DECODING");
  number(d.tp, "TP");
  number(d.ep, "EP_SIZE");
  if (!d.concurrency) d.concurrency = cfg.lanes;
  if (!d.gpus) d.gpus = info.gpus;
  if (!d.served_model && !cfg.client.model.empty()) d.served_model = cfg.client.model;
  if (!d.workload && !info.traces_source.empty()) d.workload = "traces " + info.traces_source;
  return d;
}
}  // namespace

ReplayAggregate build_replay_aggregate(const ReplayResult& res, const ReplayConfig& cfg, const ReplayRunInfo& info,
                                       const RunVerdict& verdict) {
  nlohmann::json input = cfg.client;
  // The load of a replay is its lanes and traces; these keys sit where
  // profile's input_config keeps them, so one reader serves both.
  input["load"] = {{"concurrency", cfg.lanes}, {"benchmark_duration", cfg.duration_s},
                   {"benchmark_grace_period", cfg.grace_s}, {"random_seed", cfg.seed},
                   {"failed_request_threshold", cfg.failed_request_threshold}};
  input["output"] = {{"artifact_dir", cfg.output.artifact_dir}};
  input["replay"] = {{"traces", info.traces_source}, {"lanes", cfg.lanes}, {"system_idle_cap_s", cfg.system_idle_cap_s},
                     {"trace_idle_gap_cap_seconds", cfg.tree_idle_cap_s}, {"cache_bust", cfg.cache_bust},
                     {"variant_256k", info.variant_256k}, {"gpus", info.gpus}};
  AggregateInputs in;
  in.run = &res.run;
  in.input_config = input;
  in.cli_command = info.cli_command;
  in.benchmark_id = cfg.benchmark_id;
  in.verdict = &verdict;
  in.records_error = info.records_error;
  in.description = describe_replay(cfg, info);
  in.slos = parse_slos(cfg.output.slos);
  auto agg = build_aggregate(res.run.records, in);

  // AIPerf's theoretical_prefix_cache_hit: successful profiling records only.
  TheoreticalHit th;
  if (info.traces) th = theoretical_hit_of_records(res.run.records, *info.traces);
  ExpectedOutputs expected;
  if (info.traces) expected = expected_outputs_of(*info.traces);
  const InferenceXEnv env = resolve_inferencex_env(cfg, info);

  InferenceXInputs ix;
  ix.gpus = info.gpus;
  ix.theoretical_hit_blocks = th.hit_blocks;
  ix.theoretical_total_blocks = th.total_blocks;
  ix.expected_outputs = info.traces ? &expected : nullptr;
  ix.server_metrics = info.server_metrics ? &*info.server_metrics : nullptr;
  ix.framework = env.count("FRAMEWORK") ? env.at("FRAMEWORK") : std::string();
  auto ixa = inferencex_aggregate(res.run.records, ix);
  agg["inferencex"] = ixa.json;
  if (th.total_blocks > 0) {
    // TheoreticalPrefixCacheAccumulator's MetricResult: unit "%", avg and
    // current = 100 * hit / total, sum = hit blocks, count = total blocks.
    const double pct = 100.0 * static_cast<double>(th.hit_blocks) / static_cast<double>(th.total_blocks);
    agg["theoretical_prefix_cache_hit"] = {{"unit", "%"}, {"avg", pct}, {"current", pct},
                                           {"sum", th.hit_blocks}, {"count", th.total_blocks}};
  }
  {
    // One verdict for the console, the exit code and this file.
    agg["metadata"] = {{"scenario", "agentperf-agentx"}, {"submission_valid", verdict.valid},
                       {"submission_invalid_reasons", verdict.invalid_reasons},
                       {"dataset", {{"source", info.traces_source}, {"traces", info.stats.traces_kept}, {"requests", info.stats.requests_kept}}}};
  }
  agg["replay"] = {{"plays_started", res.plays_started}, {"plays_finished", res.plays_finished},
                   {"warmup_primers", res.warmup_primers}, {"warmup_pressure_requests", res.warmup_pressure},
                   {"deadlocks_broken", res.deadlocks_broken},
                   {"warmup_dropped_lanes", res.warmup_dropped_lanes},
                   {"context_overflow_terminations", res.overflow_terminations}, {"idle_skipped_s", res.idle_skipped_s},
                   {"idle_compressed_s", res.idle_compressed_s}};
  ReplayAggregate out{std::move(agg), ixa.headline, std::move(ixa)};
  return out;
}

std::filesystem::path write_inferencex_result(const std::filesystem::path& dir, const ReplayAggregate& agg,
                                              const ReplayConfig& cfg, const ReplayRunInfo& info) {
  const InferenceXEnv env = resolve_inferencex_env(cfg, info);
  auto it = env.find("RESULT_FILENAME");
  const std::string stem = it != env.end() && !it->second.empty() ? it->second : "inferencex_result";
  const auto path = dir / (stem + ".json");
  try {
    write_json_file(path, inferencex_result(agg.inferencex_full, agg.json, env));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "agentperf: InferenceX result not written: %s\n", e.what());
    return {};
  }
  return path;
}

ReplayAggregate write_replay_outputs(const ReplayResult& res, const ReplayConfig& cfg, const ReplayRunInfo& info,
                                     const std::filesystem::path& dir, const RunVerdict& verdict) {
  ReplayRunInfo with_metrics = info;
  if (!with_metrics.server_metrics) {
    std::ifstream f(dir / "server_metrics_export.json");
    if (f) {
      auto j = nlohmann::json::parse(f, nullptr, false);
      if (!j.is_discarded()) with_metrics.server_metrics = std::move(j);
    }
  }
  auto out = build_replay_aggregate(res, cfg, with_metrics, verdict);
  write_run_results(dir, res.run.records, out.json, info.records_streamed);
  write_inferencex_result(dir, out, cfg, with_metrics);
  return out;
}

}  // namespace agentperf::replay
