// Prompt reconstruction for a session tree, after AIPerf's Weka prompt
// synthesis (github.com/ai-dynamo/aiperf, src/aiperf/dataset/loader/weka_synth_buf.py
// @ d3b9cf22086b):
// every hash block id of a trace stands for the same block of tokens
// wherever it appears in that trace (one namespace per trace, subagents
// included), so turn k's prompt shares with turn k-1 exactly the blocks
// their hash_ids share, and the server's prefix cache sees the recorded
// reuse. A prompt is exactly `in` tokens: its blocks in order, the last one
// cut, or followed by a deterministic tail when the blocks are short.
//
// Blocks are serialized once (token-id JSON items, or exact-length text
// with a tokenizer) and shared by every turn that uses them; a turn's
// prompt is a list of those shared pieces plus its own short tail, so a
// 256k-token context is never copied per turn.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/exact_text.h"
#include "trace/session_tree.h"

namespace agentperf::trace {

struct PromptPieces {
  std::vector<std::shared_ptr<const std::string>> pieces;  // concatenated in order
  std::int64_t tokens = 0;
  bool token_ids = true;  // pieces are comma-separated token ids (a JSON array's items)
};

// Chat segmentation of a turn's prompt (AIPerf's ConversationReconstructor):
// turn 0 is a system message of the stream's own declared prefix
// (Stream::system_blocks: the trace's for the root, a subagent entry's for
// its stream; none when none is declared) and a user message with the rest; turn k keeps turn k-1's messages
// cut at their shared blocks (LCP), then the previous answer as recorded
// (`assistant_blocks`, block-aligned) as an assistant message and the
// remaining new blocks as a user message. The turn's partial tail ends the
// last user message. Ranges index PromptPieces::pieces.
struct MessageSpan {
  const char* role;
  std::size_t first_piece = 0, pieces = 0;
};
std::vector<MessageSpan> segment_messages(const Stream& stream, int turn, const WekaTrace& trace,
                                          std::size_t piece_count);

// Token ids of token-id prompts: block contents are drawn from
// [min, min + span); the cache-bust marker uses ids marker_base + byte
// (0..255). The defaults fit any vocabulary of 31,256 ids or more;
// `agentperf replay --token-id-range MIN:MAX` fits them to a smaller one.
struct TokenIdRange {
  int min = 1000;
  int span = 29000;
  int marker_base = 31000;
  // MIN:MAX (MAX exclusive): blocks in [MIN, MAX - 256), markers in the top
  // 256 ids. Throws std::invalid_argument when MAX - MIN < 512.
  static TokenIdRange from_bounds(int min, int max);
  int max_exclusive() const { return std::max(min + span, marker_base + 256); }
};

class PromptBuilder {
 public:
  // text == nullptr: token-id prompts (completions endpoint).
  PromptBuilder(const WekaTrace& trace, std::uint64_t seed,
                std::shared_ptr<const tokenizer::ExactTextBuilder> text = nullptr, TokenIdRange ids = {});
  PromptPieces build(const TraceCall& call, TurnRef where);
  // How many pieces build() makes of a call: its whole blocks, then one
  // piece for the partial tail if there is one.
  static std::size_t piece_count(const TraceCall& call, std::int64_t block_size);
  // Token ids of a block (token-id mode), for tests and the simulator.
  std::vector<std::int32_t> block_tokens(std::int64_t hash_id) const;
  // The prompt build() writes in token-id mode, as ids appended to `out`
  // (the virtual-time replay's engine input): the same ids, in the same
  // order, that the completions request carries.
  void append_token_ids(const TraceCall& call, TurnRef where, std::vector<std::int32_t>& out);
  std::size_t cached_blocks() const { return blocks_.size(); }

 private:
  std::shared_ptr<const std::string> block_piece(std::int64_t hash_id);
  std::string tail(TurnRef where, std::int64_t start, std::int64_t n) const;
  std::string block_prefix(std::int64_t hash_id, std::int64_t n) const;

  const WekaTrace& trace_;
  std::uint64_t trace_seed_;
  std::shared_ptr<const tokenizer::ExactTextBuilder> text_;
  TokenIdRange ids_;
  std::unordered_map<std::int64_t, std::shared_ptr<const std::string>> blocks_;
  std::unordered_map<std::int64_t, std::vector<std::int32_t>> block_ids_;  // append_token_ids' cache
};

}  // namespace agentperf::trace
