#include "common/command_line.h"

#include <cstdio>

namespace agentperf {

std::optional<std::string> command_flag_value(const std::string& command, const std::string& flag) {
  for (std::size_t at = command.find(flag); at != std::string::npos; at = command.find(flag, at + 1)) {
    std::size_t v = at + flag.size();
    if (v < command.size() && command[v] != ' ' && command[v] != '=') continue;  // a longer flag's prefix
    while (v < command.size() && (command[v] == ' ' || command[v] == '=')) ++v;
    return command.substr(v, command.find(' ', v) - v);
  }
  return std::nullopt;
}

int command_flag_positive_int(const std::string& command, const std::string& flag) {
  int n = 0;
  if (const auto v = command_flag_value(command, flag))
    if (std::sscanf(v->c_str(), "%d", &n) == 1 && n > 0) return n;
  return 0;
}

}  // namespace agentperf
