// The progress reporters with an injected clock and output: when lines come
// (interval on a terminal, at least 10 s apart in a log), what they say
// (label, done/total, rate, ETA, the final line), in-place rewriting, quiet.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "common/run_result.h"
#include "metrics/progress.h"

using namespace agentperf;

namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

// A clock the test moves and everything written.
struct Harness {
  std::int64_t now = 1000 * kSecond;
  std::string out;
  ProgressOutput output(bool tty, double interval_s = 1.0) {
    ProgressOutput o;
    o.tty = tty;
    o.interval_s = interval_s;
    o.clock = [this] { return now; };
    o.write = [this](std::string_view s) { out += s; };
    return o;
  }
  void advance(double s) { now += static_cast<std::int64_t>(s * 1e9); }
  // The lines ended by a newline.
  std::vector<std::string> lines() const {
    std::vector<std::string> v;
    std::size_t at = 0;
    for (std::size_t nl; (nl = out.find('\n', at)) != std::string::npos; at = nl + 1) v.push_back(out.substr(at, nl - at));
    return v;
  }
};

}  // namespace

TEST(Progress, FormatsDurations) {
  EXPECT_EQ(format_duration(0), "0.0s");
  EXPECT_EQ(format_duration(-3), "0.0s");
  EXPECT_EQ(format_duration(4.26), "4.3s");
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(2 * 3600 + 7 * 60 + 10), "2h07m");
}

TEST(Progress, CountLinesInALogComeEveryTenSecondsWithRateAndEta) {
  Harness h;
  CountProgress p("agentperf: building", h.output(/*tty=*/false));  // interval 1 s, but a log: 10 s
  p.start(100, "traces");
  for (int i = 1; i <= 9; ++i) {  // 9 s: no line yet
    h.advance(1);
    p.update(i * 2);
  }
  EXPECT_EQ(h.out, "");
  h.advance(1);
  p.update(20);  // 10 s, 20 done: 2/s over the window, 80 left at 2/s
  ASSERT_EQ(h.lines().size(), 1u) << h.out;
  EXPECT_EQ(h.lines()[0], "agentperf: building: 20/100 traces (20%) | 2.0 traces/s | ETA 40s");
  h.advance(5);
  p.update(60);
  EXPECT_EQ(h.lines().size(), 1u) << "5 s after the last line: none";
  h.advance(5);
  p.update(70);  // 10 s window: 50 more = 5/s; mean 70 in 20 s -> 30 left in 8.6 s
  EXPECT_EQ(h.lines()[1], "agentperf: building: 70/100 traces (70%) | 5.0 traces/s | ETA 8.6s");
  h.advance(2);
  p.update(100);
  p.finish("12 prompts");
  const auto lines = h.lines();
  ASSERT_EQ(lines.size(), 3u) << h.out;
  EXPECT_EQ(lines[2], "agentperf: building: finished 100/100 traces in 22s (4.5 traces/s); 12 prompts");
  EXPECT_EQ(h.out.back(), '\n');
  p.finish("again");  // once
  EXPECT_EQ(h.lines().size(), 3u);
}

