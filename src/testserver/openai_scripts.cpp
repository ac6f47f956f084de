#include "testserver/openai_scripts.h"

#include <simdjson.h>

namespace agentperf::testserver {

std::string sse_chunk_event(const StreamScript& s, int index, bool reasoning) {
  std::string text;
  for (int t = 0; t < s.tokens_per_event; ++t) text += reasoning ? " think" : " tok";
  std::string payload;
  if (s.chat) {
    payload = R"({"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{)";
    payload += reasoning ? R"("reasoning_content":")" : R"("content":")";
    payload += text + R"("},"finish_reason":null}]})";
  } else {
    payload = R"({"id":"cmpl-1","object":"text_completion","model":"m","choices":[{"index":0,"text":")" + text +
              R"(","finish_reason":null}]})";
  }
  (void)index;
  return "data: " + payload + s.line_end + s.line_end;
}

std::string sse_usage_event(const StreamScript& s) {
  const int completion = (s.tokens + s.reasoning_tokens) * s.tokens_per_event;
  std::string payload = R"({"id":"x","object":")" + std::string(s.chat ? "chat.completion.chunk" : "text_completion") +
                        R"(","choices":[],"usage":{"prompt_tokens":)" + std::to_string(s.prompt_tokens) +
                        R"(,"completion_tokens":)" + std::to_string(completion) +
                        R"(,"total_tokens":)" + std::to_string(s.prompt_tokens + completion) +
                        R"(,"prompt_tokens_details":{"cached_tokens":)" + std::to_string(s.cached_tokens) + "}}}";
  return "data: " + payload + s.line_end + s.line_end;
}

ScriptedResponse openai_stream_response(const StreamScript& s) {
  ScriptedResponse r;
  r.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  int index = 0;
  const int total = s.reasoning_tokens + s.tokens;
  for (int i = 0; i < total; ++i, ++index) {
    auto at = s.ttft + s.itl * i;
    r.steps.push_back({at, sse_chunk_event(s, index, i < s.reasoning_tokens)});
  }
  const auto end_at = total > 0 ? s.ttft + s.itl * (total - 1) : s.ttft;
  if (s.include_usage) r.steps.push_back({end_at, sse_usage_event(s)});
  if (s.send_done) r.steps.push_back({end_at, "data: [DONE]" + s.line_end + s.line_end});
  return r;
}

ScriptedResponse openai_json_response(const StreamScript& s) {
  ScriptedResponse r;
  r.headers = {{"Content-Type", "application/json"}};
  r.framing = ScriptedResponse::Framing::content_length;
  std::string text;
  for (int i = 0; i < s.tokens * s.tokens_per_event; ++i) text += " tok";
  const int completion = s.tokens * s.tokens_per_event;
  std::string usage = R"("usage":{"prompt_tokens":)" + std::to_string(s.prompt_tokens) + R"(,"completion_tokens":)" +
                      std::to_string(completion) + R"(,"total_tokens":)" +
                      std::to_string(s.prompt_tokens + completion) + R"(,"prompt_tokens_details":{"cached_tokens":)" +
                      std::to_string(s.cached_tokens) + "}}";
  std::string body = s.chat ? R"({"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":")" +
                                  text + R"("},"finish_reason":"length"}],)" + usage + "}"
                            : R"({"id":"c","object":"text_completion","choices":[{"index":0,"text":")" + text +
                                  R"(","finish_reason":"length"}],)" + usage + "}";
  r.steps.push_back({s.ttft + s.itl * std::max(0, s.tokens - 1), std::move(body)});
  return r;
}

ParsedCompletionRequest parse_completion_request(const ReceivedRequest& req) {
  ParsedCompletionRequest out;
  out.chat = req.target.find("/chat/") != std::string::npos;
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(req.body).get(doc)) return out;
  bool stream = false;
  if (doc["stream"].get_bool().get(stream) == simdjson::SUCCESS) out.stream = stream;
  std::int64_t mt = 0;
  if (doc["max_tokens"].get_int64().get(mt) == simdjson::SUCCESS ||
      doc["max_completion_tokens"].get_int64().get(mt) == simdjson::SUCCESS)
    out.max_tokens = static_cast<int>(mt);
  simdjson::dom::array arr;
  std::string_view text;
  auto count_words = [](std::string_view t) {
    int words = 0;
    bool in = false;
    for (char c : t) {
      bool space = c == ' ' || c == '\n' || c == '\t';
      if (!space && !in) ++words;
      in = !space;
    }
    return words;
  };
  if (doc["prompt"].get_array().get(arr) == simdjson::SUCCESS) {
    out.prompt_tokens = static_cast<int>(arr.size());
  } else if (doc["prompt"].get_string().get(text) == simdjson::SUCCESS) {
    out.prompt_tokens = count_words(text);
  } else if (doc["messages"].get_array().get(arr) == simdjson::SUCCESS) {
    for (auto m : arr)
      if (m["content"].get_string().get(text) == simdjson::SUCCESS) out.prompt_tokens += count_words(text);
  }
  return out;
}

Handler paced_openai_handler(std::chrono::nanoseconds ttft, std::chrono::nanoseconds itl, int tokens_per_event,
                             std::string model) {
  return [=](const ReceivedRequest& req) -> ScriptedResponse {
    if (req.target == "/health" || req.target == "/v1/models") {
      ScriptedResponse r;
      r.framing = ScriptedResponse::Framing::content_length;
      r.headers = {{"Content-Type", "application/json"}};
      r.steps.push_back({std::chrono::nanoseconds(0),
                         req.target == "/health" ? std::string("{}")
                                                 : R"({"object":"list","data":[{"id":")" + model +
                                                       R"(","object":"model"}]})"});
      return r;
    }
    if (req.target != "/v1/completions" && req.target != "/v1/chat/completions") {
      ScriptedResponse r;
      r.status = 404;
      r.reason = "Not Found";
      r.framing = ScriptedResponse::Framing::content_length;
      r.headers = {{"Content-Type", "application/json"}};
      r.steps.push_back({std::chrono::nanoseconds(0), R"({"object":"error","message":"no route )" + req.target +
                                                          R"(","type":"NotFound","code":404})"});
      return r;
    }
    auto parsed = parse_completion_request(req);
    StreamScript s;
    s.chat = parsed.chat;
    s.tokens_per_event = std::max(1, tokens_per_event);
    s.tokens = std::max(1, (parsed.max_tokens + s.tokens_per_event - 1) / s.tokens_per_event);
    s.ttft = ttft;
    s.itl = itl * s.tokens_per_event;
    s.prompt_tokens = parsed.prompt_tokens;
    return parsed.stream ? openai_stream_response(s) : openai_json_response(s);
  };
}

}  // namespace agentperf::testserver
