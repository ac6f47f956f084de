// Progress lines on stderr. Every one follows the same rules (ProgressLine):
// rewritten in place on a terminal, at most one line per interval; when
// stderr is a file or pipe, one line per interval of at least 10 s, so a log
// stays short; a final line when the work ends; nothing with --quiet.
//
// Two reporters use them:
// - ProgressPrinter: a load run's requests done / in flight / errors,
//   throughput and ETA (profile, replay);
// - CountProgress: "N of M items done" work (loading traces, synthesizing
//   them, building prompts, a virtual-time prediction, a sweep's points):
//   label, done/total, rate and ETA.
// The clock and the output are injectable, so tests drive them without
// sleeping.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/record.h"

namespace agentperf {

struct LiveCounters;

struct ProgressOutput {
  bool quiet = false;
  double interval_s = 1.0;        // between lines on a terminal (0: every update)
  double file_interval_s = 10.0;  // at least this between lines when the output is not a terminal
  std::optional<bool> tty;        // default: whether stderr is a terminal
  std::function<std::int64_t()> clock;          // nanoseconds; default monotonic_ns
  std::function<void(std::string_view)> write;  // default: stderr, flushed
};

// "42s", "3m05s", "2h07m": an ETA or an elapsed time.
std::string format_duration(double seconds);

// The mechanics shared by every progress line: when a line is due, and how
// it is written (in place on a terminal, one per line otherwise).
class ProgressLine {
 public:
  explicit ProgressLine(ProgressOutput o = {});
  // An in-place line left open (the work threw before its final line) is
  // ended, so what is printed next starts on a line of its own.
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  bool quiet() const { return o_.quiet; }
  bool tty() const { return tty_; }
  std::int64_t now() const;
  // The interval counts from here (the first line comes one interval later).
  void restart(std::int64_t now_ns);
  // Whether a line is due at now_ns; the first call after construction or a
  // final line only starts the interval.
  bool due(std::int64_t now_ns);
  // Writes one line (text without control characters or newline); a final
  // line ends the in-place line and the next due() starts over.
  void emit(std::string_view text, bool final_line, std::int64_t now_ns);

 private:
  void write(std::string_view s) const;
  ProgressOutput o_;
  bool tty_;
  std::int64_t interval_ns_;
  std::int64_t last_ns_ = 0;
  bool started_ = false;
  bool open_ = false;  // an in-place line without its newline is on the terminal
};

class ProgressPrinter {
 public:
  ProgressPrinter(bool quiet, double interval_s);
  explicit ProgressPrinter(ProgressOutput o);
  void maybe_print(const LiveCounters& c, Phase phase, std::optional<std::int64_t> total, std::int64_t start_ns,
                   std::int64_t deadline_ns);
  // The final line; its rates are over the phase since start_ns (default:
  // the counters' phase_start_ns).
  void finish(const LiveCounters& c, Phase phase, std::optional<std::int64_t> start_ns = std::nullopt);

 private:
  void print(const LiveCounters& c, Phase phase, std::optional<std::int64_t> total, std::int64_t start_ns,
             std::int64_t deadline_ns, bool final_line, std::int64_t now);
  ProgressLine line_;
  std::int64_t last_done_ = 0;
  std::int64_t last_tokens_ = 0;
  std::int64_t last_sample_ns_ = 0;
  std::optional<Phase> last_phase_;  // of the last line: a new phase's counters start again at 0
};

// "N of M items done" work:
//   <label>: 120/393 traces (30%) | 48.2 traces/s | ETA 6s
//   <label>: finished 393/393 traces in 7.9s (49.7 traces/s)[; note]
// Bytes are shown in MB. A rate under one item a second is shown as
// seconds each ("41.3 s each"). Not thread-safe: one worker updates it.
class CountProgress {
 public:
  explicit CountProgress(std::string label, ProgressOutput o = {});
  // On stderr at the default intervals, or every AGENTPERF_PROGRESS_INTERVAL
  // seconds (terminal or not) when that is set.
  CountProgress(std::string label, bool quiet);
  // Starts (or restarts) the count: total items of `unit` (0: unknown, no
  // ETA). The clock of the rate and ETA starts here.
  void start(std::int64_t total, std::string unit, bool bytes = false);
  void set_total(std::int64_t total);  // the total moved (a sweep added a point)
  // Show the mean rate since start() instead of the rate since the last
  // line (for lines of a few uneven items, such as a sweep's points).
  void set_mean_rate(bool mean) { mean_rate_ = mean; }
  void update(std::int64_t done);      // a line when one is due
  void add(std::int64_t n = 1) { update(done_ + n); }
  // The final line (once; also when nothing was printed before, unless
  // quiet). Later calls do nothing until start() again.
  void finish(const std::string& note = {});
  std::int64_t done() const { return done_; }
  std::int64_t total() const { return total_; }
  bool started() const { return started_; }
  bool quiet() const { return line_.quiet(); }

 private:
  std::string amount(std::int64_t v) const;
  std::string rate_text(double per_s) const;
  void print(bool final_line, std::int64_t now, const std::string& note);
  std::string label_;
  ProgressLine line_;
  std::string unit_;
  bool bytes_ = false;
  bool mean_rate_ = false;
  bool started_ = false;
  std::int64_t total_ = 0, done_ = 0;
  std::int64_t start_ns_ = 0, last_sample_ns_ = 0, last_sample_done_ = 0;
};

}  // namespace agentperf
