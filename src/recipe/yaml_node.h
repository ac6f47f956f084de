// Internal to src/recipe: a YAML node that knows its key path and line, so
// every error is one line naming the file, the line, the key path and what
// was expected (recipe.cpp and master_config.cpp read their files with it).
#pragma once
#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <optional>
#include <set>
#include <string>

#include "common/error.h"

namespace agentperf::recipe::detail {

class Node {
 public:
  // A key that is absent has no position of its own: it reports its parent's line.
  Node(YAML::Node n, std::string path, std::string file, int parent_line = -1)
      : n_(std::move(n)), path_(std::move(path)), file_(std::move(file)), line_(parent_line) {
    if (n_.IsDefined() && n_.Mark().line >= 0) line_ = n_.Mark().line;
  }
  [[noreturn]] void fail(const std::string& what) const {
    std::string where = file_;
    if (line_ >= 0) where += ":" + std::to_string(line_ + 1);
    throw UserError(where + ": " + (path_.empty() ? std::string("recipe") : path_) + ": " + what);
  }
  void only(std::initializer_list<const char*> keys) const {
    if (!n_.IsDefined() || !n_.IsMap()) fail(n_.IsDefined() ? "expected a mapping" : "missing (expected a mapping)");
    std::set<std::string> allowed(keys.begin(), keys.end());
    for (const auto& kv : n_) {
      const auto k = kv.first.as<std::string>();
      if (!allowed.count(k)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        Node(kv.first, path_.empty() ? k : path_ + "." + k, file_, line_).fail("unknown key (expected one of: " + list + ")");
      }
    }
  }
  bool has(const char* k) const { return n_.IsDefined() && n_.IsMap() && n_[k]; }
  Node operator[](const char* k) const {
    const std::string path = path_.empty() ? std::string(k) : path_ + "." + k;
    if (!n_.IsDefined() || !n_.IsMap()) return Node(YAML::Node(YAML::NodeType::Undefined), path, file_, line_);
    return Node(n_[k], path, file_, line_);
  }
  Node at(std::size_t i) const { return Node(n_[i], path_ + "[" + std::to_string(i) + "]", file_, line_); }
  std::size_t size() const { return n_.IsDefined() ? n_.size() : 0; }
  bool is_seq() const { return n_.IsDefined() && n_.IsSequence(); }
  bool is_map() const { return n_.IsDefined() && n_.IsMap(); }
  template <class T>
  T as(const char* what) const {
    if (!n_.IsDefined() || n_.IsNull()) fail(std::string("missing (expected ") + what + ")");
    try {
      return n_.as<T>();
    } catch (const YAML::Exception&) {
      fail(std::string("expected ") + what);
    }
  }
  template <class T>
  T get(const char* k, const char* what, std::optional<T> fallback = std::nullopt) const {
    if (!has(k)) {
      if (fallback) return *fallback;
      (*this)[k].fail(std::string("missing (expected ") + what + ")");
    }
    return (*this)[k].template as<T>(what);
  }
  const YAML::Node& raw() const { return n_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }
  int line() const { return line_; }  // 0-based; -1 when unknown

 private:
  YAML::Node n_;
  std::string path_;
  std::string file_;
  int line_ = -1;
};

}  // namespace agentperf::recipe::detail

namespace agentperf::recipe::detail {
// The YAML document at `path`; a file that cannot be read or parsed is a
// UserError naming it (as "cannot read <what> 'path'", or with the line).
inline YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw UserError("cannot read " + what + " '" + path + "'");
  } catch (const YAML::ParserException& e) {
    throw UserError(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
}

// A document whose top level maps entry keys to entries with `scenarios`
// (an InferenceX master config) rather than a recipe (master_config.cpp).
bool looks_like_master_config(const YAML::Node& doc);
}  // namespace agentperf::recipe::detail
