#include "net/http_response_reader.h"

#include <algorithm>
#include <cstring>

namespace agentperf::net {

namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Whether a comma-separated field value (Connection) lists `token`.
bool lists_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const auto comma = value.find(',');
    if (ascii_iequals(trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A field name is a token (RFC 9110 5.6.2): no whitespace, no separators
// that matter here.
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c <= ' ' || c == ':' || c == '"' || c == '(' || c == ')' || c == ',' || c == '/' || c == ';' || c == '<' ||
        c == '=' || c == '>' || c == '?' || c == '@' || c == '[' || c == '\\' || c == ']' || c == '{' || c == '}' ||
        c == 127)
      return false;
  return true;
}

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 40)) out += (c >= 32 && c < 127) ? c : '?';
  if (s.size() > 40) out += "...";
  return out;
}

}  // namespace

bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

void HttpResponseReader::fail(std::string why) {
  if (state_ == State::failed) return;
  state_ = State::failed;
  error_ = std::move(why);
}

std::string_view HttpResponseReader::field(std::string_view name) const {
  for (const auto& [k, v] : fields_)
    if (ascii_iequals(k, name)) return v;
  return {};
}

std::string_view HttpResponseReader::next(std::string_view& in) {
  const std::size_t before = in.size();
  const std::string_view piece = step(in);
  bytes_seen_ += before - in.size();
  body_bytes_ += piece.size();
  return piece;
}

bool HttpResponseReader::take_line(std::string_view& in) {
  const auto nl = in.find('\n');
  const std::size_t take = nl == std::string_view::npos ? in.size() : nl + 1;
  if (line_.size() + take > kLineLimit) {
    fail("a chunk-size or trailer line longer than " + std::to_string(kLineLimit) + " bytes");
    return false;
  }
  line_.append(in.data(), take);
  in.remove_prefix(take);
  if (nl == std::string_view::npos) return false;
  line_.pop_back();  // '\n'
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  return true;
}

std::string_view HttpResponseReader::take_counted(std::string_view& in, State after) {
  const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, in.size()));
  const std::string_view piece = in.substr(0, take);
  in.remove_prefix(take);
  remaining_ -= take;
  if (remaining_ == 0) state_ = after;
  return piece;
}

std::string_view HttpResponseReader::step(std::string_view& in) {
  while (!in.empty()) {
    switch (state_) {
      case State::head: {
        const std::size_t before = head_.size();
        head_.append(in.data(), std::min(in.size(), kHeadLimit + 4 - before));
        // The head ends at an empty line: "\n\r\n" or "\n\n".
        std::size_t end = std::string::npos;
        std::size_t i = head_scanned_;
        while (i < head_.size()) {
          const void* p = std::memchr(head_.data() + i, '\n', head_.size() - i);
          if (!p) {
            i = head_.size();
            break;
          }
          i = static_cast<std::size_t>(static_cast<const char*>(p) - head_.data());
          if (i + 1 >= head_.size()) break;  // the terminator may still be arriving
          if (head_[i + 1] == '\n') {
            end = i + 2;
            break;
          }
          if (head_[i + 1] == '\r') {
            if (i + 2 >= head_.size()) break;
            if (head_[i + 2] == '\n') {
              end = i + 3;
              break;
            }
          }
          ++i;
        }
        head_scanned_ = i;
        if (end == std::string::npos) {
          if (head_.size() > kHeadLimit) {
            fail("the response head is larger than " + std::to_string(kHeadLimit >> 10) + " KiB");
            return {};
          }
          in.remove_prefix(head_.size() - before);
          return {};
        }
        in.remove_prefix(end - before);
        head_.resize(end);
        if (!parse_head()) return {};
        if (status_ >= 100 && status_ < 200 && status_ != 101) {  // interim: the real answer follows
          head_.clear();
          fields_.clear();
          head_scanned_ = 0;
          continue;
        }
        start_body();
        head_complete_ = !failed();
        return {};
      }
      case State::body: {
        if (framing_ == Framing::until_close) {
          const std::string_view piece = in;
          in = {};
          return piece;
        }
        return take_counted(in, State::done);
      }
      case State::chunk_size: {
        if (!take_line(in)) return {};
        std::string_view size = line_;
        size = trim(size.substr(0, size.find(';')));  // chunk extensions are dropped
        std::uint64_t n = 0;
        bool ok = !size.empty() && size.size() <= 15;
        for (char c : size) {
          const int d = is_digit(c) ? c - '0' : (lower(c) >= 'a' && lower(c) <= 'f') ? lower(c) - 'a' + 10 : -1;
          if (d < 0) {
            ok = false;
            break;
          }
          n = n * 16 + static_cast<std::uint64_t>(d);
        }
        if (!ok) {
          fail("invalid chunk size line '" + printable(line_) + "'");
          return {};
        }
        line_.clear();
        remaining_ = n;
        state_ = n == 0 ? State::trailers : State::chunk_data;
        break;
      }
      case State::chunk_data: {
        return take_counted(in, State::chunk_data_end);
      }
      case State::chunk_data_end: {
        if (!take_line(in)) return {};
        if (!line_.empty()) {
          fail("a chunk is longer than its size line says");
          return {};
        }
        state_ = State::chunk_size;
        break;
      }
      case State::trailers: {
        if (!take_line(in)) return {};
        const bool last = line_.empty();  // trailer fields are read and dropped
        line_.clear();
        if (last) state_ = State::done;
        break;
      }
      case State::done:
      case State::failed:
        return {};
    }
  }
  return {};
}

