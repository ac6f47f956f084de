// Byte-level BPE tokenizer loaded from a Hugging Face tokenizer.json (the
// GPT-2 / Qwen family): added tokens split out first, NFC normalization
// (utf8proc), the Split pre-tokenizer regex (PCRE2 with JIT and Unicode
// properties), GPT-2's byte-to-unicode mapping, merges applied by rank, and
// the ByteLevel decoder. Components outside that family are rejected by
// name when the file is loaded.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentperf::tokenizer {

using TokenId = std::int32_t;

class BpeTokenizer {
 public:
  // Throws UserError naming the file and the unsupported or missing part.
  static BpeTokenizer from_file(const std::string& path);
  static BpeTokenizer from_json(std::string_view json, const std::string& source);
  ~BpeTokenizer();
  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;

  // add_special_tokens=false semantics: added tokens in the text are
  // recognised, nothing is prepended or appended.
  std::vector<TokenId> encode(std::string_view text) const;
  std::size_t count(std::string_view text) const;
  std::string decode(const std::vector<TokenId>& ids) const;

  std::size_t vocab_size() const;
  // The token's vocabulary string (byte-level form, e.g. "Ġthe").
  std::string_view token_string(TokenId id) const;
  std::optional<TokenId> token_id(std::string_view vocab_string) const;

 private:
  BpeTokenizer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace agentperf::tokenizer