TEST(Progress, CountLineIsRewrittenInPlaceOnATerminal) {
  Harness h;
  CountProgress p("loading", h.output(/*tty=*/true, 1.0));
  p.start(4'000'000, "MB", /*bytes=*/true);
  h.advance(0.5);
  p.update(500'000);
  EXPECT_EQ(h.out, "") << "within the first interval";
  h.advance(0.5);
  p.update(1'000'000);
  EXPECT_EQ(h.out, "\r\033[Kloading: 1.0/4.0 MB (25%) | 1.0 MB/s | ETA 3.0s");
  h.advance(1);
  p.update(3'000'000);
  EXPECT_EQ(h.out.substr(h.out.rfind('\r')), "\r\033[Kloading: 3.0/4.0 MB (75%) | 2.0 MB/s | ETA 0.7s");
  EXPECT_EQ(h.out.find('\n'), std::string::npos) << "no newline while in progress";
  h.advance(1);
  p.update(4'000'000);
  p.finish();
  EXPECT_EQ(h.out.substr(h.out.rfind('\r')), "\r\033[Kloading: finished 4.0/4.0 MB in 3.0s (1.3 MB/s)\n");
}

TEST(Progress, AFinalLineComesEvenForShortWorkAndNothingWhenQuiet) {
  Harness h;
  {
    CountProgress p("quick", h.output(false));
    p.start(3, "files");
    p.add();
    p.add();
    p.add();
    h.advance(0.5);
    p.finish();
  }
  EXPECT_EQ(h.out, "quick: finished 3/3 files in 0.5s (6.0 files/s)\n");
  Harness q;
  auto o = q.output(true, 0);
  o.quiet = true;
  {
    CountProgress p("quiet", o);
    p.start(10, "items");
    for (int i = 0; i < 10; ++i) {
      q.advance(1);
      p.add();
    }
    p.finish("note");
  }
  EXPECT_EQ(q.out, "");
}

TEST(Progress, SlowItemsShowSecondsEachAndAnUnknownTotalNoEta) {
  Harness h;
  auto o = h.output(false, 0);
  o.file_interval_s = 0;  // every update a line (as a sweep's points)
  CountProgress p("sweep", o);
  p.set_mean_rate(true);
  p.start(4, "points");
  h.advance(40);
  p.add();
  h.advance(20);
  p.add(2);  // settled at once (pruned): the mean, not the instant
  EXPECT_EQ(h.lines()[0], "sweep: 1/4 points (25%) | 40.0 s each | ETA 2m00s");
  EXPECT_EQ(h.lines()[1], "sweep: 3/4 points (75%) | 20.0 s each | ETA 20s");
  p.set_total(5);  // a point added
  h.advance(10);
  p.add();
  EXPECT_EQ(h.lines()[2], "sweep: 4/5 points (80%) | 17.5 s each | ETA 18s");
  p.finish();
  EXPECT_EQ(h.lines()[3], "sweep: finished 4/5 points in 1m10s (17.5 s each)");

  Harness u;
  auto uo = u.output(false, 0);
  uo.file_interval_s = 0;
  CountProgress open("open", uo);
  open.start(0, "rows");
  u.advance(2);
  open.update(10);
  EXPECT_EQ(u.lines()[0], "open: 10 rows | 5.0 rows/s");
}

TEST(Progress, AnInPlaceLineLeftOpenIsEndedWhenTheReporterGoes) {
  Harness h;
  {
    CountProgress p("loading", h.output(true, 1.0));
    p.start(10, "files");
    h.advance(1);
    p.update(3);
    // the work throws here: no finish()
  }
  ASSERT_FALSE(h.out.empty());
  EXPECT_EQ(h.out.back(), '\n') << "the next message starts on its own line";
  EXPECT_EQ(h.out.substr(0, h.out.size() - 1), "\r\033[Kloading: 3/10 files (30%) | 3.0 files/s | ETA 2.3s");
}

TEST(Progress, RequestLineCountsDoneInFlightErrorsAndTheEta) {
  Harness h;
  LiveCounters c;
  ProgressPrinter p(h.output(false, 1.0));
  const std::int64_t start = h.now;
  c.phase_start_ns = start;
  p.maybe_print(c, Phase::profiling, 40, start, std::numeric_limits<std::int64_t>::max());  // starts the interval
  h.advance(10);
  c.done = 10;
  c.in_flight = 4;
  c.errors = 1;
  c.output_tokens = 5000;
  p.maybe_print(c, Phase::profiling, 40, start, std::numeric_limits<std::int64_t>::max());
  ASSERT_EQ(h.lines().size(), 1u) << h.out;
  EXPECT_EQ(h.lines()[0], "[profiling] 10/40 done, 4 in flight, 1 errors | 1.0 req/s, 500 out tok/s | ETA 30s");
  h.advance(5);
  p.maybe_print(c, Phase::profiling, 40, start, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(h.lines().size(), 1u) << "a log gets a line every 10 s";
  // By --duration: the deadline sets the ETA.
  h.advance(5);
  c.done = 30;
  p.maybe_print(c, Phase::profiling, std::nullopt, start, h.now + 200 * kSecond);
  EXPECT_EQ(h.lines()[1], "[profiling] 30 done, 4 in flight, 1 errors | 2.0 req/s, 0 out tok/s | ETA 3m20s");
  c.in_flight = 0;
  p.finish(c, Phase::profiling);
  EXPECT_EQ(h.lines()[2], "[profiling] finished: 30 done, 0 in flight, 1 errors | 1.5 req/s, 250 out tok/s");
}

// A replay hands off from warmup to profiling without a final line; the
// profiling counters start again at 0, so the rate restarts with them.
TEST(Progress, RequestLineRatesRestartWithANewPhase) {
  Harness h;
  LiveCounters c;
  ProgressPrinter p(h.output(/*tty=*/true, 1.0));
  const std::int64_t start = h.now;
  p.maybe_print(c, Phase::warmup, 700, start, std::numeric_limits<std::int64_t>::max());
  h.advance(10);
  c.done = 700;
  p.maybe_print(c, Phase::warmup, 700, start, std::numeric_limits<std::int64_t>::max());
  EXPECT_NE(h.out.find("[warmup] 700/700 done"), std::string::npos) << h.out;
  h.advance(1);
  const std::int64_t profiling_start = h.now;  // the handoff: counters reset
  c.done = 0;
  c.output_tokens = 0;
  h.advance(2);
  c.done = 4;
  c.output_tokens = 400;
  p.maybe_print(c, Phase::profiling, std::nullopt, profiling_start, profiling_start + 60 * kSecond);
  EXPECT_EQ(h.out.substr(h.out.rfind('\r')),
            "\r\033[K[profiling] 4 done, 0 in flight, 0 errors | 2.0 req/s, 200 out tok/s | ETA 58s");
  h.advance(2);
  c.done = 8;
  p.finish(c, Phase::profiling, profiling_start);  // rates over the profiling phase, not the whole run
  EXPECT_EQ(h.out.substr(h.out.rfind('\r')),
            "\r\033[K[profiling] finished: 8 done, 0 in flight, 0 errors | 2.0 req/s, 100 out tok/s\n");
}
