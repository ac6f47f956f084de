#include "cli/cli_numbers.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace agentperf::cli {
namespace {

// A bound as people write it: 1000000 (not 1e+06 or 1000000.000000), 0.5.
std::string num(double v) {
  char buf[64];
  if (std::fabs(v) < 1e15 && v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

// strtod alone would also take "inf", "nan", "0x1p3" and leading spaces:
// only decimal numbers are numbers here.
bool decimal_text(const std::string& s) {
  if (s.empty()) return false;
  bool digit = false;
  for (char c : s) {
    if (c >= '0' && c <= '9') digit = true;
    else if (c != '+' && c != '-' && c != '.' && c != 'e' && c != 'E') return false;
  }
  return digit;
}

// "(30 days)", "(2 hours)", or "" when s is no whole number of either.
std::string duration_words(double s) {
  const auto plural = [](double n, const char* unit) { return "(" + num(n) + " " + unit + (n == 1 ? ")" : "s)"); };
  if (s >= 86400 && std::fmod(s, 86400) == 0) return plural(s / 86400, "day");
  if (s >= 3600 && std::fmod(s, 3600) == 0) return plural(s / 3600, "hour");
  return "";
}

}  // namespace

std::string seconds_note(double s) {
  const std::string words = duration_words(s);
  return words.empty() ? num(s) : num(s) + " " + words;
}

std::string describe_range(const NumberRule& rule) {
  const std::string hi = rule.hi_note.empty() ? num(rule.hi) : num(rule.hi) + " " + rule.hi_note;
  if (rule.lo_open) return "above " + num(rule.lo) + " and up to " + hi;
  return "from " + num(rule.lo) + " to " + hi;
}

std::optional<std::string> check_number(std::string& text, const NumberRule& rule) {
  const std::string shown = text.empty() ? "''" : text;
  const std::string refusal = shown + " is not " + rule.what + " " + describe_range(rule);
  if (!decimal_text(text)) return refusal;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  // Overflow (1e999) is out of range, never "inf".
  if (end != text.c_str() + text.size() || !std::isfinite(v) || errno == ERANGE) return refusal;
  if (rule.whole && v != std::floor(v)) return refusal;
  if (v < rule.lo || (rule.lo_open && v == rule.lo) || v > rule.hi) return refusal;
  // The integer the option is converted to: "1e3" and "1000.0" mean 1000.
  if (rule.whole) text = num(v);
  return std::nullopt;
}

CLI::Validator number_in(const NumberRule& rule) {
  return CLI::Validator(
      [rule](std::string& text) -> std::string {
        auto err = check_number(text, rule);
        return err ? *err : std::string();
      },
      describe_range(rule));
}

CLI::Validator int_in(std::int64_t lo, std::int64_t hi) {
  return number_in({static_cast<double>(lo), static_cast<double>(hi), false, true, "a whole number", ""});
}

CLI::Validator tokens_in(std::int64_t lo, std::int64_t hi) {
  return number_in({static_cast<double>(lo), static_cast<double>(hi), false, true, "a whole number of tokens", ""});
}

CLI::Validator seconds_in(double lo, double hi, bool lo_open) {
  return number_in({lo, hi, lo_open, false, "a number of seconds", duration_words(hi)});
}

CLI::Validator positive_seconds_up_to(double hi) { return seconds_in(0, hi, true); }

CLI::Validator real_in(double lo, double hi, bool lo_open, const std::string& what) {
  return number_in({lo, hi, lo_open, false, what, ""});
}

CLI::Validator uint64_any() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::string refusal =
            (text.empty() ? std::string("''") : text) + " is not a whole number from 0 to 18446744073709551615";
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return refusal;
        errno = 0;
        std::strtoull(text.c_str(), nullptr, 10);
        return errno == ERANGE ? refusal : std::string();
      },
      "0 to 2^64-1");
}

}  // namespace agentperf::cli
