#include "cli/replay_command.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/aiperf_compat.h"
#include "cli/cli_numbers.h"
#include "common/defaults.h"
#include "cli/profile_command.h"
#include "cli/run_descriptions.h"
#include "cli/replay_options.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/fd_limit.h"
#include "common/run_control.h"
#include "common/rng.h"
#include "load/load_runner.h"
#include "load/request_builder.h"
#include "metrics/export.h"
#include "metrics/timeslice_export.h"
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
  ReplayTraceOptions traces;
  double max_error_rate = 0.10;
  std::vector<std::string> inferencex_env;  // KEY=VALUE over the environment (InferenceX's result file)
  std::optional<AiperfTranslation> aiperf;  // run as AIPerf's `profile --scenario`
};

void set_replay_aiperf_scenario(ReplayCommand& rc, const AiperfTranslation& t) { rc.aiperf = t; }

std::shared_ptr<ReplayCommand> add_replay_command(CLI::App& app) {
  auto rc = std::make_shared<ReplayCommand>();
  rc->cmd = app.add_subcommand("replay", "Replay Weka agentic traces (session trees as lanes) against an endpoint");
  rc->text.endpoint_type = defaults::kTokenIdEndpoint;
  add_target_options(*rc->cmd, rc->client, rc->text);
  add_client_options(*rc->cmd, rc->client);
  add_output_options(*rc->cmd, rc->output);
  add_replay_schedule_options(*rc->cmd, rc->cfg, rc->traces, /*with_run_flags=*/true, /*traces_required=*/true);
  auto* g = "Replay";
  rc->cmd->add_option("--tokenizer", rc->client.tokenizer_path, "tokenizer.json: exact-length text blocks (chat)")
      ->check(CLI::ExistingFile)->group(g);
  rc->cmd->add_option("--token-id-range", rc->text.token_id_range,
                      "MIN:MAX token ids of token-id prompts (completions): blocks below MAX-256, cache-bust markers in "
                      "the top 256 (default 1000:31256; checked against the served vocabulary when /v1/models gives it)")
      ->group(g);
  rc->cmd->add_option("--max-error-rate", rc->max_error_rate,
                      "Share of failed profiling requests a valid run may have (InferenceX: 0.10); above it the run is "
                      "INVALID and exits 1")
      ->check(real_in(0, 1))->capture_default_str()->group(g);
  add_describe_option(*rc->cmd, rc->text.describe);
  rc->cmd->add_option("--inferencex-env", rc->inferencex_env,
                      "KEY=VALUE: one of InferenceX's process_agentic_result variables (RUNNER_TYPE, CONC, TP, "
                      "EP_SIZE, FRAMEWORK, PRECISION, KV_OFFLOADING, RESULT_FILENAME, ...), over the environment, "
                      "for <artifact-dir>/<RESULT_FILENAME>.json (docs/agentx.md)")
      ->check([](const std::string& kv) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) return std::string("expected KEY=VALUE");
        const auto& names = inferencex_env_names();
        if (std::find(names.begin(), names.end(), kv.substr(0, eq)) == names.end())
          return "unknown InferenceX variable '" + kv.substr(0, eq) + "'";
        return std::string();
      })
      ->group(g);
  return rc;
}

