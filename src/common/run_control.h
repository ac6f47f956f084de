// How a measuring run ends, in one place: the exit-code contract every
// command follows, and the process-wide stop request raised by SIGINT and
// SIGTERM.
//
// Exit codes (docs/exit-codes.md, `agentperf --help`):
//   0    the run finished and passed its validity gate
//   1    the run finished (or was stopped by its own gate) but is not valid:
//        errors above the tolerance, every request failed, an aborted run,
//        a failed accuracy threshold
//   2    usage or input error: bad flag, file, recipe, trace, unreachable
//        server before anything was measured
//   3    results could not be written (disk full, permissions); the summary
//        is still printed on the console
//   70   internal error (a bug)
//   130  stopped by SIGINT, 143 stopped by SIGTERM: partial results were
//        written and are marked complete: false with the reason
//
// Stop requests: the first SIGINT or SIGTERM asks every running measurement
// to stop sending, give in-flight requests the grace period, and write its
// partial results. A second signal (`timeout` relays one to the group, and
// an impatient Ctrl-C is common) cancels what is in flight at once, but the
// run still writes every record (the cancelled ones as cancelled) and its
// aggregate, marked complete: false. Signals within 250 ms of the last
// counted one are the same request (`timeout` relays one Ctrl-C to its
// child and again to the group: three deliveries within a millisecond).
// Only a third signal exits at once,
// without the aggregate (records already streamed to profile_export.jsonl
// stay on disk). The handler only stores atomics (and write(2)s a line), so
// it is async-signal-safe; runners poll stop_requested() and
// cancel_requested().
#pragma once
#include <string>

namespace agentperf {

namespace exit_code {
inline constexpr int valid = 0;
inline constexpr int invalid = 1;
inline constexpr int usage = 2;
inline constexpr int write_failed = 3;
inline constexpr int internal = 70;
inline constexpr int sigint = 130;
inline constexpr int sigterm = 143;
}  // namespace exit_code

// Installs the SIGINT/SIGTERM handlers (idempotent). Commands that measure
// call it before their run starts.
void install_stop_signal_handlers();

// 0 when no stop was requested, else the signal number (SIGINT or SIGTERM)
// or kStopRequestedInProcess for a programmatic request.
int stop_signal() noexcept;
inline bool stop_requested() noexcept { return stop_signal() != 0; }
// A second signal came: cancel in-flight requests now instead of waiting
// for the grace period.
bool cancel_requested() noexcept;
inline constexpr int kStopRequestedInProcess = -1;

// Raises a stop as a signal would (tests, a sweep's own stop).
void request_stop(int signal_number = kStopRequestedInProcess) noexcept;
// Clears a stop request (tests that run several measurements in one process).
void clear_stop_request() noexcept;

// "interrupted by SIGINT" / "terminated by SIGTERM" / "stop requested".
std::string stop_reason();
// 130 for SIGINT, 143 for SIGTERM, 1 for an in-process request, 0 if none.
int stop_exit_code() noexcept;

}  // namespace agentperf
