#include "tokenizer/exact_text.h"

#include "common/error.h"

namespace agentperf::tokenizer {

ExactTextBuilder::ExactTextBuilder(const BpeTokenizer& tok) {
  const std::string_view space_mark = "\xC4\xA0";  // "Ġ", the byte-level form of ' '
  for (std::size_t id = 0; id < tok.vocab_size(); ++id) {
    const std::string_view s = tok.token_string(static_cast<TokenId>(id));
    if (s.size() < space_mark.size() + 3 || s.size() > space_mark.size() + 8 || s.substr(0, 2) != space_mark) continue;
    bool letters = true;
    for (char c : s.substr(2)) letters = letters && c >= 'a' && c <= 'z';
    if (!letters) continue;
    std::string word(1, ' ');
    word += s.substr(2);
    if (tok.encode(word) == std::vector<TokenId>{static_cast<TokenId>(id)}) words_.push_back(std::move(word));
  }
  if (words_.size() < 1000)
    throw UserError("the tokenizer has only " + std::to_string(words_.size()) +
                    " single-token ' word' entries; exact-length text prompts need at least 1000");
}

std::string ExactTextBuilder::block(Rng& rng, int n) const {
  std::string out;
  out.reserve(static_cast<std::size_t>(n) * 7);
  for (int i = 0; i < n; ++i) out += words_[rng.below(words_.size())];
  return out;
}

}  // namespace agentperf::tokenizer
