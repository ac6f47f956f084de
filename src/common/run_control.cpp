#include "common/run_control.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace agentperf {
namespace {

std::atomic<int> g_stop_signal{0};
std::atomic<bool> g_installed{false};

extern "C" void agentperf_run_control_on_signal(int sig) {
  int expected = 0;
  if (!g_stop_signal.compare_exchange_strong(expected, sig)) {
    // A second signal: the user wants out now. Records already streamed to
    // disk stay there; nothing else can be done safely inside a handler.
    static const char msg[] = "\nagentperf: second signal, exiting without waiting for in-flight requests\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(128 + sig);
  }
}

}  // namespace

void install_stop_signal_handlers() {
  if (g_installed.exchange(true)) return;
  struct sigaction sa{};
  sa.sa_handler = agentperf_run_control_on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() noexcept { return g_stop_signal.load(std::memory_order_relaxed); }

void request_stop(int signal_number) noexcept {
  int expected = 0;
  g_stop_signal.compare_exchange_strong(expected, signal_number);
}

void clear_stop_request() noexcept { g_stop_signal.store(0); }

std::string stop_reason() {
  switch (stop_signal()) {
    case 0: return {};
    case SIGINT: return "interrupted by SIGINT";
    case SIGTERM: return "terminated by SIGTERM";
    default: return "stop requested";
  }
}

int stop_exit_code() noexcept {
  switch (stop_signal()) {
    case 0: return 0;
    case SIGINT: return exit_code::sigint;
    case SIGTERM: return exit_code::sigterm;
    default: return exit_code::invalid;
  }
}

}  // namespace agentperf
