#include "cli/replay_command.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/profile_command.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/run_control.h"
#include "common/rng.h"
#include "load/load_runner.h"
#include "load/request_builder.h"
#include "metrics/export.h"
#include "metrics/inferencex_aggregate.h"
#include "metrics/record_stream.h"
#include "replay/replay_outputs.h"
#include "replay/replay_runner.h"
#include "trace/trace_loader.h"

namespace agentperf::cli {

struct ReplayCommand {
  CLI::App* cmd = nullptr;
  ClientConfig client;
  RunOutputConfig output;
  ProfileCliText text;
  replay::ReplayConfig cfg;
  std::string traces;
  trace::LoadOptions load;
  std::int64_t max_context = 0, entries = 0;
  int gpus = 1;
  std::string format = "auto";
  double max_error_rate = 0.10;
};

std::shared_ptr<ReplayCommand> add_replay_command(CLI::App& app) {
  auto rc = std::make_shared<ReplayCommand>();
  rc->cmd = app.add_subcommand("replay", "Replay Weka agentic traces (session trees as lanes) against an endpoint");
  rc->text.endpoint_type = "completions";
  add_target_options(*rc->cmd, rc->client, rc->text);
  add_client_options(*rc->cmd, rc->client);
  add_output_options(*rc->cmd, rc->output);
  auto* g = "Replay";
  rc->cmd->add_option("--traces,--input-file", rc->traces, "Weka traces: .jsonl/.json[.zst] file or directory")
      ->required()->group(g);
  rc->cmd->add_option("--lanes,-c,--concurrency", rc->cfg.lanes, "Lanes: session trees played at once")
      ->check(CLI::PositiveNumber)->capture_default_str()->group(g);
  rc->cmd->add_option("-d,--duration,--benchmark-duration", rc->cfg.duration_s, "Seconds of sending")
      ->check(CLI::PositiveNumber)->capture_default_str()->group(g);
  rc->cmd->add_option("--grace-period,--benchmark-grace-period", rc->cfg.grace_s, "Seconds for in-flight requests after --duration")
      ->check(CLI::NonNegativeNumber)->capture_default_str()->group(g);
  rc->cmd->add_option("--system-idle-cap", rc->cfg.system_idle_cap_s, "Longest wait with nothing in flight anywhere")
      ->check(CLI::PositiveNumber)->capture_default_str()->group(g);
  rc->cmd->add_option("--trace-idle-gap-cap-seconds", rc->cfg.tree_idle_cap_s, "Longest idle gap of one session tree")
      ->check(CLI::PositiveNumber)->capture_default_str()->group(g);
  rc->cmd->add_flag("!--no-cache-bust", rc->cfg.cache_bust, "Do not add the per-play [rid:...] marker")->group(g);
  rc->cmd->add_option("--trace-format", rc->format, "weka, mooncake, or auto (mooncake rows have input_length)")
      ->check(CLI::IsMember({"auto", "weka", "mooncake"}))->capture_default_str()->group(g);
  rc->cmd->add_flag("--routing-headers", rc->cfg.routing_headers,
                    "Send X-SMG-Routing-Key (the session tree) and X-Session-ID (the conversation)")->group(g);
  rc->cmd->add_option("--failed-request-threshold", rc->cfg.failed_request_threshold,
                      "Stop once the profiling error ratio exceeds this (InferenceX: 0.10)")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str()->group(g);
  rc->cmd->add_option("--max-context-length", rc->max_context, "Drop traces whose peak in+out exceeds this")
      ->check(CLI::PositiveNumber)->group(g);
  rc->cmd->add_flag("--256k", rc->load.variant_256k, "Drop calls with in+out > 256,000")->group(g);
  rc->cmd->add_option("--num-dataset-entries", rc->entries, "Use the first N traces")->check(CLI::PositiveNumber)->group(g);
  auto* w = "Warmup";
  rc->cmd->add_flag("!--no-warmup", rc->cfg.warmup, "Start every lane at turn 0, with no t* snapshot, primers or pressure requests")
      ->group(w);
  rc->cmd->add_option("--trajectory-start-min-ratio", rc->cfg.t_star_min, "t* lower bound, as a share of the tree's span")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str()->group(w);
  rc->cmd->add_option("--trajectory-start-max-ratio", rc->cfg.t_star_max, "t* upper bound")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str()->group(w);
  rc->cmd->add_option("--warmup-requests-per-lane", rc->cfg.warmup_requests_per_lane,
                      "Zero-delay one-token requests per lane after the primers")
      ->check(CLI::NonNegativeNumber)->capture_default_str()->group(w);
  rc->cmd->add_option("--warmup-spread-seconds", rc->cfg.warmup_spread_s, "Longest span of the primer spread")
      ->check(CLI::NonNegativeNumber)->capture_default_str()->group(w);
  rc->cmd->add_option("--warmup-grace-period", rc->cfg.warmup_grace_s, "Seconds warmup may take before profiling starts anyway")
      ->check(CLI::PositiveNumber)->capture_default_str()->group(w);
  rc->cmd->add_option("--gpus", rc->gpus, "GPUs behind the endpoint (throughput per GPU)")
      ->check(CLI::PositiveNumber)->capture_default_str()->group(g);
  rc->cmd->add_option("--random-seed", rc->cfg.seed, "Seed of the block contents")->capture_default_str()->group(g);
  rc->cmd->add_option("--tokenizer", rc->client.tokenizer_path, "tokenizer.json: exact-length text blocks (chat)")
      ->check(CLI::ExistingFile)->group(g);
  rc->cmd->add_option("--token-id-range", rc->text.token_id_range,
                      "MIN:MAX token ids of token-id prompts (completions): blocks below MAX-256, cache-bust markers in "
                      "the top 256 (default 1000:31256; checked against the served vocabulary when /v1/models gives it)")
      ->group(g);
  rc->cmd->add_option("--max-error-rate", rc->max_error_rate,
                      "Share of failed profiling requests a valid run may have (InferenceX: 0.10); above it the run is "
                      "INVALID and exits 1")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str()->group(g);
  return rc;
}

int execute_replay_command(ReplayCommand& rc, const std::string& cli_command) {
  if (!rc.cmd->parsed()) return -1;
  finish_client_options(rc.client, rc.text);
  if (rc.max_context > 0) rc.load.max_context_length = rc.max_context;
  if (rc.entries > 0) rc.load.num_dataset_entries = rc.entries;
  trace::LoadStats stats;
  const auto t0 = monotonic_ns();
  auto traces = trace::load_traces(rc.traces, rc.format, rc.load, &stats);
  if (traces.empty()) throw UserError("no traces left in '" + rc.traces + "' after the filters");
  if (rc.cfg.t_star_min > rc.cfg.t_star_max)
    throw UserError("--trajectory-start-min-ratio must not exceed --trajectory-start-max-ratio");
  if (!rc.output.quiet)
    std::fprintf(stderr, "agentperf: loaded %lld traces (%lld requests) in %.2f s\n",
                 static_cast<long long>(stats.traces_kept), static_cast<long long>(stats.requests_kept),
                 static_cast<double>(monotonic_ns() - t0) / 1e9);
  std::error_code ec;
  std::filesystem::create_directories(rc.output.artifact_dir, ec);
  if (ec) throw UserError("cannot create --artifact-dir '" + rc.output.artifact_dir + "': " + ec.message());
  const std::filesystem::path dir(rc.output.artifact_dir);
  {
    // A generous guess: every lane sends a request every 2 s of --duration.
    const auto expected = static_cast<std::uint64_t>(std::min(1e9, rc.cfg.lanes * rc.cfg.duration_s / 2 + 1));
    check_free_disk(dir, estimate_result_bytes(expected, 500), "the results of up to ~" + std::to_string(expected) + " requests");
  }
  const ServedModel served = preflight_served_model(rc.client);
  const std::string& model = served.id;
  rc.client.model = model;
  if (rc.client.uses_token_ids()) {
    if (rc.client.token_id_range_given) {
      try {
        rc.cfg.token_ids = trace::TokenIdRange::from_bounds(rc.client.token_id_min, rc.client.token_id_max);
      } catch (const std::invalid_argument& e) {
        throw UserError("--token-id-range '" + rc.text.token_id_range + "': " + e.what());
      }
    }
    check_token_ids_fit(rc.cfg.token_ids.min, rc.cfg.token_ids.max_exclusive(), served, "--token-id-range");
  }
  rc.cfg.client = rc.client;
  rc.cfg.output = rc.output;
  Rng id_rng(mix_seed(rc.cfg.seed, static_cast<std::uint64_t>(wall_ns())));
  rc.cfg.benchmark_id = make_request_id(id_rng.next_u64(), id_rng.next_u64());
  RecordStreamWriter records(dir / "profile_export.jsonl");
  rc.cfg.sink = &records;
  auto scraper = start_server_metrics(rc.client, rc.output);
  install_stop_signal_handlers();
  auto res = replay::run_replay(rc.cfg, traces, model);
  stop_server_metrics(scraper, rc.output);
  rc.cfg.sink = nullptr;

  replay::ReplayRunInfo info;
  info.traces_source = rc.traces;
  info.stats = stats;
  info.gpus = rc.gpus;
  info.cli_command = cli_command;
  info.variant_256k = rc.load.variant_256k;
  info.records_streamed = true;
  info.records_error = records.close();
  const RunVerdict verdict = replay::judge_replay(res, rc.max_error_rate);
  const auto agg = replay::build_replay_aggregate(res, rc.cfg, info, verdict);
  const InferenceXHeadline& ix = agg.inferencex;
  return finish_measured_run(agg.json, verdict, dir, info.records_error, rc.output.quiet, [&] {
    char observed[32] = "n/a";
    if (ix.observed_cache_hit) std::snprintf(observed, sizeof observed, "%.1f%%", 100 * *ix.observed_cache_hit);
    std::printf("InferenceX: %.1f total tok/s/GPU, %.1f output tok/s/GPU, interactivity p50 %.1f tok/s, cache hit %s "
                "observed / %.1f%% theoretical\n",
                ix.total_tput_per_gpu, ix.output_tput_per_gpu, ix.intvty_p50, observed, 100 * ix.theoretical_cache_hit);
    if (!ix.observed_cache_hit)
      std::printf("  (observed cache hit n/a: the server reports no cached tokens in its usage)\n");
    std::printf("Plays: %lld started, %lld finished; warmup %lld primers + %lld pressure requests; idle skipped %.1f s\n",
                static_cast<long long>(res.plays_started), static_cast<long long>(res.plays_finished),
                static_cast<long long>(res.warmup_primers), static_cast<long long>(res.warmup_pressure),
                res.idle_skipped_s);
  });
}

}  // namespace agentperf::cli
