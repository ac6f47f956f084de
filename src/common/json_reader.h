// One validated reader for JSON input files (model and hardware specs,
// hardware profiles, GPU measurements, ...). It exists so that every loader
// walks dotted paths, checks types and ranges and reports a bad field the
// same way, instead of each loader carrying its own copy of that code with
// its own wording. Every error is one line,
//   <source>: field '<dotted.path>': <what was expected>, got <value>
// thrown as agentperf::UserError (common/error.h).
//
// Paths are dotted object keys ("efficiency.gemm"); the empty path is the
// node the reader stands on. Readers of sub-objects and array elements carry
// their path, so a field deep inside is still named in full
// ("efficiency.gemm.bf16[1].fraction"). A reader refers to the JSON it was
// made from, which must outlive it.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <istream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentperf {

// Accepted values of a number: [min, max], or (min, max] when min_exclusive.
// Every number read must also be finite.
struct JsonRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;

  static JsonRange any() { return {}; }
  static JsonRange positive() { return {0, std::numeric_limits<double>::infinity(), true}; }
  static JsonRange between(double lo, double hi) { return {lo, hi, false}; }
  static JsonRange fraction() { return {0, 1, true}; }  // (0, 1]
  bool contains(double v) const;
  std::string describe() const;  // "must be > 0", "must be in [1, 8]", ...
};

// %g: the way numbers appear in error messages.
std::string format_json_number(double v);

// Parses a whole stream; throws UserError "<source>: not valid JSON".
nlohmann::json parse_json(std::istream& in, const std::string& source);

class JsonReader {
 public:
  // source: what the user calls the input (usually its file path).
  JsonReader(const nlohmann::json& root, std::string source);

  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }  // "" at the root
  const nlohmann::json& node() const { return *node_; }

  // Whether the field exists (an intermediate that is not an object throws).
  bool has(std::string_view path) const;

  double number(std::string_view path, JsonRange range = {}) const;
  std::optional<double> optional_number(std::string_view path, JsonRange range = {}) const;
  double number_or(std::string_view path, double fallback, JsonRange range = {}) const;
  int integer(std::string_view path, JsonRange range = {}) const;
  int integer_or(std::string_view path, int fallback, JsonRange range = {}) const;
  std::string string(std::string_view path) const;
  std::string string_or(std::string_view path, const std::string& fallback) const;
  bool boolean(std::string_view path) const;
  bool boolean_or(std::string_view path, bool fallback) const;

  // Readers of a sub-object or an array (non_empty: at least one entry).
  JsonReader object(std::string_view path, bool non_empty = false) const;
  JsonReader array(std::string_view path, bool non_empty = false) const;
  // An object's entries (key order of the JSON), each a reader of its value.
  std::vector<std::pair<std::string, JsonReader>> entries() const;
  // An array's elements, named "<path>[i]".
  std::size_t size() const { return node_->size(); }
  JsonReader at(std::size_t i) const;

  // Throws naming the first key of the object at `path` not in `known`.
  void reject_unknown_keys(std::initializer_list<std::string_view> known, std::string_view path = "") const;

  // Checks a value the caller computed (a default, a derived bound) against a
  // range, reported as the field at `path`.
  void check(std::string_view path, double value, JsonRange range) const;

  // Throws "<source>: field '<path>': <expected>, got <the value there>".
  [[noreturn]] void fail(std::string_view path, const std::string& expected) const;
  [[noreturn]] void fail(std::string_view path, const std::string& expected, const std::string& got) const;

 private:
  JsonReader(const nlohmann::json& node, std::string source, std::string path);
  std::string full(std::string_view path) const;
  const nlohmann::json* find(std::string_view path) const;  // null when absent
  const nlohmann::json& require(std::string_view path, const char* expected) const;
  double checked_number(std::string_view path, const nlohmann::json& v, JsonRange range) const;
  int checked_integer(std::string_view path, const nlohmann::json& v, JsonRange range) const;

  const nlohmann::json* node_;
  std::string source_, path_;
};

}  // namespace agentperf
