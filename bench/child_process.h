// A server in a child process for the benchmarks, so the client's CPU time
// is measured alone: `serve(ready)` starts a server in the child, calls
// ready(port), and returns when ready() returns (at stop()).
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace agentperf::bench {

struct Child {
  pid_t pid = -1;
  int alive_fd = -1;
  std::uint16_t port = 0;
  template <class Start>
  void start(Start serve) {
    int port_pipe[2], alive_pipe[2];
    if (pipe(port_pipe) || pipe(alive_pipe)) std::perror("pipe"), std::exit(1);
    pid = fork();
    if (pid == 0) {
      close(port_pipe[0]);
      close(alive_pipe[1]);
      serve([&](std::uint16_t p) {
        if (write(port_pipe[1], &p, sizeof p) != sizeof p) _exit(1);
        char c;
        while (read(alive_pipe[0], &c, 1) > 0) {
        }
      });
      _exit(0);
    }
    close(port_pipe[1]);
    close(alive_pipe[0]);
    alive_fd = alive_pipe[1];
    if (read(port_pipe[0], &port, sizeof port) != sizeof port) std::perror("read port"), std::exit(1);
    close(port_pipe[0]);
  }
  void stop() {
    close(alive_fd);
    int status;
    waitpid(pid, &status, 0);
  }
};

}  // namespace agentperf::bench
