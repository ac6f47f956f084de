// A benchmarked server as a child process: started from the recipe's command
// (through /bin/sh, in its own process group so its children go with it),
// output captured to a log file, readiness awaited, stopped with SIGTERM and
// then SIGKILL after a grace period.
//
// The process tree:
//
//   sweep ── supervisor (group leader, pid(), pgid = pid()) ── /bin/sh -c COMMAND ── server's children
//
// Why a supervisor: the server must die with the sweep even when the sweep
// is SIGKILLed (on a GPU node a leftover server holds the GPUs), and then no
// code of the sweep runs. PR_SET_PDEATHSIG is the kernel's way, but it
// signals one process, and on the exec'd shell alone it would not do: the
// shell (or the server it execs) may ignore SIGTERM, and the server's own
// workers (tokenizer, scheduler, one process per GPU rank) get nothing. So
// the sweep's direct child is a supervisor, a fork of the sweep that never
// execs and only waits (no GPU, no memory to speak of). It has
// PR_SET_PDEATHSIG(SIGTERM), checks after setting it that the sweep is
// still its parent (the man page's advice; it checks again every 100 ms),
// and when the sweep is gone it sends SIGTERM to the whole process group,
// then SIGKILL after the grace period (`--stop-grace`). While the sweep
// lives it does nothing but end as the server ends (same exit status or
// signal), so the sweep sees the supervisor as the server. The server
// itself gets PR_SET_PDEATHSIG(SIGKILL) on the supervisor as a backstop.
// A process that leaves the group (setsid) is beyond reach, as before.
//
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
  // `orphan_grace`: SIGTERM -> SIGKILL of the group when the sweep dies first.
  // The server's environment is the sweep's plus `env`, with
  // PYTHONUNBUFFERED=1 unless either sets it (Python servers then write each
  // log line at once, so a crash in native code does not take the last lines
  // with it).
  ServerProcess(const std::string& command, const std::map<std::string, std::string>& env, const std::string& log_path,
                std::chrono::milliseconds orphan_grace = std::chrono::seconds(10));
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // The supervisor's pid, which is also the process group of the server.
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
// passes, the process exits first (with the reason and the last lines of the
// server's log), or a stop is requested (common/run_control.h).
std::string wait_until_ready(ServerProcess& server, const std::string& base_url, std::chrono::milliseconds timeout,
                      const std::function<void(const std::string&)>& progress = {});

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_local_port();

}  // namespace agentperf::sweep
