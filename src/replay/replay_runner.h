// `agentperf replay`: plays Weka session trees against an endpoint, AgentX
// style (inferencex-agentx.md §4.2-4.4):
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
//  - cache-bust: "[rid:<12 hex>]" of sha256("bench:pass:lane:trace") after a
//    tree's system blocks, the same for every request of the tree;
//  - --duration stops new requests; in-flight ones get --grace-period and are
//    counted, then cancelled (499).
// The t* warmup snapshot and handoff are not implemented yet: a run starts
// every lane at turn 0 (see docs/agentx.md).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "load/load_runner.h"
#include "load/profile_config.h"
#include "trace/weka_trace.h"

namespace agentperf::replay {

struct ReplayConfig {
  ProfileConfig client;  // target, endpoint, model, headers, timeouts, seed, quiet
  int lanes = 8;
  double duration_s = 600;
  double grace_s = 30;
  double system_idle_cap_s = 10;
  double tree_idle_cap_s = 300;
  bool cache_bust = true;
  std::string benchmark_id;  // fresh per run: makes markers differ across runs
  bool context_overflow_ends_play = true;
};

struct ReplayResult {
  RunResult run;
  std::int64_t plays_started = 0, plays_finished = 0, overflow_terminations = 0;
  double idle_skipped_s = 0;
  std::int64_t theoretical_hit_blocks = 0, theoretical_total_blocks = 0;
};

ReplayResult run_replay(const ReplayConfig& cfg, const std::vector<trace::WekaTrace>& traces, const std::string& model);

// "[rid:" + first 12 hex of sha256(benchmark_id:pass:lane:trace_id) + "]"
std::string cache_bust_marker(const std::string& benchmark_id, std::int64_t pass, int lane, const std::string& trace_id);

}  // namespace agentperf::replay
