// Shared by the benchmarks: servers in child processes (so the client's CPU
// time is measured alone), the instant OpenAI backend, and the closed-loop
// load they all drive.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "load/profile_config.h"
#include "testserver/openai_scripts.h"
#include "testserver/scripted_server.h"

namespace agentperf::bench {

// `serve(ready)` starts a server in the child, calls ready(port), and
// returns when ready() returns (at stop()).
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

// A child process whose OpenAI server streams every response at once.
inline Child start_instant_backend() {
  Child child;
  child.start([](auto ready) {
    testserver::ScriptedServer server(testserver::paced_openai_handler(std::chrono::nanoseconds(0), std::chrono::nanoseconds(0)));
    server.start();
    ready(server.port());
    server.stop();
  });
  return child;
}

// Closed loop of `concurrency` 16-token completions streaming `osl` events, for `seconds`.
inline ProfileConfig closed_loop(const std::string& url, int concurrency, int osl, double seconds) {
  ProfileConfig c;
  c.url = url;
  c.endpoint_type = EndpointType::completions;
  c.concurrency = concurrency;
  c.duration_s = seconds;
  c.grace_period_s = 30;
  c.isl = {16, 0, 1};
  c.osl = {static_cast<double>(osl), 0, 1};
  c.workers = 1;
  c.quiet = true;
  return c;
}

}  // namespace agentperf::bench
