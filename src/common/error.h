// A user-facing failure: bad input, unreachable server, invalid option.
// main() prints the message and exits with the carried code.
#pragma once
#include <stdexcept>
#include <string>

namespace agentperf {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& msg, int exit_code = 2)
      : std::runtime_error(msg), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace agentperf
