// Flattened-agent detection: agents that a trace recorded as interleaved
// top-level calls (workflow agents, subagents without a header) are split
// back into chains by hash-id prefix evidence, after AIPerf's Weka loader
// (github.com/ai-dynamo/aiperf, src/aiperf/dataset/loader/weka_agent_chains.py
// @ c1cfd86bc269):
//  phase 1, in (t, index) order: a call extends the chain whose last call's
//    hash_ids are a complete prefix of its own and which has ended by its
//    start (the deepest such tail wins); otherwise it founds a new chain
//    forked from the chain whose tail shares the longest prefix with it
//    (ties: the most recently active tail; AIPerf: the deeper tail);
//  phase 2, per fork source in order: if the source is still its chain's
//    last call (its longer context never came back), the deepest fork that
//    starts after it ends is the same agent continuing after a context edit
//    (compaction): it is spliced back onto the chain. Other forks are
//    spawned agents.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "trace/weka_trace.h"

namespace agentperf::trace {

struct AgentChain {
  std::vector<std::size_t> calls;  // indices into the input, time-ordered
  std::optional<std::size_t> parent;      // chain it forked from (live index in `chains`)
  std::optional<std::size_t> fork_call;   // input index of the call it forked from
  std::int64_t depth = 0;                 // blocks shared at the fork
};

struct ChainResult {
  std::vector<AgentChain> chains;  // live chains; chains[0] owns the first call
  std::int64_t seams = 0;          // continuations spliced back
};

ChainResult detect_agent_chains(const std::vector<const TraceCall*>& calls);

}  // namespace agentperf::trace
