#include "common/json_reader.h"

#include <cmath>
#include <cstdio>

#include "common/error.h"

namespace agentperf {
namespace {
using json = nlohmann::json;

std::string shown(const json& v) {
  std::string s = v.dump();
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}
}  // namespace

bool JsonRange::contains(double v) const {
  return std::isfinite(v) && (min_exclusive ? v > min : v >= min) && v <= max;
}

std::string JsonRange::describe() const {
  const bool has_min = std::isfinite(min), has_max = std::isfinite(max);
  if (has_min && has_max)
    return "must be in " + std::string(min_exclusive ? "(" : "[") + format_json_number(min) + ", " +
           format_json_number(max) + "]";
  if (has_min) return std::string("must be ") + (min_exclusive ? "> " : ">= ") + format_json_number(min);
  if (has_max) return "must be <= " + format_json_number(max);
  return "must be a finite number";
}

std::string format_json_number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

json parse_json(std::istream& in, const std::string& source) {
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) throw UserError(source + ": not valid JSON");
  return j;
}

JsonReader::JsonReader(const json& root, std::string source) : JsonReader(root, std::move(source), "") {}

JsonReader::JsonReader(const json& node, std::string source, std::string path)
    : node_(&node), source_(std::move(source)), path_(std::move(path)) {}

std::string JsonReader::full(std::string_view path) const {
  if (path_.empty()) return std::string(path);
  if (path.empty()) return path_;
  return path_ + "." + std::string(path);
}

void JsonReader::fail(std::string_view path, const std::string& expected, const std::string& got) const {
  const std::string name = full(path);
  throw UserError(source_ + ": " + (name.empty() ? "" : "field '" + name + "': ") + expected + ", got " + got);
}

void JsonReader::fail(std::string_view path, const std::string& expected) const {
  const json* v = find(path);
  fail(path, expected, v ? shown(*v) : "nothing (the field is missing)");
}

const json* JsonReader::find(std::string_view path) const {
  const json* cur = node_;
  if (path.empty()) return cur;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (!cur->is_object()) {
      const std::string_view parent = path.substr(0, start == 0 ? 0 : start - 1);
      fail(parent, "must be an object", shown(*cur));
    }
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    if (dot == std::string_view::npos) return cur;
    start = dot + 1;
  }
}

bool JsonReader::has(std::string_view path) const { return find(path) != nullptr; }

const json& JsonReader::require(std::string_view path, const char* expected) const {
  const json* v = find(path);
  if (!v) fail(path, std::string("must be ") + expected, "nothing (the field is missing)");
  return *v;
}

double JsonReader::checked_number(std::string_view path, const json& v, JsonRange range) const {
  if (!v.is_number()) fail(path, "must be a number", shown(v));
  const double d = v.get<double>();
  if (!range.contains(d)) fail(path, range.describe(), shown(v));
  return d;
}

int JsonReader::checked_integer(std::string_view path, const json& v, JsonRange range) const {
  const double d = v.is_number() ? v.get<double>() : NAN;
  if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > std::numeric_limits<int>::max())
    fail(path, "must be an integer", shown(v));
  if (!range.contains(d)) fail(path, range.describe(), shown(v));
  return static_cast<int>(d);
}

double JsonReader::number(std::string_view path, JsonRange range) const {
  return checked_number(path, require(path, "a number"), range);
}

std::optional<double> JsonReader::optional_number(std::string_view path, JsonRange range) const {
  const json* v = find(path);
  if (!v) return std::nullopt;
  return checked_number(path, *v, range);
}

double JsonReader::number_or(std::string_view path, double fallback, JsonRange range) const {
  return optional_number(path, range).value_or(fallback);
}

int JsonReader::integer(std::string_view path, JsonRange range) const {
  return checked_integer(path, require(path, "an integer"), range);
}

int JsonReader::integer_or(std::string_view path, int fallback, JsonRange range) const {
  const json* v = find(path);
  return v ? checked_integer(path, *v, range) : fallback;
}

std::string JsonReader::string(std::string_view path) const {
  const json& v = require(path, "a string");
  if (!v.is_string()) fail(path, "must be a string", shown(v));
  return v.get<std::string>();
}

std::string JsonReader::string_or(std::string_view path, const std::string& fallback) const {
  return has(path) ? string(path) : fallback;
}

bool JsonReader::boolean(std::string_view path) const {
  const json& v = require(path, "true or false");
  if (!v.is_boolean()) fail(path, "must be true or false", shown(v));
  return v.get<bool>();
}

bool JsonReader::boolean_or(std::string_view path, bool fallback) const { return has(path) ? boolean(path) : fallback; }

JsonReader JsonReader::object(std::string_view path, bool non_empty) const {
  const char* expected = non_empty ? "a non-empty object" : "an object";
  const json& v = require(path, expected);
  if (!v.is_object() || (non_empty && v.empty())) fail(path, std::string("must be ") + expected, shown(v));
  return JsonReader(v, source_, full(path));
}

JsonReader JsonReader::array(std::string_view path, bool non_empty) const {
  const char* expected = non_empty ? "a non-empty array" : "an array";
  const json& v = require(path, expected);
  if (!v.is_array() || (non_empty && v.empty())) fail(path, std::string("must be ") + expected, shown(v));
  return JsonReader(v, source_, full(path));
}

std::vector<std::pair<std::string, JsonReader>> JsonReader::entries() const {
  std::vector<std::pair<std::string, JsonReader>> out;
  if (!node_->is_object()) return out;
  for (auto it = node_->begin(); it != node_->end(); ++it)
    out.emplace_back(it.key(), JsonReader(it.value(), source_, full(it.key())));
  return out;
}

JsonReader JsonReader::at(std::size_t i) const {
  return JsonReader(node_->at(i), source_, path_ + "[" + std::to_string(i) + "]");
}

void JsonReader::reject_unknown_keys(std::initializer_list<std::string_view> known, std::string_view path) const {
  const json& obj = path.empty() ? *node_ : require(path, "an object");
  if (!obj.is_object()) fail(path, "must be an object", shown(obj));
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (auto k : known) ok = ok || k == it.key();
    if (ok) continue;
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    const std::string key_path = path.empty() ? it.key() : std::string(path) + "." + it.key();
    fail(key_path, "must be one of the known keys (" + list + ")", "unknown key '" + it.key() + "'");
  }
}

void JsonReader::check(std::string_view path, double value, JsonRange range) const {
  if (!range.contains(value)) fail(path, range.describe(), format_json_number(value));
}

}  // namespace agentperf
