// `agentperf traces synth`: Weka-format traces with controllable statistics,
// seeded and deterministic, so tests and demos never need the real corpus.
// Each trace is a coding-agent session. Hash ids are local to a trace, so
// each starts with its own system+tool blocks; turns grow the context by the
// previous answer plus new user/tool tokens (hash_ids extend the previous
// turn's), compaction restarts the context past --max-context, and after a
// turn subagents may fan out (joined by the next turn, or in the
// background after the last one).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trace/weka_trace.h"

namespace agentperf::trace {

struct SynthOptions {
  int traces = 8;
  std::uint64_t seed = 1;
  double mean_turns = 40;          // top-level calls per trace (geometric-ish)
  std::int64_t system_tokens = 16000;
  std::int64_t tool_tokens = 4000;
  double mean_turn_input = 2500;   // new user/tool tokens per turn (lognormal mean)
  double mean_output = 350;        // output tokens per call (lognormal mean)
  std::int64_t max_context = 256000;
  double subagent_probability = 0.15;  // after a top-level turn
  int max_fanout = 3;
  double mean_subagent_turns = 6;
  double mean_think_time = 4.0;    // seconds between a call's end and the next call
  double ttft_s = 0.6;             // recorded api_time = ttft + out x per-token
  double per_token_s = 0.015;
  int block_size = 64;
};

std::vector<WekaTrace> synthesize_traces(const SynthOptions& o);

}  // namespace agentperf::trace
