#include "sim/text_tokens.h"

#include <charconv>
#include <stdexcept>

namespace agentperf::sim {

std::vector<Token> pseudo_tokenize(std::string_view text) {
  std::vector<Token> out;
  out.reserve(text.size() / 5 + 1);
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r')) ++i;
    std::size_t j = i;
    std::uint64_t h = 1469598103934665603ull;
    while (j < text.size() && !(text[j] == ' ' || text[j] == '\n' || text[j] == '\t' || text[j] == '\r')) {
      h = (h ^ static_cast<unsigned char>(text[j])) * 1099511628211ull;
      ++j;
    }
    if (j > i) out.push_back(static_cast<Token>(1 + h % 200000));
    i = j;
  }
  return out;
}

void append_token_ids(std::string_view csv, std::vector<Token>& out) {
  const char* p = csv.data();
  const char* end = p + csv.size();
  while (p < end) {
    while (p < end && (*p == ',' || *p == ' ')) ++p;
    if (p == end) break;
    Token v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc{}) throw std::invalid_argument("token id list has a non-integer at offset " + std::to_string(p - csv.data()));
    out.push_back(v);
    p = next;
  }
}

}  // namespace agentperf::sim
