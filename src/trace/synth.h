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

#include "metrics/progress.h"
#include "trace/weka_trace.h"

namespace agentperf::trace {

struct SynthOptions {
  int traces = 8;
  std::uint64_t seed = 1;
  double mean_turns = 40;          // top-level calls per trace (geometric-ish)
  // > 0: top-level calls per trace are lognormal (mean mean_turns + 1, this
  // sigma) instead of 1 + exponential: a corpus whose median session is
  // much shorter than its mean (the 1M corpus: median 65, mean 144.5).
  double turns_sigma = 0;
  std::int64_t system_tokens = 16000;
  std::int64_t tool_tokens = 4000;
  double mean_turn_input = 2500;   // new user/tool tokens per turn (lognormal mean)
  double mean_output = 350;        // output tokens per call (lognormal mean)
  double output_sigma = 0.9;       // and its sigma
  // Subagent calls' outputs when they differ from the main agent's (0: the
  // same mean and sigma).
  double mean_subagent_output = 0;
  double subagent_output_sigma = 0;
  std::int64_t max_context = 256000;
  double subagent_probability = 0.15;  // after a top-level turn
  int max_fanout = 3;
  double mean_subagent_turns = 6;
  double mean_think_time = 4.0;    // seconds between a call's end and the next call (exponential)
  // Main-agent end-to-start gaps: lognormal with this median and sigma when
  // gap_median_s > 0 (instead of the exponential mean_think_time), capped.
  double gap_median_s = 0;
  double gap_sigma = 0;
  double gap_cap_s = 6 * 3600;
  // A share of gaps drawn from a second, long lognormal (the user away):
  // the heavy tail of real sessions that one lognormal cannot fit together
  // with their median and p90.
  double gap_long_share = 0;
  double gap_long_median_s = 0;
  double gap_long_sigma = 0;
  // Share of traces that use subagents at all (the others never fan out).
  double subagent_session_share = 1.0;
  // Subagents: the task they start with, and new tokens per turn (0 = half
  // of mean_turn_input).
  double subagent_task_tokens = 0;
  double mean_subagent_turn_input = 0;
  // The main agent's first prompt carries this much beyond the system
  // prefix (lognormal mean, sigma 1, at most 200,000; 0: none): a session that opens on a
  // resumed conversation or large files, so that short sessions are not all
  // short contexts.
  double mean_initial_context = 0;
  // Prefix breaks: at this share of main-agent turns the prompt departs
  // from the previous one some way back from its end (an edit inside the
  // context: old tool results cleared, a reminder rewritten), so every block
  // after that point is new although the context grows as usual. How far
  // back: lognormal with this mean (sigma 1), at most to the system prefix.
  // They are what makes a corpus's per-turn uncached tokens heavy-tailed.
  double prefix_break_share = 0;
  double mean_prefix_break_tokens = 0;
  // Each made trace then goes through the 256k corpus rule (apply_256k_rule:
  // calls with in + out > 256,000 dropped), as the 256k corpus is made from
  // the unfiltered one.
  bool apply_256k_rule = false;
  double ttft_s = 0.6;             // recorded api_time = ttft + out x per-token
  double per_token_s = 0.015;
  int block_size = 64;
  // Prompts of whole blocks (in == len(hash_ids) x block_size), as the
  // AgentX corpus records them; otherwise a prompt may end in a partial,
  // unhashed block.
  bool whole_blocks = false;
};

// Trace `index` of the set (each is drawn from its own seed, so traces can
// be made one at a time: synthesize_traces(o)[i] == synthesize_trace(o, i)).
WekaTrace synthesize_trace(const SynthOptions& o, int index);
// All o.traces of them; `progress` (optional) is started with their number
// and counts each one made (the caller finishes it).
std::vector<WekaTrace> synthesize_traces(const SynthOptions& o, CountProgress* progress = nullptr);

// Presets by name: "cc-weka-1m" reproduces the published statistics of the
// unfiltered trace set InferenceX's AgentX benchmark replays for its 1M-
// context models (Hugging Face dataset semianalysisai/cc-traces-weka-062126),
// "cc-weka-256k" those of the 256k set the others replay
// (semianalysisai/cc-traces-weka-062126-256k); docs/traces.md sets target and
// achieved statistics side by side with their sources. Throws
// std::invalid_argument for an unknown name.
SynthOptions synth_preset(const std::string& name);
std::vector<std::string> synth_preset_names();

}  // namespace agentperf::trace
