// Scripts that make the scripted server behave like an OpenAI-compatible
// endpoint: SSE chat/completions chunks on a fixed TTFT + inter-token
// schedule, with usage, optional reasoning and [DONE].
#pragma once
#include <chrono>
#include <string>

#include "testserver/scripted_server.h"

namespace agentperf::testserver {

struct StreamScript {
  bool chat = true;
  int tokens = 16;                 // content events to send
  int reasoning_tokens = 0;        // reasoning events sent before content
  std::chrono::nanoseconds ttft{0};
  std::chrono::nanoseconds itl{0};
  int tokens_per_event = 1;        // stream_interval-like batching
  bool include_usage = true;
  int prompt_tokens = 0;
  int cached_tokens = 0;
  bool send_done = true;
  std::string line_end = "\n";     // "\r\n" to test CRLF streams
};

// Text of one chunk event ("data: {...}\n\n") for token index i.
std::string sse_chunk_event(const StreamScript& s, int index, bool reasoning);
std::string sse_usage_event(const StreamScript& s);

ScriptedResponse openai_stream_response(const StreamScript& s);
ScriptedResponse openai_json_response(const StreamScript& s);

// Reads max_tokens (or max_completion_tokens) and stream from a request body
// and the prompt length (token-id array length, else whitespace-separated
// words); the fixed-pacing endpoint used by `agentperf run` and bench/.
struct ParsedCompletionRequest {
  bool chat = false;
  bool stream = false;
  int max_tokens = 16;
  int prompt_tokens = 0;
};
ParsedCompletionRequest parse_completion_request(const ReceivedRequest& req);

// A handler that answers /v1/completions and /v1/chat/completions with a
// fixed TTFT and inter-token latency, /v1/models with one model, /health.
Handler paced_openai_handler(std::chrono::nanoseconds ttft, std::chrono::nanoseconds itl,
                             int tokens_per_event = 1, std::string model = "agentperf-paced");

}  // namespace agentperf::testserver
