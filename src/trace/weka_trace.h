// The Weka agentic-coding trace format (the AgentX corpus on Hugging Face,
// semianalysisai/cc-traces-weka-062126; github.com/ai-dynamo/aiperf,
// docs/tutorials/weka-trace.md @ 6f7797387d58 and
// src/aiperf/dataset/loader/weka_trace.py @ af3e5382a6c1): one JSON object
// per trace with `requests`, each a
// model call (type "n"/"s": t, in, out, hash_ids, api_time, think_time) or
// a subagent group (type "subagent": t, agent_id, subagent_type, requests).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentperf::trace {

// Bounds on a trace's sizes (docs/input-limits-files.md). A trace is input
// from anywhere, and each of these numbers sizes an allocation downstream
// (prompt tokens, block tables), so a typo or a hostile file must be
// refused by name here, not end in std::bad_alloc minutes later. Real
// agentic traces are far inside them (contexts of at most ~1M tokens).
inline constexpr std::int64_t kMaxCallTokens = 10'000'000;   // in, out of one call
inline constexpr std::int64_t kMaxExtraTokens = 10'000'000;  // tool_tokens, system_tokens
inline constexpr int kMaxBlockSize = 65536;                  // block_size: 1..65536
// hash_ids of one call: at most in / block_size + 1 (one id per block,
// the last one partial).
inline std::int64_t max_hash_ids(std::int64_t in, int block_size) { return in / block_size + 1; }

struct TraceCall {
  double t = 0;          // seconds since the trace start (absolute root time, also inside subagents)
  std::string model;
  std::int64_t in = 0;   // prompt tokens
  std::int64_t out = 0;  // output tokens
  std::vector<std::int64_t> hash_ids;  // 64-token prefix blocks, per-trace namespace
  double api_time = 0;   // seconds the call took
  std::optional<double> think_time;
  bool streaming = false;
};

struct SubagentGroup {
  double t = 0;
  std::string agent_id;
  std::string subagent_type;
  // The subagent's recorded wall time in ms (null for async launches): its
  // recorded end t + duration_ms / 1000 picks the root call that joins it.
  std::optional<double> duration_ms;
  // The subagent's own declared tool and system prefix (AIPerf's
  // WekaSubagentEntry.tool_tokens / system_tokens, default 0): its stream's
  // system message, not the trace's.
  std::int64_t tool_tokens = 0;
  std::int64_t system_tokens = 0;
  std::vector<TraceCall> calls;
};

struct TraceEntry {
  bool is_subagent = false;
  TraceCall call;          // when !is_subagent
  SubagentGroup subagent;  // when is_subagent
};

struct WekaTrace {
  std::string id;
  int block_size = 64;
  std::int64_t tool_tokens = 0;
  std::int64_t system_tokens = 0;
  std::vector<TraceEntry> entries;  // in recorded order
  std::int64_t request_count() const;
  std::int64_t peak_context() const;  // max in + out over all calls
};

// Parses one trace object; `where` names it in errors ("file.jsonl:12").
// Throws UserError naming where, the trace id, the request index and field;
// sizes outside the limits above are errors too.
WekaTrace parse_weka_trace(std::string_view json, const std::string& where);

// Serializes a trace back to one JSON line (the synthetic generator's output).
std::string to_json_line(const WekaTrace& t);

// The rule that makes the 256k corpus (semianalysisai/cc-traces-weka-062126-256k)
// from the unfiltered one: every call, main-agent or subagent, with
// in + out > 256,000 goes; a subagent group goes only when all its calls
// went (it then starts at its first kept call). Returns the calls dropped.
// InferenceX utils/agentic/datasets/build_weka_hf_dataset.py @ 303669b0e16a.
std::int64_t apply_256k_rule(WekaTrace& t);

}  // namespace agentperf::trace
