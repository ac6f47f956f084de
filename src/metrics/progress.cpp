#include "metrics/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "common/clock.h"
#include "common/run_result.h"

namespace agentperf {

std::string format_duration(double s) {
  if (!(s > 0)) s = 0;  // NaN too
  char b[48];
  if (s < 9.95) std::snprintf(b, sizeof b, "%.1fs", s);
  else if (s < 59.5) std::snprintf(b, sizeof b, "%.0fs", s);
  else if (s < 3600) {
    const auto whole = static_cast<long long>(std::lround(s));
    std::snprintf(b, sizeof b, "%lldm%02llds", whole / 60, whole % 60);
  } else {
    const auto minutes = static_cast<long long>(std::min(s / 60, 1e12) + 0.5);
    std::snprintf(b, sizeof b, "%lldh%02lldm", minutes / 60, minutes % 60);
  }
  return b;
}

// ---- ProgressLine ----

ProgressLine::ProgressLine(ProgressOutput o)
    : o_(std::move(o)), tty_(o_.tty.value_or(::isatty(STDERR_FILENO) == 1)) {
  const double s = tty_ ? o_.interval_s : std::max(o_.interval_s, o_.file_interval_s);
  interval_ns_ = static_cast<std::int64_t>(std::max(0.0, s) * 1e9);
}

ProgressLine::~ProgressLine() {
  if (open_) write("\n");
}

void ProgressLine::write(std::string_view s) const {
  if (o_.write) {
    o_.write(s);
  } else {
    std::fwrite(s.data(), 1, s.size(), stderr);
    std::fflush(stderr);
  }
}

std::int64_t ProgressLine::now() const { return o_.clock ? o_.clock() : monotonic_ns(); }

void ProgressLine::restart(std::int64_t now_ns) {
  started_ = true;
  last_ns_ = now_ns;
}

bool ProgressLine::due(std::int64_t now_ns) {
  if (!started_) {
    restart(now_ns);
    return false;
  }
  return now_ns - last_ns_ >= interval_ns_;
}

void ProgressLine::emit(std::string_view text, bool final_line, std::int64_t now_ns) {
  last_ns_ = now_ns;
  if (final_line) started_ = false;
  if (o_.quiet) return;
  std::string s;
  s.reserve(text.size() + 8);
  if (tty_) s += "\r\033[K";
  s += text;
  if (final_line || !tty_) s += '\n';
  open_ = tty_ && !final_line;
  write(s);
}

// ---- ProgressPrinter ----

ProgressPrinter::ProgressPrinter(bool quiet, double interval_s) : ProgressPrinter([&] {
  ProgressOutput o;
  o.quiet = quiet;
  o.interval_s = interval_s;
  return o;
}()) {}

ProgressPrinter::ProgressPrinter(ProgressOutput o) : line_(std::move(o)) {}

void ProgressPrinter::maybe_print(const LiveCounters& c, Phase phase, std::optional<std::int64_t> total,
                                  std::int64_t start_ns, std::int64_t deadline_ns) {
  if (line_.quiet()) return;
  const std::int64_t now = line_.now();
  if (!line_.due(now)) {
    if (last_sample_ns_ == 0) last_sample_ns_ = now;  // the first call starts the throughput window too
    return;
  }
  print(c, phase, total, start_ns, deadline_ns, false, now);
}

void ProgressPrinter::finish(const LiveCounters& c, Phase phase, std::optional<std::int64_t> start_ns) {
  if (line_.quiet()) return;
  print(c, phase, std::nullopt, start_ns.value_or(c.phase_start_ns.load()), std::numeric_limits<std::int64_t>::max(),
        true, line_.now());
  last_done_ = 0;
  last_tokens_ = 0;
  last_sample_ns_ = 0;
  last_phase_.reset();
}

void ProgressPrinter::print(const LiveCounters& c, Phase phase, std::optional<std::int64_t> total,
                            std::int64_t start_ns, std::int64_t deadline_ns, bool final_line, std::int64_t now) {
  const std::int64_t done = c.done.load(), tokens = c.output_tokens.load();
  if (last_phase_ && *last_phase_ != phase) {
    // A new phase (a replay's handoff to profiling): its counters started
    // at 0 when it began.
    last_done_ = 0;
    last_tokens_ = 0;
    last_sample_ns_ = std::max(last_sample_ns_, start_ns);
  }
  last_phase_ = phase;
  const double window_s = std::max(1e-9, static_cast<double>(now - last_sample_ns_) / 1e9);
  const double elapsed_s = std::max(1e-9, static_cast<double>(now - start_ns) / 1e9);
  const double rps = final_line ? done / elapsed_s : (done - last_done_) / window_s;
  const double tps = final_line ? tokens / elapsed_s : (tokens - last_tokens_) / window_s;
  last_done_ = done;
  last_tokens_ = tokens;
  last_sample_ns_ = now;

  std::string eta;
  if (!final_line) {
    double remaining = -1;
    if (deadline_ns != std::numeric_limits<std::int64_t>::max())
      remaining = std::max(0.0, static_cast<double>(deadline_ns - now) / 1e9);
    if (total && done > 0) {
      const double by_count = static_cast<double>(*total - done) * elapsed_s / static_cast<double>(done);
      remaining = remaining < 0 ? by_count : std::min(remaining, by_count);
    }
    if (remaining >= 0) eta = " | ETA " + format_duration(remaining);
  }
  char total_text[32] = "";
  if (total) std::snprintf(total_text, sizeof total_text, "/%lld", static_cast<long long>(*total));
  char text[256];
  std::snprintf(text, sizeof text, "[%s] %s%lld%s done, %lld in flight, %lld errors | %.1f req/s, %.0f out tok/s%s",
                phase_name(phase), final_line ? "finished: " : "", static_cast<long long>(done), total_text,
                static_cast<long long>(c.in_flight.load()), static_cast<long long>(c.errors.load()), rps, tps,
                eta.c_str());
  line_.emit(text, final_line, now);
}

// ---- CountProgress ----

CountProgress::CountProgress(std::string label, ProgressOutput o) : label_(std::move(label)), line_(std::move(o)) {}

CountProgress::CountProgress(std::string label, bool quiet) : label_(std::move(label)), line_([quiet] {
  ProgressOutput o;
  o.quiet = quiet;
  // AGENTPERF_PROGRESS_INTERVAL=S: one line every S seconds, on a terminal
  // and in a log alike (a number >= 0; anything else is ignored).
  if (const char* env = std::getenv("AGENTPERF_PROGRESS_INTERVAL")) {
    char* end = nullptr;
    const double s = std::strtod(env, &end);
    if (end != env && *end == '\0' && std::isfinite(s) && s >= 0 && s <= 86400) o.interval_s = o.file_interval_s = s;
  }
  return o;
}()) {}

void CountProgress::start(std::int64_t total, std::string unit, bool bytes) {
  unit_ = std::move(unit);
  bytes_ = bytes;
  total_ = std::max<std::int64_t>(0, total);
  done_ = 0;
  started_ = true;
  const std::int64_t now = line_.now();
  start_ns_ = last_sample_ns_ = now;
  last_sample_done_ = 0;
  line_.restart(now);
}

void CountProgress::set_total(std::int64_t total) { total_ = std::max<std::int64_t>(0, total); }

void CountProgress::update(std::int64_t done) {
  done_ = done;
  if (!started_ || line_.quiet()) return;
  const std::int64_t now = line_.now();
  if (line_.due(now)) print(false, now, {});
}

void CountProgress::finish(const std::string& note) {
  if (!started_) return;
  started_ = false;
  print(true, line_.now(), note);
}

std::string CountProgress::amount(std::int64_t v) const {
  char b[40];
  if (bytes_) std::snprintf(b, sizeof b, "%.1f", static_cast<double>(v) / 1e6);
  else std::snprintf(b, sizeof b, "%lld", static_cast<long long>(v));
  return b;
}

std::string CountProgress::rate_text(double per_s) const {
  char b[64];
  if (bytes_) std::snprintf(b, sizeof b, "%.1f MB/s", per_s / 1e6);
  else if (per_s > 0 && per_s < 1) std::snprintf(b, sizeof b, "%.1f s each", 1 / per_s);
  else std::snprintf(b, sizeof b, "%.1f %s/s", per_s, unit_.c_str());
  return b;
}

void CountProgress::print(bool final_line, std::int64_t now, const std::string& note) {
  const double elapsed_s = std::max(1e-9, static_cast<double>(now - start_ns_) / 1e9);
  // (appended piece by piece: GCC 12 warns falsely on chains of
  // "literal" + std::string temporaries)
  std::string s = label_;
  s += final_line ? ": finished " : ": ";
  s += amount(done_);
  if (total_ > 0) s.append("/").append(amount(total_));
  s.append(" ").append(bytes_ ? std::string("MB") : unit_);
  if (final_line) {
    s.append(" in ").append(format_duration(elapsed_s));
    s.append(" (").append(rate_text(static_cast<double>(done_) / elapsed_s)).append(")");
    if (!note.empty()) s.append("; ").append(note);
  } else {
    if (total_ > 0) {
      char pct[32];
      std::snprintf(pct, sizeof pct, " (%.0f%%)", 100.0 * std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_)));
      s += pct;
    }
    const double window_s = std::max(1e-9, static_cast<double>(now - last_sample_ns_) / 1e9);
    s.append(" | ").append(rate_text(mean_rate_ ? static_cast<double>(done_) / elapsed_s
                                                : static_cast<double>(done_ - last_sample_done_) / window_s));
    if (total_ > 0 && done_ > 0 && done_ < total_)
      s.append(" | ETA ").append(
          format_duration(static_cast<double>(total_ - done_) * elapsed_s / static_cast<double>(done_)));
  }
  last_sample_ns_ = now;
  last_sample_done_ = done_;
  line_.emit(s, final_line, now);
}

}  // namespace agentperf
