#include "net/openai_response.h"

#include <simdjson.h>

#include "common/utf8.h"

namespace agentperf::net {
namespace {

simdjson::dom::parser& thread_parser() {
  thread_local simdjson::dom::parser parser;
  return parser;
}

std::string_view string_or_empty(simdjson::dom::element el) {
  std::string_view s;
  if (el.get_string().get(s) == simdjson::SUCCESS) return s;
  return {};
}

std::optional<std::int64_t> int_field(simdjson::dom::object obj, std::string_view key) {
  simdjson::dom::element el;
  if (obj[key].get(el) != simdjson::SUCCESS) return std::nullopt;
  std::int64_t v;
  if (el.get_int64().get(v) == simdjson::SUCCESS) return v;
  double d;
  if (el.get_double().get(d) == simdjson::SUCCESS) return static_cast<std::int64_t>(d);
  return std::nullopt;
}

// Both error shapes in the wild: {"error": {...}} (OpenAI, vLLM) and
// {"object": "error", "message": ...} (SGLang, older vLLM).
std::optional<ErrorInfo> error_from_json(simdjson::dom::object obj, int default_code) {
  simdjson::dom::element err;
  simdjson::dom::object eobj;
  if (obj["error"].get(err) == simdjson::SUCCESS && !err.is_null()) {
    ErrorInfo info;
    info.code = default_code;
    if (err.get_object().get(eobj) == simdjson::SUCCESS) {
      simdjson::dom::element m;
      if (eobj["message"].get(m) == simdjson::SUCCESS) info.message = std::string(string_or_empty(m));
      simdjson::dom::element t;
      if (eobj["type"].get(t) == simdjson::SUCCESS) info.type = std::string(string_or_empty(t));
      if (auto c = int_field(eobj, "code")) info.code = static_cast<int>(*c);
    } else {
      info.message = std::string(string_or_empty(err));
    }
    if (info.type.empty()) info.type = "ServerError";
    if (info.message.empty()) info.message = simdjson::minify(err);
    return info;
  }
  simdjson::dom::element object_el;
  if (obj["object"].get(object_el) == simdjson::SUCCESS && string_or_empty(object_el) == "error") {
    ErrorInfo info;
    info.code = default_code;
    simdjson::dom::element m;
    if (obj["message"].get(m) == simdjson::SUCCESS) info.message = std::string(string_or_empty(m));
    simdjson::dom::element t;
    if (obj["type"].get(t) == simdjson::SUCCESS) info.type = std::string(string_or_empty(t));
    if (auto c = int_field(obj, "code")) info.code = static_cast<int>(*c);
    if (info.type.empty()) info.type = "ServerError";
    return info;
  }
  return std::nullopt;
}

}  // namespace

std::string summarize_body(std::string_view body, std::size_t max_chars) {
  // Whatever bytes a server sends end up in a JSON record: invalid UTF-8
  // becomes U+FFFD and control bytes become spaces, so no export can fail.
  std::string out = sanitize_utf8(body.substr(0, std::min(body.size(), max_chars)));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  if (body.size() > max_chars) out += "... (" + std::to_string(body.size()) + " bytes)";
  return out;
}

void OpenAIResponseParser::on_event(const SseEvent& ev) {
  if (rec_.error) return;  // first error wins; later events are noise
  if (ev.type == "error") {
    rec_.error = ErrorInfo{502, "SSEResponseError", "server sent an SSE error event: " + summarize_body(ev.data)};
    // The server's own message where the payload is an OpenAI-style error.
    simdjson::dom::element doc;
    simdjson::dom::object obj;
    if (thread_parser().parse(ev.data.data(), ev.data.size(), true).get(doc) == simdjson::SUCCESS &&
        doc.get_object().get(obj) == simdjson::SUCCESS) {
      simdjson::dom::element inner;
      if (obj["error"].get(inner) != simdjson::SUCCESS || inner.is_null()) inner = doc;
      simdjson::dom::object eobj;
      simdjson::dom::element m;
      if (inner.get_object().get(eobj) == simdjson::SUCCESS && eobj["message"].get(m) == simdjson::SUCCESS &&
          !string_or_empty(m).empty()) {
        rec_.error->message = "server sent an SSE error event: " + summarize_body(string_or_empty(m));
        if (auto c = int_field(eobj, "code")) rec_.error->code = static_cast<int>(*c);
      }
    }
    return;
  }
  if (ev.data == "[DONE]") {
    rec_.saw_done = true;
    return;
  }
  if (ev.data.empty()) return;
  parse_json(ev.data.data(), ev.data.size(), ev.data.size() + SseParser::kPadding, ev.ts_ns, true);
}

void OpenAIResponseParser::on_body(std::string& body, std::int64_t ts_ns) {
  if (body.capacity() < body.size() + SseParser::kPadding) body.reserve(body.size() + SseParser::kPadding);
  parse_json(body.data(), body.size(), body.capacity(), ts_ns, false);
  if (!rec_.error && rec_.content_ns.empty()) {
    // A non-streamed answer with no text (e.g. max_tokens reached on
    // whitespace) still ends at ts: record it so latency is defined.
    rec_.content_ns.push_back(ts_ns);
  }
}

void OpenAIResponseParser::parse_json(const char* data, std::size_t len, std::size_t capacity,
                                      std::int64_t ts_ns, bool streamed) {
  auto& parser = thread_parser();
  simdjson::dom::element doc;
  auto ec = capacity >= len + simdjson::SIMDJSON_PADDING
                ? parser.parse(reinterpret_cast<const std::uint8_t*>(data), len, false).get(doc)
                : parser.parse(reinterpret_cast<const std::uint8_t*>(data), len, true).get(doc);
  if (ec) {
    rec_.error = ErrorInfo{std::nullopt, "InvalidResponse",
                           std::string("response is not valid JSON (") + simdjson::error_message(ec) +
                               "): " + summarize_body(std::string_view(data, len))};
    return;
  }
  simdjson::dom::object obj;
  if (doc.get_object().get(obj)) {
    rec_.error = ErrorInfo{std::nullopt, "InvalidResponse",
                           "response JSON is not an object: " + summarize_body(std::string_view(data, len))};
    return;
  }
  if (auto err = error_from_json(obj, streamed ? 502 : (rec_.http_status ? rec_.http_status : 500))) {
    rec_.error = std::move(err);
    return;
  }

  bool has_content = false, has_reasoning = false;
  auto take = [&](std::string_view s, bool& seen, std::size_t& bytes) {
    if (s.empty()) return;
    seen = true;
    bytes += s.size();
    if (rec_.capture_text) rec_.output_text += s;
  };
  simdjson::dom::array choices;
  if (obj["choices"].get_array().get(choices) == simdjson::SUCCESS) {
    for (simdjson::dom::element choice : choices) {
      simdjson::dom::object c;
      if (choice.get_object().get(c)) continue;
      simdjson::dom::object msg;
      const char* msg_key = streamed ? "delta" : "message";
      if (c[msg_key].get_object().get(msg) == simdjson::SUCCESS) {
        simdjson::dom::element v;
        if (msg["content"].get(v) == simdjson::SUCCESS) {
          take(string_or_empty(v), has_content, rec_.content_bytes);
        }
        // vLLM names it "reasoning", SGLang and DeepSeek "reasoning_content".
        for (const char* key : {"reasoning_content", "reasoning"}) {
          if (msg[key].get(v) == simdjson::SUCCESS) {
            take(string_or_empty(v), has_reasoning, rec_.reasoning_bytes);
          }
        }
      }
      simdjson::dom::element finish;
      if (c["finish_reason"].get(finish) == simdjson::SUCCESS && !finish.is_null()) rec_.saw_finish_reason = true;
      simdjson::dom::element text;
      if (c["text"].get(text) == simdjson::SUCCESS) {
        take(string_or_empty(text), has_content, rec_.content_bytes);
      }
    }
  }
  if (has_content) ++rec_.content_events;
  if (has_reasoning) ++rec_.reasoning_events;
  if (has_content || has_reasoning) rec_.content_ns.push_back(ts_ns);

  simdjson::dom::object timings;
  if (obj["timings"].get_object().get(timings) == simdjson::SUCCESS) {
    ServerTimings t;
    t.prompt_n = int_field(timings, "prompt_n");
    t.predicted_n = int_field(timings, "predicted_n");
    t.cache_n = int_field(timings, "cache_n");
    double d;
    if (timings["prompt_ms"].get_double().get(d) == simdjson::SUCCESS) t.prompt_ms = d;
    if (timings["predicted_ms"].get_double().get(d) == simdjson::SUCCESS) t.predicted_ms = d;
    rec_.server_timings = t;
  }

  simdjson::dom::object usage;
  if (obj["usage"].get_object().get(usage) == simdjson::SUCCESS) {
    if (auto v = int_field(usage, "prompt_tokens")) rec_.usage_prompt_tokens = v;
    if (auto v = int_field(usage, "completion_tokens")) rec_.usage_completion_tokens = v;
    if (auto v = int_field(usage, "total_tokens")) rec_.usage_total_tokens = v;
    simdjson::dom::object details;
    if (usage["prompt_tokens_details"].get_object().get(details) == simdjson::SUCCESS) {
      if (auto v = int_field(details, "cached_tokens")) rec_.usage_cached_tokens = v;
    }
    if (usage["completion_tokens_details"].get_object().get(details) == simdjson::SUCCESS) {
      if (auto v = int_field(details, "reasoning_tokens")) rec_.usage_reasoning_tokens = v;
    }
    if (!rec_.usage_reasoning_tokens) {
      if (auto v = int_field(usage, "reasoning_tokens")) rec_.usage_reasoning_tokens = v;
    }
  }
}

ErrorInfo OpenAIResponseParser::http_error(int status, std::string_view reason, std::string_view body) {
  ErrorInfo info;
  info.code = status;
  info.type = reason.empty() ? "HTTP " + std::to_string(status) : sanitize_utf8(reason);
  std::string padded(body);
  auto& parser = thread_parser();
  simdjson::dom::element doc;
  simdjson::dom::object obj;
  if (!body.empty() && parser.parse(padded).get(doc) == simdjson::SUCCESS &&
      doc.get_object().get(obj) == simdjson::SUCCESS) {
    if (auto e = error_from_json(obj, status); e && !e->message.empty()) {
      info.message = "HTTP " + std::to_string(status) + ": " + e->message;
      return info;
    }
  }
  info.message = "HTTP " + std::to_string(status) + " " + sanitize_utf8(reason) +
                 (body.empty() ? "" : ": " + summarize_body(body));
  return info;
}

}  // namespace agentperf::net
