// A trace as a tree of streams, as AIPerf's Weka loader and agentic replay
// build it (github.com/ai-dynamo/aiperf, src/aiperf/dataset/loader/weka_trace.py
// @ af3e5382a6c1, src/aiperf/timing/strategies/agentic_replay.py @ 88bd3643da5b):
//  - the root stream holds the trace's top-level calls;
//  - a subagent group becomes a child stream "<trace>::sa:<agent_id>",
//    spawned when the parent's preceding call completes, joined by the
//    parent's following call (which waits for it) -- or, if the recording
//    shows the group still running when that call started, by the first
//    later call that starts after the group's last call ends ("tiered
//    joins"); with no such call it runs in the background (nothing waits for
//    it); with no preceding call it is dropped; adjacent groups with the
//    same anchors form one branch;
//  - delays are end-to-start: a turn starts max(0, t - (t_prev + api_time_prev))
//    after the previous turn of its stream completes; a child's first turn
//    starts that long after its spawning turn completes;
//  - cross-stream barriers: a turn also waits for the latest turn of every
//    other stream of the tree whose recorded completion is at or before its
//    recorded start;
//  - theoretical prefix-cache hit per turn: its blocks already seen earlier
//    in the trace (one seen-set for the whole tree, in recorded time order).
//  - flattened agents: top-level calls are split into agent chains by
//    hash-id prefix evidence (agent_chains.h); the chain of the first call
//    is the root stream, every other chain a stream "<trace>::fa:NNN"
//    spawned by the call it forked from, joined by its parent's first later
//    call that starts after the chain's last call ends (else background).
//    AIPerf's further split of these into ::wg (worker groups) and ::aux
//    (sidecars) is not made: all are ::fa.
#pragma once
#include <cstdint>
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
  double start_delay_s = 0;           // end-to-start gap (see above)
  std::vector<int> spawns;            // child streams started when this turn completes
  std::vector<int> joins;             // child streams that must finish before this turn starts
  std::vector<TurnRef> barriers;      // turns of other streams that must complete first
  std::int64_t lcp_blocks = 0;        // blocks shared with the previous turn of the stream
  std::int64_t assistant_blocks = 0;  // the previous answer's blocks among the new ones
  std::int64_t theoretical_hit_blocks = 0;
};

struct Stream {
  std::string conversation_id;
  int parent = -1;
  TurnRef spawned_by{-1, -1};
  int depth = 0;
  bool background = false;
  std::vector<Turn> turns;
};

struct SessionTree {
  const WekaTrace* trace = nullptr;
  std::vector<Stream> streams;  // streams[0] is the root
  double t_begin = 0, t_end = 0;  // recorded span of the whole tree (starts to completions)
  std::int64_t dropped_subagents = 0;
  std::int64_t flattened_agents = 0, seams = 0;
  std::int64_t turn_count() const;
};

SessionTree build_session_tree(const WekaTrace& trace, bool split_flattened_agents = true);

}  // namespace agentperf::trace
