#include "common/utf8.h"

namespace agentperf {
namespace {

// Length of the valid sequence starting at s[i], or 0 if the bytes there do
// not start one; `bad` receives how many bytes form the maximal bad subpart.
std::size_t valid_sequence(std::string_view s, std::size_t i, std::size_t& bad) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  bad = 1;
  if (c < 0x80) return 1;
  std::size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;          // no overlongs
    if (c == 0xED) hi = 0x9F;          // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;          // no overlongs
    if (c == 0xF4) hi = 0x8F;          // nothing past U+10FFFF
  } else {
    return 0;
  }
  for (std::size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) return 0;
    const unsigned char x = b(i + k);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (x < l || x > h) return 0;
    bad = k + 1;
  }
  return len;
}

}  // namespace

bool is_valid_utf8(std::string_view in) noexcept {
  std::size_t i = 0, bad = 0;
  while (i < in.size()) {
    const std::size_t n = valid_sequence(in, i, bad);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string sanitize_utf8(std::string_view in) {
  if (is_valid_utf8(in)) return std::string(in);
  std::string out;
  out.reserve(in.size() + 8);
  std::size_t i = 0, bad = 0;
  while (i < in.size()) {
    const std::size_t n = valid_sequence(in, i, bad);
    if (n) {
      out.append(in.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += bad;
    }
  }
  return out;
}

}  // namespace agentperf
