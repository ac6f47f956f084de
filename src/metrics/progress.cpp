#include "metrics/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>

#include "common/clock.h"
#include "common/run_result.h"

namespace agentperf {

ProgressPrinter::ProgressPrinter(bool quiet, double interval_s)
    : quiet_(quiet), tty_(::isatty(STDERR_FILENO) == 1),
      interval_ns_(static_cast<std::int64_t>(interval_s * 1e9)) {
  if (!tty_) interval_ns_ = std::max<std::int64_t>(interval_ns_, 10'000'000'000);
}

void ProgressPrinter::maybe_print(const LiveCounters& c, Phase phase, std::optional<std::int64_t> total,
                                  std::int64_t start_ns, std::int64_t deadline_ns) {
  if (quiet_) return;
  const std::int64_t now = monotonic_ns();
  if (last_print_ns_ == 0) {
    last_print_ns_ = now;
    last_sample_ns_ = now;
    return;
  }
  if (now - last_print_ns_ < interval_ns_) return;
  print(c, phase, total, start_ns, deadline_ns, false);
  last_print_ns_ = now;
}

void ProgressPrinter::finish(const LiveCounters& c, Phase phase) {
  if (quiet_) return;
  print(c, phase, std::nullopt, c.phase_start_ns.load(), std::numeric_limits<std::int64_t>::max(), true);
  last_print_ns_ = 0;
  last_done_ = 0;
  last_tokens_ = 0;
}

void ProgressPrinter::print(const LiveCounters& c, Phase phase, std::optional<std::int64_t> total,
                            std::int64_t start_ns, std::int64_t deadline_ns, bool final_line) {
  const std::int64_t now = monotonic_ns();
  const std::int64_t done = c.done.load(), tokens = c.output_tokens.load();
  const double window_s = std::max(1e-9, static_cast<double>(now - last_sample_ns_) / 1e9);
  const double elapsed_s = std::max(1e-9, static_cast<double>(now - start_ns) / 1e9);
  const double rps = final_line ? done / elapsed_s : (done - last_done_) / window_s;
  const double tps = final_line ? tokens / elapsed_s : (tokens - last_tokens_) / window_s;
  last_done_ = done;
  last_tokens_ = tokens;
  last_sample_ns_ = now;

  char eta[48] = "";
  if (!final_line) {
    double remaining = -1;
    if (deadline_ns != std::numeric_limits<std::int64_t>::max())
      remaining = std::max(0.0, static_cast<double>(deadline_ns - now) / 1e9);
    if (total && done > 0) {
      const double by_count = static_cast<double>(*total - done) * elapsed_s / static_cast<double>(done);
      remaining = remaining < 0 ? by_count : std::min(remaining, by_count);
    }
    if (remaining >= 0) std::snprintf(eta, sizeof eta, " | ETA %.0fs", remaining);
  }
  char total_text[32] = "";
  if (total) std::snprintf(total_text, sizeof total_text, "/%lld", static_cast<long long>(*total));
  std::fprintf(stderr, "%s[%s] %s%lld%s done, %lld in flight, %lld errors | %.1f req/s, %.0f out tok/s%s%s",
               tty_ ? "\r\033[K" : "", phase_name(phase), final_line ? "finished: " : "",
               static_cast<long long>(done), total_text, static_cast<long long>(c.in_flight.load()),
               static_cast<long long>(c.errors.load()), rps, tps, eta, (final_line || !tty_) ? "\n" : "");
  std::fflush(stderr);
  printed_ = true;
}

}  // namespace agentperf
