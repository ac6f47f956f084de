// Interprets OpenAI-compatible responses (chat and completions, streamed or
// not) into a RequestRecord: content stamps, usage, errors. Each SSE event is
// parsed exactly once, in place, as it arrives.
#pragma once
#include <string>
#include <string_view>

#include "common/record.h"
#include "net/sse_parser.h"

namespace agentperf::net {

class OpenAIResponseParser {
 public:
  explicit OpenAIResponseParser(RequestRecord& record) : rec_(record) {}

  // One SSE event of a streamed response. Its data has SseParser::kPadding
  // bytes of slack, so it is parsed without a copy.
  void on_event(const SseEvent& ev);

  // A complete non-streamed body, received at ts_ns.
  void on_body(std::string& body, std::int64_t ts_ns);

  bool done() const noexcept { return rec_.saw_done; }

  // Error record for a non-2xx status: the server's own message when the body
  // is an OpenAI-style error object, else the (truncated) body.
  static ErrorInfo http_error(int status, std::string_view reason, std::string_view body);

 private:
  void parse_json(const char* data, std::size_t len, std::size_t capacity, std::int64_t ts_ns,
                  bool streamed);
  RequestRecord& rec_;
};

// Trims long bodies for error messages; keeps them on one line.
std::string summarize_body(std::string_view body, std::size_t max_chars = 500);

}  // namespace agentperf::net
