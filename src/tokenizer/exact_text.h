// Text of an exact token length for a byte-level BPE tokenizer.
//
// Words that are one vocabulary token with a leading space ("Ġword", 3-8
// lowercase ASCII letters) stay one token each in any concatenation: the
// pre-tokenizer makes every " word" its own piece and BPE never merges
// across pieces. So N such words are exactly N tokens, and blocks of them
// can be joined back to back (no separator) without merging with their
// neighbours. Every word is checked against the tokenizer when the list is
// built.
#pragma once
#include <string>
#include <vector>

#include "common/rng.h"
#include "tokenizer/bpe_tokenizer.h"

namespace agentperf::tokenizer {

class ExactTextBuilder {
 public:
  // Throws UserError if the tokenizer has too few such words (< 1000).
  explicit ExactTextBuilder(const BpeTokenizer& tok);
  // n tokens of text, each " word"; starts with a space, has no trailing one.
  std::string block(Rng& rng, int n) const;
  const std::vector<std::string>& words() const { return words_; }

 private:
  std::vector<std::string> words_;  // with their leading space
};

}  // namespace agentperf::tokenizer
