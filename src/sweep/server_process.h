// A benchmarked server as a child process: started from the recipe's command
// (through /bin/sh, in its own process group so its children go with it),
// output captured to a log file, readiness awaited, stopped with SIGTERM and
// then SIGKILL after a grace period.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace agentperf::sweep {

class ServerProcess {
 public:
  // Throws UserError when the process cannot be started or the log not opened.
  ServerProcess(const std::string& command, const std::map<std::string, std::string>& env, const std::string& log_path);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The exit description once the process has ended ("exited with status 1", "killed by signal 9"), else nullopt.
  std::optional<std::string> ended();
  // SIGTERM to the group; SIGKILL after `grace`. Returns how it ended.
  std::string stop(std::chrono::milliseconds grace);
  std::string log_tail(std::size_t lines) const;
  const std::string& log_path() const { return log_path_; }

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  std::optional<std::string> ended_;
};

// Polls GET <base>/health and <base>/v1/models every 0.5 s until both answer
// 200, and returns the /v1/models body. Throws UserError when `timeout`
// passes or the process exits first, with the reason and the last lines of
// the server's log.
std::string wait_until_ready(ServerProcess& server, const std::string& base_url, std::chrono::milliseconds timeout,
                      const std::function<void(const std::string&)>& progress = {});

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_local_port();

}  // namespace agentperf::sweep
