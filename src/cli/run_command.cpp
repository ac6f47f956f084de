#include "cli/run_command.h"

#include <cstdio>

#include "cli/cli_numbers.h"
#include "cli/profile_command.h"
#include "common/error.h"
#include "cli/run_descriptions.h"
#include "cli/sim_options.h"
#include "metrics/export.h"
#include "sim/predictor.h"
#include "sim/sim_server.h"

namespace agentperf::cli {

// The main job. With no --url the embedded default target is the engine
// simulator (`sim serve`), started in-process on an ephemeral port; the
// same workload is then predicted in virtual time (`sim predict`) and the
// two are printed side by side.
struct RunCommand {
  CLI::App* cmd = nullptr;
  ProfileConfig cfg;
  ProfileCliText text;
  SimEngineOptions engine;
  double time_scale = 1.0;
};

std::shared_ptr<RunCommand> add_run_command(CLI::App& app) {
  auto rc = std::make_shared<RunCommand>();
  rc->cmd = app.add_subcommand(
      "run", "Main job: benchmark the embedded engine simulator (or --url) and compare with its prediction");
  // Defaults of the main job: small, finishes in seconds.
  rc->cfg.concurrency = 8;
  rc->cfg.request_count = 200;
  rc->cfg.warmup_request_count = 8;
  rc->cfg.server_metrics = true;  // the report then shows the engine's queue, KV usage and cache hits
  rc->cfg.url = "";
  add_profile_options(*rc->cmd, rc->cfg, rc->text);
  add_sim_engine_options(*rc->cmd, rc->engine);
  rc->cmd->add_option("--time-scale", rc->time_scale, "Embedded simulator: run this many times faster than real time")
      ->check(real_in(0, 1000000, true))->capture_default_str()->group("Engine");
  return rc;
}

bool run_command_selected(const RunCommand& rc) { return rc.cmd->parsed(); }

namespace {
// What a first run has just done, once, in words (docs/run.md says more).
void print_run_epilogue(const RunCommand& rc, double predicted_ttft_ms) {
  // The run wrote into a folder of its own unless -o named one; latest links to it.
  const std::string dir = rc.cfg.artifact_dir_given ? rc.cfg.artifact_dir : rc.cfg.artifact_dir + "/latest";
  std::printf(
      "\nWhat this was:\n"
      "  Measured: agentperf's client against the embedded simulator (%s on %s, TP%d) over HTTP, as against a real\n"
      "  server: %s requests at concurrency %d. TTFT is the time to the first streamed token; TTST the gap from the\n"
      "  first to the second token; ITL is (request latency - TTFT) / (output tokens - 1) per request (AIPerf's and\n"
      "  vLLM's TPOT), and full-response ITL the same up to the end of the stream.\n"
      "  Predicted: the same workload on the same simulated engine in virtual time, with no sockets: how close its\n"
      "  line is to the table (TTFT %.1f ms predicted) says how much the client and HTTP add; `agentperf sim\n"
      "  validate` shows how close the simulator comes to real engines.\n"
      "  Files: %s/profile_export.jsonl (one line per request), %s/profile_export_aiperf.json (aggregates), the\n"
      "  server's /metrics timeline beside them.\n"
      "Next: agentperf report %s -o report.html   (an HTML report of this run)\n"
      "      agentperf run --url http://HOST:PORT  (the same benchmark against your server)\n",
      rc.engine.model.c_str(), rc.engine.hardware.c_str(), rc.engine.cfg.tp,
      rc.cfg.request_count ? std::to_string(*rc.cfg.request_count).c_str() : "timed", rc.cfg.concurrency.value_or(1),
      predicted_ttft_ms, dir.c_str(), dir.c_str(), dir.c_str());
}
}  // namespace

int execute_run_command(RunCommand& rc, const std::string& cli_command) {
  finish_profile_options(rc.cfg, rc.text);
  if (!rc.cfg.url.empty()) {
    RunDescription described;
    apply_describe(rc.text.describe, described);
    return run_profile_repeated(rc.cfg, cli_command, described);
  }
  // The main job compares one measured run with its prediction; repeats are
  // for a server (--url) or `profile`.
  if (rc.cfg.repeat > 1) throw UserError("--repeat: `run` against the embedded simulator measures once; use --url or `agentperf profile --repeat N`");

  finish_sim_engine_options(rc.engine);
  auto make_engine = [&] {
    return std::make_unique<sim::Engine>(sim::load_model_spec(rc.engine.model), load_engine_hardware(rc.engine),
                                         rc.engine.cfg);
  };
  sim::SimServerOptions opts;
  opts.time_scale = rc.time_scale;
  sim::SimServer server(make_engine(), opts);
  server.start();
  rc.cfg.url = server.url();
  if (!rc.cfg.quiet)
    std::fprintf(stderr, "agentperf: started the embedded simulator (%s on %s TP%d, time scale %.3g) at %s\n",
                 rc.engine.model.c_str(), rc.engine.hardware.c_str(), rc.engine.cfg.tp, rc.time_scale,
                 rc.cfg.url.c_str());
  // The embedded simulator is the server: the report labels a time-scaled
  // run as such and keeps it off the frontier of real-time runs.
  RunDescription description = describe_sim_engine(rc.engine);
  description.time_scale = rc.time_scale;
  apply_describe(rc.text.describe, description);
  const int code = run_profile(rc.cfg, cli_command, description);
  server.stop();
  if (code != 0) return code;

  auto engine = make_engine();
  ProfileConfig load = rc.cfg;
  sim::PredictConfig pc{load, {}};
  auto predicted = sim::predict(*engine, pc);
  AggregateInputs in;
  in.run = &predicted.run;
  auto agg = build_aggregate(predicted.run.records, in);
  auto avg = [&](const char* tag) { return agg.contains(tag) ? agg[tag]["avg"].get<double>() : 0.0; };
  std::printf("\nsim predict, same workload in virtual time (%.1f s simulated in %.3f s CPU):\n",
              predicted.virtual_seconds, predicted.cpu_seconds);
  std::printf("  TTFT %.2f ms, ITL %.2f ms, request latency %.2f ms, %.1f output tok/s\n", avg("time_to_first_token"),
              avg("inter_token_latency"), avg("request_latency"), avg("output_token_throughput"));
  if (rc.time_scale != 1.0)
    std::printf("  (the measured run above is in scaled time: multiply its latencies by %.3g)\n", rc.time_scale);
  if (!rc.cfg.quiet) print_run_epilogue(rc, avg("time_to_first_token"));
  return 0;
}

}  // namespace agentperf::cli
