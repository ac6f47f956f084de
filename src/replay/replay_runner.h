// `agentperf replay`: plays Weka session trees against an endpoint, AgentX
// style (AIPerf's agentic replay, github.com/ai-dynamo/aiperf,
// src/aiperf/timing/strategies/agentic_replay.py @ 88bd3643da5b and
// cache_bust.py @ dfcac739c87a; InferenceX's settings in
// github.com/SemiAnalysisAI/InferenceX @ 843c6254ff69,
// benchmarks/benchmark_lib.sh, build_replay_cmd):
//  - --lanes N lanes, each holding one session tree (root + subagents) until
//    every stream of it drains, then recycling to the next trace from turn 0
//    with a fresh cache-bust marker;
//  - a turn starts when the previous turn of its stream completed plus its
//    end-to-start delay, its joined children have finished and its
//    cross-stream barriers are met (the later of those);
//  - idle caps: when nothing is in flight anywhere and the next timer is
//    more than --system-idle-cap away, every pending timer moves earlier by
//    the excess; when one tree has had nothing in flight for
//    --trace-idle-gap-cap, that tree's timers do;
//  - cache-bust: "[rid:<12 hex>]" of sha256("bench:pass:lane:trace"), the
//    same for every request of the tree, at the start of each stream's first
//    user message: after that stream's own declared system blocks
//    (trace/session_tree.h: a subagent's are its entry's, not the trace's);
//  - --duration stops new requests; in-flight ones get --grace-period and are
//    counted, then cancelled (499).
//  - warmup (on by default): each initial lane's tree is cut at AIPerf's t*
//    (numpy default_rng of sha256("{seed}:{trace}:{lane}"), uniform in
//    [0.25, 0.75] of the span of recorded request starts); turns before t*
//    are history; every stream mid-flight at t* sends its last pre-t* turn
//    with max_tokens 1 (a primer: the server cache reaches the t* state),
//    each primer's lead clamped to the system idle cap, so every lane's t*
//    lands at one instant; then each lane sends its next
//    --warmup-requests-per-lane turns (the earliest by recorded start,
//    fixed when the tree enters the stage) with no delay and 1-token outputs;
//    then profiling resumes every stream at its recorded timestamp - t*,
//    less the phase-wide minimum. A failed primer aborts the run, except a
//    context overflow, which drops that trace's lanes (docs/agentx.md).
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "load/load_runner.h"
#include "load/profile_config.h"
#include "trace/prompt_builder.h"
#include "trace/weka_trace.h"

namespace agentperf::replay {

// Asks a running replay to stop early (a sweep's short-circuit of a point
// that is clearly bad): sending stops, in-flight requests are cancelled, and
// the result carries the reason as abort_reason. Thread-safe.
class StopSignal {
 public:
  void request(const std::string& reason) {
    {
      std::lock_guard lk(mu_);
      if (flag_) return;
      reason_ = reason;
    }
    flag_ = true;
  }
  bool requested() const { return flag_; }
  std::string reason() const {
    std::lock_guard lk(mu_);
    return reason_;
  }

 private:
  mutable std::mutex mu_;
  std::string reason_;
  std::atomic<bool> flag_{false};
};

struct ReplayConfig {
  ClientConfig client;     // target, endpoint, model, headers, prompt encoding, timeouts
  RunOutputConfig output;  // quiet, progress interval (the command writes the files)
  std::uint64_t seed = 0;  // block contents and t* draws
  int lanes = 8;
  double duration_s = 600;
  double grace_s = 30;
  double system_idle_cap_s = 10;
  double tree_idle_cap_s = 300;
  bool cache_bust = true;
  std::string benchmark_id;  // fresh per run: makes markers differ across runs
  bool context_overflow_ends_play = true;
  // The dataset index lane 0's first play takes; lane k takes the next k-th
  // and recycles go on in order from there (wrapping). AIPerf's Weka loaders
  // ask for sequential sampling (the dataset's row order: docs/agentx.md),
  // so a real hour at c lanes replays the corpus's first c rows and then the
  // rows after them; a prediction over a synthetic stand-in turns this to
  // see how much its numbers owe to which few traces the hour replays.
  std::int64_t first_trace = 0;
  bool routing_headers = false;          // X-SMG-Routing-Key (tree) and X-Session-ID (conversation)
  // AIPerf's session-affinity headers, each the request's stable
  // X-Correlation-ID, switched by its AIPERF_HTTP_*_FROM_CORRELATION_ID
  // environment variables (ai-dynamo/aiperf docs/environment-variables.md
  // @ de762d45): X-Session-Affinity (on by default in AIPerf),
  // X-Session-ID, X-SMG-Routing-Key (SGLang Model Gateway's manual policy,
  // which InferenceX's DP-attention launchers export), and
  // X-Dynamo-Session-ID with X-Dynamo-Parent-Session-ID on a subagent.
  struct SessionHeaders {
    bool x_session_affinity = false, x_session_id = false, x_smg_routing_key = false, x_dynamo_session_id = false;
    // From the process environment, AIPerf's defaults where unset.
    static SessionHeaders from_environment();
  };
  SessionHeaders session_headers;
  double failed_request_threshold = 1.0;  // stop once the error ratio exceeds it (1 = never)
  bool warmup = true;
  double t_star_min = 0.25, t_star_max = 0.75;
  int warmup_requests_per_lane = 10;
  // No longer used: AIPerf clamps each primer's lead to the system idle
  // cap (system_idle_cap_s) instead of scaling the leads together.
  double warmup_spread_s = 10;
  double warmup_grace_s = 1800;  // warmup longer than this is cut off and profiling starts
  std::shared_ptr<StopSignal> stop;  // optional: polled at least every 0.25 s
  trace::TokenIdRange token_ids;     // token-id prompts: block and marker ids
  RecordSink* sink = nullptr;        // optional: each record as its request ends (streamed to disk)
};

struct ReplayResult {
  RunResult run;
  std::int64_t plays_started = 0, plays_finished = 0, overflow_terminations = 0, context_overflow_errors = 0;
  double idle_skipped_s = 0;
  // Recorded idle time the plays' trace clocks left out (AIPerf's loader
  // cap, --trace-idle-gap-cap-seconds): each started play's tree's
  // SessionTree::idle_compressed_s, summed; a play cut at t* counts whole.
  double idle_compressed_s = 0;
  std::int64_t warmup_primers = 0, warmup_pressure = 0;
  std::int64_t deadlocks_broken = 0;  // times waiting turns were released from contradictory dependencies
  std::int64_t warmup_dropped_lanes = 0;  // lanes dropped because their trace overflowed the context in warmup
  std::string abort_reason;
};

ReplayResult run_replay(const ReplayConfig& cfg, const std::vector<trace::WekaTrace>& traces, const std::string& model);

// "[rid:" + first 12 hex of sha256(benchmark_id:pass:lane:trace_id) + "]"
std::string cache_bust_marker(const std::string& benchmark_id, std::int64_t pass, int lane, const std::string& trace_id);

}  // namespace agentperf::replay
