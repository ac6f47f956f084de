#include "cli/replay_options.h"

#include <algorithm>
#include <cstdio>

#include "cli/cli_numbers.h"
#include "common/error.h"
#include "load/profile_config.h"
#include "metrics/inferencex_aggregate.h"
#include "metrics/progress.h"

namespace agentperf::cli {

void add_replay_schedule_options(CLI::App& cmd, replay::ReplayConfig& cfg, ReplayTraceOptions& t,
                                 bool with_run_flags, bool traces_required) {
  auto* g = "Replay";
  auto* traces = cmd.add_option("--traces,--input-file", t.traces, "Weka traces: .jsonl/.json[.zst] file or directory")
                     ->group(g);
  if (traces_required) traces->required();
  if (with_run_flags) {
    cmd.add_option("--lanes,-c,--concurrency", cfg.lanes, "Lanes: session trees played at once")
        ->transform(int_in(1, limits::max_concurrency))->capture_default_str()->group(g);
    cmd.add_option("-d,--duration,--benchmark-duration", cfg.duration_s, "Seconds of sending")
        ->check(positive_seconds_up_to(limits::max_seconds))->capture_default_str()->group(g);
    cmd.add_option("--grace-period,--benchmark-grace-period", cfg.grace_s,
                   "Seconds for in-flight requests after --duration")
        ->check(seconds_in(0, limits::max_seconds))->capture_default_str()->group(g);
    cmd.add_option("--failed-request-threshold", cfg.failed_request_threshold,
                   "Stop once the profiling error ratio exceeds this (InferenceX: 0.10)")
        ->check(real_in(0, 1, true))->capture_default_str()->group(g);
    cmd.add_option("--random-seed", cfg.seed, "Seed of the block contents")
        ->transform(uint64_any())->capture_default_str()->group(g);
  }
  cmd.add_option("--system-idle-cap", cfg.system_idle_cap_s, "Longest wait with nothing in flight anywhere")
      ->check(positive_seconds_up_to(limits::max_seconds))->capture_default_str()->group(g);
  cmd.add_option("--trace-idle-gap-cap-seconds", cfg.tree_idle_cap_s, "Longest idle gap of one session tree")
      ->check(positive_seconds_up_to(limits::max_seconds))->capture_default_str()->group(g);
  cmd.add_flag("!--no-cache-bust", cfg.cache_bust, "Do not add the per-play [rid:...] marker")->group(g);
  cmd.add_option("--trace-format", t.format, "weka, mooncake, or auto (mooncake rows have input_length)")
      ->check(CLI::IsMember({"auto", "weka", "mooncake"}))->capture_default_str()->group(g);
  cmd.add_flag("--routing-headers", cfg.routing_headers,
               "Send X-SMG-Routing-Key (the session tree) and X-Session-ID (the conversation)")->group(g);
  cmd.add_option("--max-context-length", t.max_context, "Drop traces whose peak in+out exceeds this")
      ->transform(tokens_in(1, limits::max_tokens))->group(g);
  cmd.add_flag("--256k", t.load.variant_256k, "Drop calls with in+out > 256,000")->group(g);
  cmd.add_option("--num-dataset-entries", t.entries, "Use the first N traces")
      ->transform(int_in(1, 1'000'000'000))->group(g);
  cmd.add_option("--gpus", t.gpus,
                 "GPUs behind the endpoint, for throughput per GPU (default: the deployment's, from InferenceX's "
                 "TP/PP/PCP or disaggregated-worker variables or --describe tp=,dp=; else 1)")
      ->each([&given = t.gpus_given](const std::string&) { given = true; })
      ->transform(int_in(1, 1'000'000))->group(g);
  auto* w = "Warmup";
  cmd.add_flag("!--no-warmup", cfg.warmup, "Start every lane at turn 0, with no t* snapshot, primers or pressure requests")
      ->group(w);
  cmd.add_option("--trajectory-start-min-ratio", cfg.t_star_min, "t* lower bound, as a share of the tree's span")
      ->check(real_in(0, 1))->capture_default_str()->group(w);
  cmd.add_option("--trajectory-start-max-ratio", cfg.t_star_max, "t* upper bound")
      ->check(real_in(0, 1))->capture_default_str()->group(w);
  cmd.add_option("--warmup-requests-per-lane", cfg.warmup_requests_per_lane,
                 "Zero-delay one-token requests per lane after the primers")
      ->transform(int_in(0, 1'000'000))->capture_default_str()->group(w);
  cmd.add_option("--warmup-spread-seconds", cfg.warmup_spread_s,
                 "No effect (kept so scripts run): each primer's lead is clamped to --system-idle-cap, as AIPerf does")
      ->check(seconds_in(0, limits::max_seconds))->capture_default_str()->group(w);
  cmd.add_option("--warmup-grace-period", cfg.warmup_grace_s, "Seconds warmup may take before profiling starts anyway")
      ->check(positive_seconds_up_to(limits::max_seconds))->capture_default_str()->group(w);
}

std::vector<trace::WekaTrace> load_replay_traces(ReplayTraceOptions& t, const replay::ReplayConfig& cfg, bool quiet,
                                                 trace::LoadStats& stats) {
  if (t.max_context > 0) t.load.max_context_length = t.max_context;
  if (t.entries > 0) t.load.num_dataset_entries = t.entries;
  if (cfg.t_star_min > cfg.t_star_max)
    throw UserError("--trajectory-start-min-ratio must not exceed --trajectory-start-max-ratio");
  // The dataset is built here, before anything is sent (prompts are then
  // made per play): the progress line counts MB of the trace files read
  // and ends with the traces and requests kept.
  CountProgress loading("agentperf: loading traces", quiet);
  trace::LoadOptions load = t.load;
  load.progress = &loading;
  auto traces = trace::load_traces(t.traces, t.format, load, &stats);
  if (traces.empty()) throw UserError("no traces left in '" + t.traces + "' after the filters");
  return traces;
}

replay::ReplayRunInfo replay_run_info(const ReplayTraceOptions& opts, const trace::LoadStats& stats,
                                      const std::string& cli_command) {
  replay::ReplayRunInfo info;
  info.traces_source = opts.traces;
  info.stats = stats;
  info.gpus = opts.gpus;
  info.cli_command = cli_command;
  info.variant_256k = opts.load.variant_256k;
  return info;
}

void resolve_replay_gpus(const ReplayTraceOptions& opts, const InferenceXEnv& env_overrides,
                         replay::ReplayRunInfo& info) {
  auto set = [&](int n, const std::string& source) {
    info.gpus = std::max(1, n);
    info.description.gpus = info.gpus;
    info.description.gpus_source = source;
  };
  if (opts.gpus_given) return set(opts.gpus, "--gpus");
  if (info.description.gpus) return set(*info.description.gpus, "--describe gpus");
  InferenceXEnv env = inferencex_env_from_process();
  for (const auto& [k, v] : env_overrides) env[k] = v;
  auto has = [&](const char* k) { return env.count(k) && !env.at(k).empty(); };
  if (has("TP") || has("PREFILL_TP") || has("DECODE_TP")) {
    try {
      const int n = inferencex_num_gpus(env);
      if (n > 0)
        return set(n, has("TP") && !has("PREFILL_TP") ? "InferenceX variables (TP x PP_SIZE x PCP_SIZE)"
                                                      : "InferenceX variables (prefill and decode workers x TP x PP x PCP)");
    } catch (const std::exception& e) {
      throw UserError(std::string("InferenceX variables: ") + e.what());
    }
  }
  if (info.description.tp) return set(*info.description.tp * info.description.dp.value_or(1), "--describe tp x dp");
  set(1, "unknown: 1 assumed (pass --gpus N)");
}

void print_replay_lines(const InferenceXHeadline& ix, const replay::ReplayResult& res) {
  char observed[32] = "n/a";
  if (ix.observed_cache_hit) std::snprintf(observed, sizeof observed, "%.1f%%", 100 * *ix.observed_cache_hit);
  std::printf("InferenceX: %.1f total tok/s/GPU, %.1f output tok/s/GPU, interactivity p50 %.1f tok/s, cache hit %s "
              "observed / %.1f%% theoretical\n",
              ix.total_tput_per_gpu, ix.output_tput_per_gpu, ix.intvty_p50, observed, 100 * ix.theoretical_cache_hit);
  if (!ix.observed_cache_hit)
    std::printf("  (observed cache hit n/a: the server reports no cached tokens in its usage)\n");
  std::printf("Plays: %lld started, %lld finished; warmup %lld primers + %lld pressure requests; idle skipped %.1f s, "
              "compressed out of the traces %.1f s\n",
              static_cast<long long>(res.plays_started), static_cast<long long>(res.plays_finished),
              static_cast<long long>(res.warmup_primers), static_cast<long long>(res.warmup_pressure),
              res.idle_skipped_s, res.idle_compressed_s);
}

}  // namespace agentperf::cli
