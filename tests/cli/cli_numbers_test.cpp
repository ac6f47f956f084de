// The checked numeric options (cli/cli_numbers.h) and the same bounds in
// ProfileConfig::validate() for library callers (load/profile_config.h).
#include "cli/cli_numbers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "load/arrival_schedule.h"
#include "load/profile_config.h"

using namespace agentperf;
using namespace agentperf::cli;

namespace {
// Parses `args` for one option checked by `v`: "" when accepted (and the
// value lands in `out`), else the ValidationError's message.
template <typename T>
std::string parse_with(const CLI::Validator& v, const std::string& flag, std::vector<std::string> args, T& out) {
  CLI::App app;
  app.add_option(flag, out)->transform(v);  // as the commands register whole-number options
  args.insert(args.begin(), "prog");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

std::string error_of(const ProfileConfig& c) {
  try {
    c.validate();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

ProfileConfig closed_loop() {
  ProfileConfig c;
  c.concurrency = 1;
  return c;
}
}  // namespace

TEST(CliNumbers, MessagesNameTheValueAndTheRangeInWords) {
  int n = 0;
  EXPECT_EQ(parse_with(int_in(1, 1'000'000), "-c,--concurrency", {"-c", "0"}, n),
            "--concurrency: 0 is not a whole number from 1 to 1000000");
  EXPECT_EQ(parse_with(int_in(1, 1'000'000), "-c,--concurrency", {"-c", "abc"}, n),
            "--concurrency: abc is not a whole number from 1 to 1000000");
  EXPECT_EQ(parse_with(int_in(1, 1'000'000), "-c,--concurrency", {"-c", "2.5"}, n),
            "--concurrency: 2.5 is not a whole number from 1 to 1000000");
  double d = 0;
  EXPECT_EQ(parse_with(positive_seconds_up_to(limits::max_seconds), "-d,--duration", {"-d", "1e10"}, d),
            "--duration: 1e10 is not a number of seconds above 0 and up to 2592000 (30 days)");
  EXPECT_EQ(parse_with(seconds_in(0, limits::max_seconds), "--grace-period", {"--grace-period", "1e300"}, d),
            "--grace-period: 1e300 is not a number of seconds from 0 to 2592000 (30 days)");
  EXPECT_EQ(parse_with(seconds_in(0, 86400), "--t", {"--t", "1e999"}, d),
            "--t: 1e999 is not a number of seconds from 0 to 86400 (1 day)");
  EXPECT_EQ(parse_with(real_in(0, 1, true), "--f", {"--f", "0"}, d), "--f: 0 is not a number above 0 and up to 1");
  EXPECT_EQ(parse_with(real_in(0, 1), "--f", {"--f", "nan"}, d), "--f: nan is not a number from 0 to 1");
  EXPECT_EQ(parse_with(real_in(0, 1), "--f", {"--f", "inf"}, d), "--f: inf is not a number from 0 to 1");
  EXPECT_EQ(parse_with(real_in(0, 1), "--f", {"--f", "0x1"}, d), "--f: 0x1 is not a number from 0 to 1");
  std::int64_t tokens = 0;
  EXPECT_EQ(parse_with(tokens_in(1, limits::max_tokens), "--isl", {"--isl", "2147483648"}, tokens),
            "--isl: 2147483648 is not a whole number of tokens from 1 to 10000000");
  std::uint64_t seed = 0;
  EXPECT_EQ(parse_with(uint64_any(), "--seed", {"--seed", "-1"}, seed),
            "--seed: -1 is not a whole number from 0 to 18446744073709551615");
  EXPECT_EQ(parse_with(uint64_any(), "--seed", {"--seed", "18446744073709551616"}, seed),
            "--seed: 18446744073709551616 is not a whole number from 0 to 18446744073709551615");
}

TEST(CliNumbers, AcceptedValuesArriveUnchangedOrAsPlainIntegers) {
  int n = 0;
  EXPECT_EQ(parse_with(int_in(1, 1'000'000), "-c", {"-c", "1e3"}, n), "");
  EXPECT_EQ(n, 1000);  // the text was rewritten for the int conversion
  EXPECT_EQ(parse_with(int_in(1, 1'000'000), "-c", {"-c", "1000000"}, n), "");
  EXPECT_EQ(n, 1'000'000);
  double d = 0;
  EXPECT_EQ(parse_with(positive_seconds_up_to(limits::max_seconds), "-d", {"-d", "2592000"}, d), "");
  EXPECT_EQ(d, 2592000.0);
  EXPECT_EQ(parse_with(real_in(0, 1), "--f", {"--f", "0.25"}, d), "");
  EXPECT_EQ(d, 0.25);
  std::uint64_t seed = 0;
  EXPECT_EQ(parse_with(uint64_any(), "--seed", {"--seed", "18446744073709551615"}, seed), "");
  EXPECT_EQ(seed, 18446744073709551615ull);
}

TEST(CliNumbers, RangesInWords) {
  EXPECT_EQ(seconds_note(2592000), "2592000 (30 days)");
  EXPECT_EQ(seconds_note(86400), "86400 (1 day)");
  EXPECT_EQ(seconds_note(7200), "7200 (2 hours)");
  EXPECT_EQ(seconds_note(90), "90");
  EXPECT_EQ(describe_range({0, 1, true, false, "a number", ""}), "above 0 and up to 1");
  EXPECT_EQ(describe_range({1, 1000, false, true, "a whole number", ""}), "from 1 to 1000");
}

// The second line of defence: a library caller that fills ProfileConfig
// itself gets the CLI's bounds and messages from validate().
TEST(ProfileConfigLimits, ValidateRefusesWhatWouldWrap) {
  EXPECT_EQ(error_of(closed_loop()), "");
  auto c = closed_loop();
  c.duration_s = 1e10;
  EXPECT_EQ(error_of(c), "--duration: 10000000000 is not a number of seconds above 0 and up to 2592000 (30 days)");
  c = closed_loop();
  c.isl.mean = 2147483648.0;
  EXPECT_EQ(error_of(c), "--isl: 2147483648 is not a whole number of tokens from 1 to 10000000");
  c = closed_loop();
  c.osl.mean = 5e9;
  EXPECT_EQ(error_of(c), "--osl: 5000000000 is not a whole number of tokens from 1 to 10000000");
  c = closed_loop();
  c.request_timeout_s = 1e300;
  EXPECT_NE(error_of(c).find("--request-timeout: 1e+300 is not a number of seconds"), std::string::npos) << error_of(c);
  c = closed_loop();
  c.grace_period_s = 1e300;
  EXPECT_NE(error_of(c).find("--grace-period:"), std::string::npos);
  c = closed_loop();
  c.concurrency = 2'000'000;
  EXPECT_EQ(error_of(c), "--concurrency: 2000000 is not a whole number from 1 to 1000000");
  c = closed_loop();
  c.request_rate = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(error_of(c).find("--request-rate:"), std::string::npos);
  c = closed_loop();
  c.max_error_rate = 1.5;
  EXPECT_EQ(error_of(c), "--max-error-rate: 1.5 is not a number from 0 to 1");
}

// A caller that skipped validate() gets the longest allowed timeout, not a
// wrapped one (1e300 s became -9223372036854775808 ms; 1e10 s wrapped on the
// way to nanoseconds and every request timed out at once).
TEST(ProfileConfigLimits, ClientOptionsNeverWrap) {
  ClientConfig c;
  c.request_timeout_s = 1e300;
  c.connect_timeout_s = 1e10;
  const auto o = client_options(c);
  const auto max_ms = std::chrono::milliseconds(static_cast<std::int64_t>(limits::max_seconds * 1000));
  EXPECT_EQ(o.request_timeout, max_ms);
  EXPECT_EQ(o.connect_timeout, max_ms);
  EXPECT_GT(std::chrono::duration_cast<std::chrono::nanoseconds>(o.request_timeout).count(), 0);
}

// (Belongs beside tests/load/arrival_schedule_test.cpp.) The first open-loop
// request goes at t = 0, as in vLLM's and AIPerf's schedulers; the rest keep
// their exponential gaps.
TEST(ArrivalScheduleStart, FirstPoissonArrivalIsAtZero) {
  ArrivalSchedule s(ArrivalPattern::poisson, 0.3, 0, 1, mix_seed(0, 1));
  EXPECT_EQ(s.next_offset_ns(), 0);
  EXPECT_GT(s.next_offset_ns(), 0);
  ArrivalSchedule c(ArrivalPattern::constant, 10.0, 0, 1, 0);
  EXPECT_EQ(c.next_offset_ns(), 0);
  EXPECT_EQ(c.next_offset_ns(), 100'000'000);
  // A vanishing rate: the next arrival is "never", not an overflow.
  ArrivalSchedule tiny(ArrivalPattern::constant, 1e-300, 0, 1, 0);
  EXPECT_EQ(tiny.next_offset_ns(), 0);
  EXPECT_EQ(tiny.next_offset_ns(), ArrivalSchedule::kNever);
}
