// Incremental Server-Sent Events parser (WHATWG event-stream rules).
//
// Bytes arrive in arbitrary pieces: an event may be split across reads and
// one read may carry many events. Lines end in LF, CRLF or a lone CR (a CR at
// the end of one read followed by LF at the start of the next is one line
// end). Lines starting with ':' are comments. Each dispatched event is stamped
// with the monotonic clock at the moment the parser finishes it, so events
// that arrived in the same read still get their own timestamps.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace agentperf::net {

struct SseEvent {
  std::string_view type;  // "message" unless an `event:` field set it
  std::string_view data;  // `data:` lines joined with '\n'
  std::string_view id;
  std::int64_t ts_ns = 0;
};

class SseParser {
 public:
  // Bytes of allocated slack guaranteed after every event's data.
  static constexpr std::size_t kPadding = 64;

  using ClockFn = std::int64_t (*)() noexcept;

  explicit SseParser(ClockFn clock = &monotonic_ns, std::size_t max_event_bytes = 64u << 20)
      : clock_(clock), max_event_bytes_(max_event_bytes) {}

  // Feeds one piece of the stream; calls on_event(const SseEvent&) for every
  // event completed by it. Returns false if an event grew past the size cap
  // (the stream is garbage or hostile); the parser is then unusable.
  template <class OnEvent>
  bool feed(std::string_view bytes, OnEvent&& on_event);

  // True if bytes of an unfinished line or event are buffered.
  bool has_partial_event() const noexcept {
    return !line_.empty() || has_data_ || !type_.empty();
  }
  std::size_t comment_count() const noexcept { return comments_; }
  void reset();

 private:
  template <class OnEvent>
  void process_line(std::string_view line, OnEvent& on_event);

  ClockFn clock_;
  std::size_t max_event_bytes_;
  std::string line_;  // partial line carried over from the previous feed
  std::string data_;
  std::string type_;
  std::string id_;
  bool has_data_ = false;
  bool skip_lf_ = false;  // previous feed ended in CR
  std::size_t comments_ = 0;
};

template <class OnEvent>
bool SseParser::feed(std::string_view bytes, OnEvent&& on_event) {
  std::size_t pos = 0;
  const std::size_t n = bytes.size();
  if (skip_lf_ && n > 0) {
    if (bytes[0] == '\n') pos = 1;
    skip_lf_ = false;
  }
  while (pos < n) {
    std::size_t end = pos;
    while (end < n && bytes[end] != '\n' && bytes[end] != '\r') ++end;
    if (end == n) {
      line_.append(bytes.data() + pos, n - pos);
      if (line_.size() + data_.size() > max_event_bytes_) return false;
      return true;
    }
    std::string_view line(bytes.data() + pos, end - pos);
    if (!line_.empty()) {
      line_.append(line);
      process_line(std::string_view(line_), on_event);
      line_.clear();
    } else {
      process_line(line, on_event);
    }
    if (data_.size() > max_event_bytes_) return false;
    if (bytes[end] == '\r') {
      if (end + 1 < n) {
        if (bytes[end + 1] == '\n') ++end;
      } else {
        skip_lf_ = true;
      }
    }
    pos = end + 1;
  }
  return true;
}

template <class OnEvent>
void SseParser::process_line(std::string_view line, OnEvent& on_event) {
  if (line.empty()) {
    if (has_data_) {
      SseEvent ev;
      ev.type = type_.empty() ? std::string_view("message") : std::string_view(type_);
      // Guarantee readable slack after the data so SIMD JSON parsers can
      // parse it in place without copying (simdjson needs 64 bytes).
      if (data_.capacity() < data_.size() + kPadding) data_.reserve(data_.size() + kPadding);
      ev.data = data_;
      ev.id = id_;
      ev.ts_ns = clock_();
      on_event(static_cast<const SseEvent&>(ev));
    }
    data_.clear();
    type_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') {
    ++comments_;
    return;
  }
  std::string_view field = line, value;
  if (auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    type_.assign(value);
  } else if (field == "id") {
    id_.assign(value);
  } else if (field == "error") {
    // Not in the spec, but llama.cpp's server reports a failed generation as
    // an `error: {json}` line inside a 200 stream (examples/server/utils.hpp,
    // server_sent_event(sink, "error", ...), revision c392e5094). Ignoring it
    // as the spec says would turn a failed request into an empty success, so
    // it becomes an event of type "error".
    type_.assign("error");
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  }
  // "retry" and unknown fields are ignored, as the spec says.
}

}  // namespace agentperf::net
