// When a streamed response flushes an SSE chunk, as SGLang's detokenizer
// does: on the first token, on finish, and every `stream_interval` decode
// forwards in between. Shared by the HTTP front end and the virtual-time
// predictor so both see the same chunk timing.
#pragma once

namespace agentperf::sim {

class StreamChunker {
 public:
  explicit StreamChunker(int stream_interval) : interval_(stream_interval < 1 ? 1 : stream_interval) {}
  // Called once per engine step that produced tokens for the request;
  // returns how many tokens to flush now (0 = hold them).
  int on_tokens(int new_tokens, bool first, bool finished) {
    pending_ += new_tokens;
    ++forwards_;
    if (first || finished || forwards_ % interval_ == 0) {
      const int n = pending_;
      pending_ = 0;
      return n;
    }
    return 0;
  }

 private:
  int interval_;
  int pending_ = 0;
  long forwards_ = 0;
};

}  // namespace agentperf::sim
