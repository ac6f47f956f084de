// A small streaming JSON writer, so the GPU measurement program needs no
// JSON library (it builds on machines with only the CUDA toolkit).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace agentperf::calibrate::gpu {

class JsonWriter {
 public:
  JsonWriter& begin_object(const char* key = nullptr) { open(key, '{'); return *this; }
  JsonWriter& end_object() { close('}'); return *this; }
  JsonWriter& begin_array(const char* key = nullptr) { open(key, '['); return *this; }
  JsonWriter& end_array() { close(']'); return *this; }
  JsonWriter& field(const char* key, double v) {
    prefix(key);
    if (!std::isfinite(v)) { out_ += "null"; return *this; }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    out_ += buf;
    return *this;
  }
  JsonWriter& field(const char* key, std::int64_t v) { prefix(key); out_ += std::to_string(v); return *this; }
  JsonWriter& field(const char* key, int v) { return field(key, static_cast<std::int64_t>(v)); }
  JsonWriter& field(const char* key, bool v) { prefix(key); out_ += v ? "true" : "false"; return *this; }
  JsonWriter& field(const char* key, const std::string& v) {
    prefix(key);
    out_ += '"';
    for (char c : v) {
      if (c == '"' || c == '\\') { out_ += '\\'; out_ += c; }
      else if (static_cast<unsigned char>(c) < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", c); out_ += b; }
      else out_ += c;
    }
    out_ += '"';
    return *this;
  }
  JsonWriter& field(const char* key, const char* v) { return field(key, std::string(v)); }
  const std::string& str() const { return out_; }

 private:
  void prefix(const char* key) {
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
      out_ += '\n';
      out_.append(2 * first_.size(), ' ');
    }
    if (key) { out_ += '"'; out_ += key; out_ += "\": "; }
  }
  void open(const char* key, char c) { prefix(key); out_ += c; first_.push_back(true); }
  void close(char c) {
    const bool empty = first_.back();
    first_.pop_back();
    if (!empty) { out_ += '\n'; out_.append(2 * first_.size(), ' '); }
    out_ += c;
  }
  std::string out_;
  std::vector<bool> first_;
};

}  // namespace agentperf::calibrate::gpu
