#include "replay/replay_outputs.h"

#include "load/profile_config.h"
#include "metrics/export.h"
#include "metrics/inferencex_aggregate.h"

namespace agentperf::replay {

RunVerdict judge_replay(const ReplayResult& res, double max_error_rate) {
  RunVerdict v = judge_run(res.run.records, res.run, max_error_rate);
  const double n = static_cast<double>(std::max<std::size_t>(1, res.run.records.size()));
  if (static_cast<double>(res.context_overflow_errors) / n > 0.01) {
    v.invalid_reasons.push_back("context overflows in " + std::to_string(res.context_overflow_errors) +
                                " requests, above 1 % of all");
    v.valid = false;
    if (v.exit_code == 0) v.exit_code = 1;
  }
  return v;
}

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
  auto agg = build_aggregate(res.run.records, in);
  InferenceXInputs ix;
  ix.gpus = info.gpus;
  ix.theoretical_hit_blocks = res.theoretical_hit_blocks;
  ix.theoretical_total_blocks = res.theoretical_total_blocks;
  auto ixa = inferencex_aggregate(res.run.records, ix);
  agg["inferencex"] = std::move(ixa.json);
  agg["theoretical_prefix_cache_hit"] = {{"unit", "blocks"}, {"sum", res.theoretical_hit_blocks},
                                         {"count", res.theoretical_total_blocks},
                                         {"avg", res.theoretical_total_blocks ? double(res.theoretical_hit_blocks) / double(res.theoretical_total_blocks) : 0.0}};
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
                   {"context_overflow_terminations", res.overflow_terminations}, {"idle_skipped_s", res.idle_skipped_s}};
  return {std::move(agg), ixa.headline};
}

ReplayAggregate write_replay_outputs(const ReplayResult& res, const ReplayConfig& cfg, const ReplayRunInfo& info,
                                     const std::filesystem::path& dir, const RunVerdict& verdict) {
  auto out = build_replay_aggregate(res, cfg, info, verdict);
  write_run_results(dir, res.run.records, out.json, info.records_streamed);
  return out;
}

}  // namespace agentperf::replay
