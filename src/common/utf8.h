// Text that came from outside (a server's error page, a reason phrase) has to
// become valid UTF-8 before it goes into a JSON record: nlohmann's dump()
// throws on invalid bytes, and one bad byte must never cost a run its results.
#pragma once
#include <string>
#include <string_view>

namespace agentperf {

// A copy of `in` with every ill-formed UTF-8 sequence (stray continuation
// bytes, truncated sequences, overlong forms, surrogates, code points past
// U+10FFFF) replaced by U+FFFD, one replacement per maximal bad subpart as
// the Unicode standard (ch. 3, "U+FFFD Substitution of Maximal Subparts")
// recommends. Valid input comes back unchanged.
std::string sanitize_utf8(std::string_view in);

bool is_valid_utf8(std::string_view in) noexcept;

}  // namespace agentperf
