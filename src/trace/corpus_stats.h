// What a trace corpus looks like, in the terms its published statistics use,
// so a synthetic preset can be set side by side with the corpus it stands
// for (docs/traces.md), and so `plan` can size a cliff from the traces.
//
// Definitions (those of the public analyses of the AgentX corpus; see
// docs/traces.md for the sources):
//  - requests: every model call, main agent and subagents;
//  - main-agent gap: end-to-start, t_k - (t_{k-1} + api_time_{k-1}) between
//    consecutive main-agent calls, floored at 0 (AIPerf's definition);
//  - waiting share: over all sessions, the time with no call in flight
//    divided by the sessions' spans (first start to last end);
//  - a session's time-averaged context: the main agent's context (in + out
//    of its latest call) averaged over the session's recorded span, from
//    its first call's start to its last call's end, no gap capped;
//  - time-averaged working set: see time_averaged_working_sets() below.
#pragma once
#include <cstdint>
#include <vector>

#include "metrics/stats.h"
#include "trace/weka_trace.h"

namespace agentperf::trace {

struct CorpusStats {
  std::int64_t traces = 0, requests = 0, main_calls = 0, subagent_groups = 0, subagent_calls = 0;
  std::int64_t traces_with_subagents = 0;
  Summary input_tokens, output_tokens;  // per request
  // The same, of main-agent calls and of subagent calls apart: the public
  // analyses of the AgentX corpus quote them apart, and the two differ
  // (main-agent calls carry the long contexts and the longer outputs).
  Summary main_input_tokens, main_output_tokens, subagent_input_tokens, subagent_output_tokens;
  Summary main_gap_s;                   // main-agent end-to-start gaps
  Summary main_calls_per_trace;
  Summary session_context;              // per trace: the time-averaged main-agent context
  double waiting_share = 0;
};

CorpusStats corpus_stats(const std::vector<WekaTrace>& traces);

// The same, one trace at a time (a corpus streamed from a file that is
// never held whole: `traces inspect`). Keeps per-request token counts and
// per-trace gaps for the percentiles, nothing of the traces themselves.
class CorpusStatsAccumulator {
 public:
  void add(const WekaTrace& t);
  CorpusStats result() const;

 private:
  CorpusStats s_;
  std::vector<double> main_in_, main_out_, sub_in_, sub_out_, gaps_, mains_, contexts_;
  double span_ = 0, busy_ = 0;
};

// The KV working set a lane holds while it replays a trace, averaged over
// the replayed timeline: at each instant, the context (in + out of its
// latest call) of every live stream (the main agent from its first call to
// the end of the trace, each subagent group from its first call to its last
// end), summed; idle stretches (nothing in flight in the trace) longer than
// `tree_idle_cap_s` count as that cap, as the replay shortens them.
// Shared prefixes between a subagent and its parent are counted twice (an
// upper bound). Returned per trace with each trace's replayed span, so a
// lane's expectation is the span-weighted mean: a lane spends time in a
// trace in proportion to its span.
struct TraceWorkingSet {
  double mean_tokens = 0;  // time-averaged
  double peak_tokens = 0;
  double span_s = 0;       // replayed (capped) span
};
std::vector<TraceWorkingSet> time_averaged_working_sets(const std::vector<WekaTrace>& traces,
                                                        double tree_idle_cap_s = 300);
TraceWorkingSet time_averaged_working_set(const WekaTrace& trace, double tree_idle_cap_s = 300);

// Span-weighted mean of mean_tokens: the working set of one lane.
double lane_working_set(const std::vector<TraceWorkingSet>& sets);

}  // namespace agentperf::trace