bool HttpResponseReader::parse_head() {
  std::string_view rest(head_);
  auto next_line = [&rest]() {
    const auto nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  };
  const std::string_view status_line = next_line();
  // "HTTP/1.x SSS reason"
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || !is_digit(status_line[7]) ||
      status_line[8] != ' ' || !is_digit(status_line[9]) || !is_digit(status_line[10]) ||
      !is_digit(status_line[11]) || (status_line.size() > 12 && status_line[12] != ' ')) {
    fail("bad status line '" + printable(status_line) + "'");
    return false;
  }
  http10_ = status_line[7] == '0';
  status_ = (status_line[9] - '0') * 100 + (status_line[10] - '0') * 10 + (status_line[11] - '0');
  reason_ = status_line.size() > 13 ? status_line.substr(13) : std::string_view{};
  fields_.clear();
  while (!rest.empty()) {
    const std::string_view line = next_line();
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t') {
      fail("a folded header line (obsolete in HTTP/1.1)");
      return false;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
      fail("bad header line '" + printable(line) + "'");
      return false;
    }
    fields_.emplace_back(line.substr(0, colon), trim(line.substr(colon + 1)));
  }
  const std::string_view connection = field("connection");
  keep_alive_ = http10_ ? lists_token(connection, "keep-alive") : !lists_token(connection, "close");
  return true;
}

void HttpResponseReader::start_body() {
  state_ = State::body;
  if (status_ == 204 || status_ == 304 || status_ == 101) {
    framing_ = Framing::none;
    if (status_ == 101) keep_alive_ = false;
    state_ = State::done;
    return;
  }
  if (const std::string_view te = field("transfer-encoding"); !te.empty()) {
    const auto comma = te.rfind(',');
    const std::string_view last = trim(comma == std::string_view::npos ? te : te.substr(comma + 1));
    framing_ = ascii_iequals(last, "chunked") ? Framing::chunked : Framing::until_close;
    if (framing_ == Framing::chunked) state_ = State::chunk_size;
    return;
  }
  bool have_length = false;
  std::uint64_t length = 0;
  for (const auto& [k, v] : fields_) {
    if (!ascii_iequals(k, "content-length")) continue;
    std::uint64_t n = 0;
    bool ok = !v.empty() && v.size() <= 18;
    for (char c : v) {
      if (!is_digit(c)) {
        ok = false;
        break;
      }
      n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (!ok || (have_length && n != length)) {
      fail("invalid Content-Length '" + printable(v) + "'");
      return;
    }
    have_length = true;
    length = n;
  }
  if (have_length) {
    framing_ = Framing::length;
    remaining_ = length;
    if (length == 0) state_ = State::done;
    return;
  }
  framing_ = Framing::until_close;
}

void HttpResponseReader::reset() {
  state_ = State::head;
  framing_ = Framing::none;
  error_.clear();
  head_.clear();
  head_scanned_ = 0;
  line_.clear();
  fields_.clear();
  reason_ = {};
  status_ = 0;
  head_complete_ = false;
  http10_ = false;
  keep_alive_ = true;
  remaining_ = bytes_seen_ = body_bytes_ = 0;
}

void HttpResponseReader::on_close() {
  if (state_ == State::body && framing_ == Framing::until_close) state_ = State::done;
}

}  // namespace agentperf::net
