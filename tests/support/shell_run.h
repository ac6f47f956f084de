// Runs a shell command line and collects its standard output and exit
// status: the one way tests run the agentperf binary (or python3) as a user
// would. The caller says where stderr goes (`2>&1`, `2>&1 >/dev/null`, a
// file), so a test can read either stream.
#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace agentperf::test_support {

struct ShellRun {
  int code = -1;  // exit status; -1 when the shell could not start or was killed by a signal
  std::string output;
};

inline ShellRun run_shell(const std::string& command_line) {
  ShellRun r;
  FILE* p = ::popen(command_line.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.output.append(buf.data(), n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace agentperf::test_support
