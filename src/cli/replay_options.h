// The replay schedule's flags and trace loading, shared by `agentperf
// replay` (an endpoint, real time) and `agentperf sim predict --traces` (the
// simulator, virtual time), so both read the same flags the same way.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "replay/replay_outputs.h"
#include "replay/replay_runner.h"
#include "trace/trace_loader.h"

namespace agentperf::cli {

struct ReplayTraceOptions {
  std::string traces;
  std::string format = "auto";
  trace::LoadOptions load;
  std::int64_t max_context = 0, entries = 0;
  int gpus = 1;
  bool gpus_given = false;  // --gpus was passed (else the deployment's count, when known)
};

// --traces and its filters, the idle caps, cache-bust, routing headers,
// warmup (t*, primers, pressure) and --gpus. `with_run_flags` also adds
// --lanes/-c/--concurrency, --duration, --grace-period, --random-seed and
// --failed-request-threshold (a command that has them already, like `sim
// predict`, maps its own onto the ReplayConfig).
void add_replay_schedule_options(CLI::App& cmd, replay::ReplayConfig& cfg, ReplayTraceOptions& traces,
                                 bool with_run_flags, bool traces_required);

// Loads and filters the traces; one line to stderr unless quiet. Throws
// UserError naming the file (and line) when a trace is malformed, or when
// the filters leave none.
std::vector<trace::WekaTrace> load_replay_traces(ReplayTraceOptions& opts, const replay::ReplayConfig& cfg, bool quiet,
                                                 trace::LoadStats& stats);

// The GPUs behind the endpoint, for per-GPU throughput: --gpus; else what
// the InferenceX variables say (TP x PP x PCP, or the disaggregated
// workers', as process_agentic_result counts them), from the process
// environment or `env_overrides` (--inferencex-env, a recipe); else the
// description's TP x DP (--describe tp=...); else 1, said to be unknown.
// Sets info.gpus and info.description.gpus/gpus_source.
void resolve_replay_gpus(const ReplayTraceOptions& opts, const InferenceXEnv& env_overrides,
                         replay::ReplayRunInfo& info);

// What the result files say of the run's traces and command line.
replay::ReplayRunInfo replay_run_info(const ReplayTraceOptions& opts, const trace::LoadStats& stats,
                                      const std::string& cli_command);

// The lines a replay prints after the metric table: the InferenceX
// headline and the plays / warmup counters.
void print_replay_lines(const InferenceXHeadline& ix, const replay::ReplayResult& res);

}  // namespace agentperf::cli
