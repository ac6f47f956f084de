// Checked numeric options: CLI11 validators whose errors name the value
// given and the accepted range in words, e.g.
//   --concurrency: 0 is not a whole number from 1 to 1000000
// (CLI11's own PositiveNumber/Range print a 309-digit bound, and say the
// same for "abc" as for 0). Each validator also rewrites the accepted text
// to a plain number ("1e3" -> "1000"), so an integer option takes what its
// check accepted: register int_in and tokens_in with ->transform(), since
// CLI11's ->check() throws the rewritten text away. The limits themselves are in load/profile_config.h
// (`limits`) where the library enforces them too; docs/limits.md lists them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

// What one numeric option accepts.
struct NumberRule {
  double lo = 0;
  double hi = 0;
  bool lo_open = false;     // lo itself is refused ("above 0")
  bool whole = false;       // only whole numbers
  std::string what;         // "a whole number", "a number of seconds", ...
  std::string hi_note;      // shown after hi, e.g. "(30 days)"
};

// The accepted range in words: "from 1 to 1000000", "above 0 and up to
// 2592000 (30 days)".
std::string describe_range(const NumberRule& rule);
// Checks `text` against `rule`: nullopt and `text` rewritten to a plain
// number when accepted, else the message "<text> is not <what> <range>".
std::optional<std::string> check_number(std::string& text, const NumberRule& rule);
CLI::Validator number_in(const NumberRule& rule);

// Whole numbers from lo to hi.
CLI::Validator int_in(std::int64_t lo, std::int64_t hi);
// Whole numbers of tokens from lo to hi.
CLI::Validator tokens_in(std::int64_t lo, std::int64_t hi);
// Seconds from lo to hi (lo_open: above lo); fractions allowed.
CLI::Validator seconds_in(double lo, double hi, bool lo_open = false);
// Seconds above 0 and up to hi.
CLI::Validator positive_seconds_up_to(double hi);
// Any number from lo to hi (lo_open: above lo), with its unit in words
// ("a rate in requests/s"; default "a number").
CLI::Validator real_in(double lo, double hi, bool lo_open = false, const std::string& what = "a number");
// Any whole number 0 to 2^64-1 (seeds).
CLI::Validator uint64_any();

// "2592000 (30 days)", "86400 (1 day)", "3600 (1 hour)": a bound in
// seconds with its size in words when it is a whole number of days or hours.
std::string seconds_note(double s);

}  // namespace agentperf::cli
