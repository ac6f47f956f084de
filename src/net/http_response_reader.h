// The client's HTTP/1.1 response reader: bytes in, a status line, headers
// and the body's bytes out, with no I/O and no allocation per body byte.
//
// Why not Beast's parser: a profile of the client at 30k streamed requests a
// second (docs/bench.md) put Beast's composed read operations, its stream
// timers and its parser at about a fifth of the client thread, for a job
// whose every response is one of three shapes. This reader keeps what the
// client needs and nothing else:
//   - the head (status line and fields) is collected, bounded at kHeadLimit,
//     and parsed once; interim 1xx answers are skipped (RFC 9110 15.2);
//   - the body is framed as RFC 9112 section 6.3 orders it: no body for 1xx,
//     204 and 304; chunked when Transfer-Encoding's last coding is chunked
//     (chunk extensions and trailer fields are read and dropped); else
//     Content-Length; else everything until the server closes;
//   - body bytes are handed back as views into the caller's read buffer (a
//     chunk's data is never copied), so the SSE parser reads them in place;
//   - keep-alive follows RFC 9112 section 9.3: HTTP/1.1 persists unless
//     "Connection: close"; HTTP/1.0 only with "Connection: keep-alive"; a
//     body delimited by the close never persists.
// Anything else (a bad status line, a field line without a colon, a chunk
// size that is not hex, a Content-Length that is not a number) is a protocol
// error with a one-line reason.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentperf::net {

// ASCII case-insensitive equality (HTTP field names and tokens).
bool ascii_iequals(std::string_view a, std::string_view b);

class HttpResponseReader {
 public:
  static constexpr std::size_t kHeadLimit = 64 << 10;  // status line and fields together
  static constexpr std::size_t kLineLimit = 4 << 10;   // a chunk-size or trailer line

  // Consumes bytes from the front of `in` until it yields body bytes, the
  // head completes, the message ends, an error occurs, or `in` is empty.
  // Returns the body bytes found (a view into `in`'s storage, possibly
  // empty). Call again while `in` is not empty and neither done() nor
  // failed(); check head_complete() after each call.
  std::string_view next(std::string_view& in);
  // The peer closed the connection: completes a body delimited by the close;
  // any other unfinished message stays incomplete (done() is false).
  void on_close();
  // Ready for the next response on the same connection (buffers keep their
  // capacity: a pooled connection reuses one reader).
  void reset();

  bool head_complete() const noexcept { return head_complete_; }
  bool done() const noexcept { return state_ == State::done; }
  bool failed() const noexcept { return state_ == State::failed; }
  const std::string& error() const noexcept { return error_; }
  // Bytes received so far, head and framing included: zero means the server
  // sent nothing at all.
  std::uint64_t bytes_seen() const noexcept { return bytes_seen_; }
  // Body bytes handed back (after de-chunking).
  std::uint64_t body_bytes() const noexcept { return body_bytes_; }

  int status() const noexcept { return status_; }
  std::string_view reason() const noexcept { return reason_; }
  // The first field of that name (case-insensitive), or empty.
  std::string_view field(std::string_view name) const;
  // Whether the connection may carry another request once done().
  bool keep_alive() const noexcept { return keep_alive_ && framing_ != Framing::until_close; }

 private:
  enum class State { head, body, chunk_size, chunk_data, chunk_data_end, trailers, done, failed };
  enum class Framing { none, length, chunked, until_close };

  std::string_view step(std::string_view& in);
  void fail(std::string why);
  bool parse_head();  // head_ holds one whole head; false on a protocol error
  void start_body();
  // Appends bytes of `in` up to and including the next '\n' to line_;
  // true once a whole line is there (line_ then holds it, CR/LF stripped).
  bool take_line(std::string_view& in);
  // Up to remaining_ bytes of `in` (a Content-Length body or a chunk's
  // data); the state becomes `after` once the last of them is taken.
  std::string_view take_counted(std::string_view& in, State after);

  State state_ = State::head;
  Framing framing_ = Framing::none;
  std::string error_;
  std::string head_;  // the head being collected, then the parsed one
  std::size_t head_scanned_ = 0;
  std::string line_;
  std::vector<std::pair<std::string_view, std::string_view>> fields_;  // views into head_
  std::string_view reason_;
  int status_ = 0;
  bool head_complete_ = false;  // the final (non-1xx) head was parsed
  bool http10_ = false;
  bool keep_alive_ = true;
  std::uint64_t remaining_ = 0;  // of the Content-Length body or the current chunk
  std::uint64_t bytes_seen_ = 0;
  std::uint64_t body_bytes_ = 0;
};

}  // namespace agentperf::net
