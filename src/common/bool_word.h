// The words Python tools read as booleans from the environment: 1, true,
// yes, on and 0, false, no, off, in any case (pydantic-settings' bool and
// InferenceX's env_bool both accept these). Each caller decides what any
// other word means.
#pragma once
#include <cctype>
#include <optional>
#include <string>
#include <string_view>

namespace agentperf {

inline std::optional<bool> parse_bool_word(std::string_view text) {
  std::string s(text);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  return std::nullopt;
}

}  // namespace agentperf