int execute_replay_command(ReplayCommand& rc, const std::string& cli_command) {
  if (!rc.cmd->parsed()) return -1;
  finish_client_options(rc.client, rc.text);
  // At least a socket per lane (subagents add more while they run).
  check_open_file_budget(static_cast<std::uint64_t>(rc.cfg.lanes), "--lanes " + std::to_string(rc.cfg.lanes));
  trace::LoadStats stats;
  auto traces = load_replay_traces(rc.traces, rc.cfg, rc.output.quiet, stats);
  const ServedModel served = preflight_served_model(rc.client);
  const std::string& model = served.id;
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
  const auto folder = open_run_folder(rc.output, model, rc.client.endpoint_type,
                                      "concurrency" + std::to_string(rc.cfg.lanes), cli_command);
  const std::filesystem::path dir(rc.output.artifact_dir);
  {
    // A generous guess: every lane sends a request every 2 s of --duration.
    const auto expected = static_cast<std::uint64_t>(std::min(1e9, rc.cfg.lanes * rc.cfg.duration_s / 2 + 1));
    check_free_disk(dir, estimate_result_bytes(expected, 500), "the results of up to ~" + std::to_string(expected) + " requests");
  }
  rc.client.model = model;
  rc.cfg.client = rc.client;
  rc.cfg.session_headers = replay::ReplayConfig::SessionHeaders::from_environment();
  rc.cfg.output = rc.output;
  Rng id_rng(mix_seed(rc.cfg.seed, static_cast<std::uint64_t>(wall_ns())));
  rc.cfg.benchmark_id = make_request_id(id_rng.next_u64(), id_rng.next_u64());
  RecordStreamWriter records(dir / "profile_export.jsonl");
  rc.cfg.sink = &records;
  auto scraper = start_server_metrics(rc.client, rc.output);
  install_stop_signal_handlers();
  auto res = replay::run_replay(rc.cfg, traces, model);
  if (scraper) {
    // The server-metrics export covers the profiling phase: from its first
    // request (when there was a warmup) to the scraper's final scrape.
    scraper->set_export_window(replay::profiling_window_start_wall_ns(res), 0);
    scraper->set_benchmark_id(rc.cfg.benchmark_id);
  }
  stop_server_metrics(scraper, rc.output);
  rc.cfg.sink = nullptr;

  replay::ReplayRunInfo info = replay_run_info(rc.traces, stats, cli_command);
  info.records_streamed = true;
  info.traces = &traces;
  for (const auto& kv : rc.inferencex_env) info.inferencex_env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  apply_describe(rc.text.describe, info.description);  // over the InferenceX variables, which fill only what is unset
  resolve_replay_gpus(rc.traces, info.inferencex_env, info);
  if (!rc.output.quiet)
    std::fprintf(stderr, "agentperf: throughput per GPU over %d GPU%s (%s)\n", info.gpus, info.gpus == 1 ? "" : "s",
                 info.description.gpus_source->c_str());
  {
    std::ifstream f(dir / "server_metrics_export.json");
    if (f) {
      auto j = nlohmann::json::parse(f, nullptr, false);
      if (!j.is_discarded()) info.server_metrics = std::move(j);
    }
  }
  info.records_error = records.close();
  const RunVerdict verdict = replay::judge_replay(res, rc.max_error_rate);
  auto agg = replay::build_replay_aggregate(res, rc.cfg, info, verdict);
  if (rc.aiperf) {
    // As AIPerf stamps a scenario run: the scenario, and a submission that
    // broke a rule under --unsafe-override is not valid.
    auto& md = agg.json["metadata"];
    md["scenario"] = rc.aiperf->scenario;
    md["dataset"]["name"] = rc.aiperf->dataset;
    if (rc.aiperf->unsafe_override && !rc.aiperf->violations.empty()) {
      md["submission_valid"] = false;
      md["submission_invalid_reasons"].push_back("unsafe_override");
      md["scenario_rules_broken"] = rc.aiperf->violations;
    }
    if (!verdict.complete) {
      md["submission_valid"] = false;
      md["submission_invalid_reasons"].push_back("run_cancelled");
    }
    md["aiperf_flags_not_modelled"] = rc.aiperf->accepted_not_modelled;
  }
  // InferenceX's process_agentic_result output, from this aggregate.
  if (std::filesystem::is_directory(dir)) {
    const auto path = replay::write_inferencex_result(dir, agg, rc.cfg, info);
    if (!path.empty() && !rc.output.quiet) std::fprintf(stderr, "agentperf: InferenceX result: %s\n", path.string().c_str());
  }
  // --slice-duration: the client-side time slices beside the aggregate.
  std::optional<std::string> write_error = info.records_error;
  if (rc.output.slice_duration_s > 0 && std::filesystem::is_directory(dir)) {
    try {
      write_client_timeslices(dir, res.run.records, rc.output.slice_duration_s, agg.json["input_config"]);
    } catch (const UserError& e) {
      if (!write_error) write_error = e.what();
    }
  }
  const int code = finish_measured_run(agg.json, verdict, dir, write_error, rc.output.quiet,
                                       [&] { print_replay_lines(agg.inferencex, res); });
  mark_latest_run(rc.output);
  return code;
}

}  // namespace agentperf::cli
