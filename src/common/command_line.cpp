#include "common/command_line.h"

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

}  // namespace agentperf
