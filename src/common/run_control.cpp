#include "common/run_control.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <ctime>

namespace agentperf {
namespace {

std::atomic<int> g_stop_signal{0};
std::atomic<int> g_signal_count{0};
std::atomic<bool> g_installed{false};

std::atomic<std::int64_t> g_last_counted_ns{0};

// Signals closer together than this are one request to stop: `timeout`
// relays a group's SIGINT to its child and then to the group again, so one
// Ctrl-C on `timeout 60 agentperf ...` arrives three times within a
// millisecond. A person pressing Ctrl-C again is far slower than this.
constexpr std::int64_t kSameRequestNs = 250'000'000;

extern "C" void agentperf_run_control_on_signal(int sig) {
  int expected = 0;
  g_stop_signal.compare_exchange_strong(expected, sig);
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  const std::int64_t now = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  const std::int64_t last = g_last_counted_ns.load();
  if (g_signal_count.load() > 0 && now - last < kSameRequestNs) return;
  g_last_counted_ns.store(now);
  const int n = g_signal_count.fetch_add(1) + 1;
  if (n == 2) {
    // A second request to stop (another Ctrl-C, at least kSameRequestNs
    // after the first): cancel what is in flight now; the runner still
    // writes its records and the partial aggregate.
    static const char msg[] = "\nagentperf: second signal: cancelling the requests in flight; writing partial results "
                              "(a third signal exits at once)\n";
    [[maybe_unused]] auto w = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  } else if (n >= 3) {
    // The user insists: records already streamed to disk stay there.
    static const char msg[] = "\nagentperf: third signal, exiting without writing the aggregate\n";
    [[maybe_unused]] auto w = ::write(STDERR_FILENO, msg, sizeof msg - 1);
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

bool cancel_requested() noexcept { return g_signal_count.load(std::memory_order_relaxed) >= 2; }

void request_stop(int signal_number) noexcept {
  int expected = 0;
  g_stop_signal.compare_exchange_strong(expected, signal_number);
}

void clear_stop_request() noexcept {
  g_stop_signal.store(0);
  g_signal_count.store(0);
  g_last_counted_ns.store(0);
}

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
