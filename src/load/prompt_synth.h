// Synthetic prompts of a requested length.
//
// Token-id prompts (completions endpoint) are exact: the prompt *is* the
// token sequence, so ISL is known without a tokenizer. Text prompts are
// common English words, about one token each, and their length is reported
// as unverified until the server's usage confirms it (the tokenizer issue
// makes them exact).
//
// Shared prefixes: with G prefix groups of P tokens, every request starts
// with the P tokens of one group, chosen round-robin by request index. The
// group prefixes are serialized once and shared by every request that uses
// them; only the unique suffix is built per request.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/rng.h"
#include "load/profile_config.h"
#include "tokenizer/exact_text.h"

namespace agentperf {

struct SynthPrompt {
  // Serialized prompt pieces in order: JSON array items ("1,2,3") for token
  // ids, JSON-string-safe text for text prompts. Pieces join with `joiner`.
  std::shared_ptr<const std::string> prefix;  // may be null
  std::shared_ptr<const std::string> suffix;
  int isl = 0;
  int osl = 0;
  int prefix_group = -1;
  bool exact = false;
};

class PromptSynth {
 public:
  // With `exact`, text prompts are built from single-token words and their
  // length is exact (pieces then join with no separator).
  explicit PromptSynth(const ProfileConfig& cfg, std::shared_ptr<const tokenizer::ExactTextBuilder> exact = nullptr);
  // Deterministic in (seed, request_index): independent of worker timing.
  SynthPrompt make(std::uint64_t request_index) const;
  bool token_ids() const noexcept { return token_ids_; }
  const char* joiner() const noexcept { return token_ids_ ? "," : exact_ ? "" : " "; }

 private:
  std::string tokens_text(Rng& rng, int count) const;
  ProfileConfig cfg_;  // a copy: callers may reuse or change theirs
  bool token_ids_;
  std::shared_ptr<const tokenizer::ExactTextBuilder> exact_;
  std::vector<std::shared_ptr<const std::string>> prefixes_;
};

}  // namespace agentperf
