// A trace as a tree of streams, as AIPerf's Weka loader and branch
// orchestrator build and play it (SemiAnalysisAI/aiperf @ 2141c6217b7f:
// src/aiperf/dataset/loader/weka_trace.py WekaTraceLoader._reconstruct_serial,
// _expand_subagent_to_child_plans, _sa_end_seconds, _replay_scope_for_session,
// _install_replay_dependencies; src/aiperf/timing/branch_orchestrator.py
// @ 7ee18816f7d1 on_credit_issued, _spawn_children_and_register_gates,
// _child_dispatch_offset_ms; src/aiperf/timing/replay_dependencies.py
// @ a5b3bef9494f infer_cross_stream_predecessors; docs/agentx.md
// "Subagent timing"):
//  - every time below is on the replay timeline (idle_gap_warp.h): the
//    recorded clock with each gap between request starts longer than the
//    idle-gap cap cut to the cap, as AIPerf's loader does before it uses a
//    timestamp (_compute_trace_idle_timing); chain detection alone reads the
//    recorded clock;
//  - the root stream holds the trace's top-level calls (its main agent);
//  - a subagent entry becomes the child stream "<trace>::sa:<agent_id>"
//    (plus "<trace>::sa:<agent_id>:fa:NNN" for further context chains
//    found inside it), all children of the root, agent depth 1. It is
//    spawned by the last root call before the entry (none: dropped) and
//    joined by the first later root call that starts at or after the
//    subagent's recorded end t + duration_ms (else the latest end of its
//    calls; no such call: background, nothing waits for it). Entries with
//    the same (spawning, joining) pair form one branch, whose start is the
//    earliest entry t;
//  - a child's first call goes its recorded offset after the branch start
//    (child first t - branch start), counted from the completion of the
//    spawning call; when the branch started before the spawning call's
//    recorded end (an overlap), the children start when the spawning call
//    is SENT instead, each at (child first t - spawning call t);
//  - later turns: end-to-start delays, max(0, t - (t_prev + api_time_prev))
//    after the previous turn of the stream completes;
//  - cross-stream barriers per replay scope: the root and its flattened
//    agents form one scope, each subagent (with its own chains) another, so
//    root and subagent streams never gate each other. Within a scope a turn
//    waits, for every other stream, for that stream's latest turn that
//    started strictly before it and ended by its start (max by end, start,
//    key), less the frontier turns another frontier turn follows;
//  - flattened agents: top-level calls are split into agent chains by
//    hash-id prefix evidence (agent_chains.h); the chain of the first call
//    is the root stream, every other chain a child stream "<trace>::fa:NNN"
//    (NNN from 000) of the root, spawned by the last root call before its
//    first call (else root call 0) and joined like a subagent, by its last
//    call's end; same branch grouping and offsets. AIPerf's further naming
//    of some chains ::wg: (worker groups) and ::aux: (sidecars) is not made.
//  - theoretical prefix-cache hit per turn: its blocks already seen earlier
//    in the trace (one seen-set for the whole tree, in recorded time order);
//  - each stream's system message (weka_synth_buf.py @ 08ec06877e94
//    ConversationReconstructor.init_turn_0; weka_trace.py _chain_init_tokens):
//    the declared tool + system tokens of that stream's own context, never
//    fabricated: the root uses the trace's, a subagent's main chain its
//    entry's own (0 when the entry declares none), and a further chain (a
//    flattened agent, a chain inside a subagent) its base's counts only when
//    its first call's leading hash blocks are the base chain's first call's
//    for that many blocks, else none. It spans P = min(ceil((T + S) / bs),
//    floor(in / bs), hash_ids) whole blocks of the stream's first call, and
//    the cache-bust marker goes right after it, at the start of the first
//    user message (AIPerf's worker prepends it to that message's content).
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "trace/weka_trace.h"

namespace agentperf::trace {

struct TurnRef {
  int stream = 0;
  int turn = 0;
  bool operator==(const TurnRef&) const = default;
};

struct Turn {
  const TraceCall* call = nullptr;
  double t_s = 0;                     // the call's start on the replay timeline (idle_gap_warp.h): every timing rule reads it
  double start_delay_s = 0;           // end-to-start gap (see above)
  std::vector<int> spawns;            // child streams started when this turn completes
  std::vector<int> spawns_on_send;    // child streams started when this turn is sent (overlap)
  std::vector<int> joins;             // child streams that must finish before this turn starts
  std::vector<TurnRef> barriers;      // turns of other streams of its scope that must complete first
  std::int64_t lcp_blocks = 0;        // blocks shared with the previous turn of the stream
  std::int64_t assistant_blocks = 0;  // the previous answer's blocks among the new ones
  std::int64_t theoretical_hit_blocks = 0;
};

struct Stream {
  std::string conversation_id;
  std::string replay_scope;  // barrier scope: AIPerf's replay_scope_id
  int parent = -1;
  TurnRef spawned_by{-1, -1};
  bool spawn_on_send = false;  // in spawned_by's spawns_on_send, not its spawns
  int depth = 0;               // AIPerf agent_depth: 0 root, 1 its children
  bool background = false;
  std::int64_t system_blocks = 0;  // P above: whole blocks of the stream's system message
  std::vector<Turn> turns;
};

struct SessionTree {
  const WekaTrace* trace = nullptr;
  std::vector<Stream> streams;  // streams[0] is the root
  double t_begin = 0, t_end = 0;  // span of the whole tree on the replay timeline (starts to completions)
  double idle_compressed_s = 0;   // recorded idle time the timeline leaves out
  std::int64_t dropped_subagents = 0;
  std::int64_t flattened_agents = 0, seams = 0;
  std::int64_t turn_count() const;
};

// `idle_gap_cap_s`: the replay timeline compresses every gap between
// request starts longer than this (idle_gap_warp.h); infinity keeps the
// recorded clock.
SessionTree build_session_tree(const WekaTrace& trace, bool split_flattened_agents = true,
                               double idle_gap_cap_s = std::numeric_limits<double>::infinity());

}  // namespace agentperf::trace
