#include "sim/sim_server.h"

#include <malloc.h>
#include <simdjson.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>

#include "common/asio_aliases.h"
#include "common/asio_server.h"
#include "common/http_serve_loop.h"
#include "common/error.h"
#include "sim/front_end_queue.h"
#include "sim/prometheus.h"
#include "sim/stream_chunker.h"
#include "sim/text_tokens.h"

namespace agentperf::sim {

using namespace aio;

namespace {

// One request's events, delivered from the engine thread to the
// connection's event loop.
struct Channel {
  explicit Channel(asio::io_context& io) : timer(io, std::chrono::steady_clock::time_point::max()) {}
  std::deque<TokenEvent> events;
  asio::steady_timer timer;
};

struct GenerateRequest {
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  int max_tokens = 0;
  std::string model;
  std::shared_ptr<std::vector<Token>> prompt;
};

std::string chunk_frame(const std::string& data) {
  char head[24];
  const int n = std::snprintf(head, sizeof head, "%zx\r\n", data.size());
  std::string f(head, static_cast<std::size_t>(n));
  f += data;
  f += "\r\n";
  return f;
}

std::string token_text(int n, std::int64_t start) {
  static const char* words[] = {" the", " code", " is", " fine", " and", " we", " run", " it"};
  std::string s;
  for (int i = 0; i < n; ++i) s += words[(start + i) % 8];
  return s;
}

std::string error_json(int code, const std::string& type, const std::string& message) {
  return nlohmann::json{{"object", "error"}, {"message", message}, {"type", type}, {"code", code}}.dump();
}

nlohmann::json usage_json(const TokenEvent& ev) {
  return {{"prompt_tokens", ev.prompt_tokens},
          {"completion_tokens", ev.completion_tokens},
          {"total_tokens", ev.prompt_tokens + ev.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", ev.cached_tokens}}}};
}
}  // namespace

struct SimServer::Impl {
  std::unique_ptr<Engine> engine;
  SimServerOptions opts;
  std::string model_name;
  asio::io_context io{1};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  tcp::acceptor acceptor{io};
  std::thread io_thread, engine_thread;
  std::uint16_t port = 0;
  bool running = false;

  // Engine thread hand-off.
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  struct Submission {
    SimRequestSpec spec;
    std::function<void(const TokenEvent&)> sink;
    std::chrono::steady_clock::time_point arrived;
  };
  std::vector<Submission> submissions;
  mutable std::mutex stats_mu;
  EngineStats stats_snapshot;
  std::atomic<std::uint64_t> next_id{1};
  std::optional<FrontEndQueue> front_end;  // used on the io thread only

  Impl(std::unique_ptr<Engine> e, SimServerOptions o) : engine(std::move(e)), opts(std::move(o)) {
    front_end.emplace(engine->config().costs, engine->config().tokenizer_workers);
    model_name = opts.served_model_name.empty() ? engine->model().served_model_name : opts.served_model_name;
    stats_snapshot = engine->stats();
  }

  void engine_loop() {
    std::unordered_map<std::uint64_t, std::function<void(const TokenEvent&)>> sinks;
    auto next_start = std::chrono::steady_clock::now();
    for (;;) {
      {
        std::unique_lock lk(mu);
        if (!engine->has_work() && submissions.empty()) {
          cv.wait(lk, [&] { return stopping || !submissions.empty(); });
          next_start = std::chrono::steady_clock::now();
        }
        if (stopping) return;
        // A step that starts at next_start takes in only what had arrived
        // by then, as the virtual-time engine does: the model's clock runs
        // ahead of this thread (next_start is the last step's deadline,
        // and the events were published after it), and a request that
        // arrived in that gap would otherwise join a step that began
        // before it came. An idle engine starts at the first arrival.
        if (!engine->has_work() && !submissions.empty()) {
          auto first = submissions.front().arrived;
          for (const auto& sub : submissions) first = std::min(first, sub.arrived);
          next_start = std::max(next_start, first);
        }
        std::vector<Submission> later;
        for (auto& sub : submissions) {
          if (sub.arrived > next_start) {
            later.push_back(std::move(sub));
            continue;
          }
          sinks[sub.spec.id] = std::move(sub.sink);
          engine->submit(std::move(sub.spec));
        }
        submissions = std::move(later);
      }
      if (!engine->has_work()) continue;
      StepOutcome out = engine->step();
      const auto deadline =
          next_start + std::chrono::nanoseconds(static_cast<std::int64_t>(out.duration_s / opts.time_scale * 1e9));
      {
        std::unique_lock lk(mu);
        if (cv.wait_until(lk, deadline, [&] { return stopping; })) return;
      }
      // The counters first: a client that has read its last token and then
      // asks /metrics must find those tokens counted (they were published
      // after the release once, and a loaded machine showed the gap).
      {
        std::lock_guard lk(stats_mu);
        stats_snapshot = engine->stats();
      }
      for (const TokenEvent& ev : out.events) {
        auto it = sinks.find(ev.id);
        if (it == sinks.end()) continue;
        it->second(ev);
        if (ev.finished) sinks.erase(it);
      }
      // Keep to the model's clock; after an overrun, restart it from now.
      const auto now = std::chrono::steady_clock::now();
      next_start = now - deadline > std::chrono::milliseconds(5) ? now : deadline;
    }
  }

  std::shared_ptr<Channel> submit(SimRequestSpec spec) {
    auto ch = std::make_shared<Channel>(io);
    auto sink = [this, ch](const TokenEvent& ev) {
      asio::post(io, [ch, ev] {
        ch->events.push_back(ev);
        ch->timer.cancel();
      });
    };
    {
      std::lock_guard lk(mu);
      submissions.push_back({std::move(spec), std::move(sink), std::chrono::steady_clock::now()});
    }
    cv.notify_one();
    return ch;
  }

  template <class Body>
  asio::awaitable<bool> send(beast::tcp_stream& stream, http::response<Body>& res) {
    res.prepare_payload();
    auto [ec, n] = co_await http::async_write(stream, res, nothrow);
    co_return !ec;
  }

  asio::awaitable<bool> send_simple(beast::tcp_stream& stream, int version, bool keep_alive, http::status status,
                                    std::string content_type, std::string body) {
    http::response<http::string_body> res{status, version};
    res.set(http::field::content_type, content_type);
    res.keep_alive(keep_alive);
    res.body() = std::move(body);
    co_return co_await send(stream, res);
  }

  asio::awaitable<void> serve(tcp::socket sock) {
    beast::error_code ignored;
    sock.set_option(tcp::no_delay(true), ignored);
    beast::tcp_stream stream(std::move(sock));
    aio::ServeLimits limits;
    limits.max_body_bytes = opts.max_body_bytes;  // a 256k-token prompt is ~2 MB as token ids
    limits.idle_timeout = opts.idle_timeout;
    bool large_body = false;
    co_await serve_requests(
        stream, limits,
        [this, &stream, &large_body](http::request<http::string_body>& req) {
          large_body = large_body || req.body().size() > (std::size_t(8) << 20);
          return answer(stream, req);
        },
        [](const aio::Rejection& r) {
          http::response<http::string_body> res{static_cast<http::status>(r.status), 11};
          res.set(http::field::content_type, "application/json");
          res.body() = error_json(r.status, r.type, r.message);
          return res;
        });
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.socket().close(ignored);
    // The connection's buffers are freed by now; give the pages of a large
    // body back to the system rather than keep them in malloc's arenas.
    if (large_body) malloc_trim(0);
  }

  // One request: the engine's endpoints as SGLang names them.
  asio::awaitable<bool> answer(beast::tcp_stream& stream, http::request<http::string_body>& req) {
    const bool ka = req.keep_alive();
    const std::string target(req.target());
    if (req.method() == http::verb::get && (target == "/health" || target == "/health_generate"))
      co_return co_await send_simple(stream, req.version(), ka, http::status::ok, "application/json", "{}");
    if (req.method() == http::verb::get && target == "/v1/models") {
      nlohmann::json j = {{"object", "list"},
                          {"data", {{{"id", model_name}, {"object", "model"}, {"owned_by", "agentperf-sim"},
                                     {"max_model_len", engine->model().max_context}}}}};
      co_return co_await send_simple(stream, req.version(), ka, http::status::ok, "application/json", j.dump());
    }
    if (req.method() == http::verb::get && target == "/metrics") {
      EngineStats s;
      {
        std::lock_guard lk(stats_mu);
        s = stats_snapshot;
      }
      std::string text = prometheus_text(s, model_name, engine->config().hicache.enabled, engine->config().scheduler);
      co_return co_await send_simple(stream, req.version(), ka, http::status::ok, "text/plain; version=0.0.4",
                                     std::move(text));
    }
    if (req.method() == http::verb::post && (target == "/v1/completions" || target == "/v1/chat/completions"))
      co_return co_await generate(stream, req, target == "/v1/chat/completions");
    std::string body = error_json(404, "NotFoundError", "no route for " + std::string(req.method_string()) + " " + target);
    co_return co_await send_simple(stream, req.version(), ka, http::status::not_found, "application/json",
                                   std::move(body));
  }

  // Parses an OpenAI request body; returns an error message or empty.
  std::string parse_generate(const std::string& body, bool chat, GenerateRequest& g) {
    thread_local simdjson::dom::parser parser;
    simdjson::dom::element doc;
    simdjson::padded_string padded(body);
    if (auto err = parser.parse(padded).get(doc)) return std::string("request body is not valid JSON: ") + simdjson::error_message(err);
    simdjson::dom::object obj;
    if (doc.get_object().get(obj)) return "request body must be a JSON object";
    g.chat = chat;
    bool b = false;
    if (obj["stream"].get_bool().get(b) == simdjson::SUCCESS) g.stream = b;
    simdjson::dom::object so;
    if (obj["stream_options"].get_object().get(so) == simdjson::SUCCESS &&
        so["include_usage"].get_bool().get(b) == simdjson::SUCCESS)
      g.include_usage = b;
    // max_tokens (or max_completion_tokens) is an integer from 1 to 2^31 - 1
    // (the context check below then applies); anything else is a 400 naming
    // the field, as OpenAI-compatible servers answer, never a wrapped or a
    // silently substituted value.
    g.max_tokens = opts.default_max_tokens;
    for (const char* field : {"max_tokens", "max_completion_tokens"}) {
      simdjson::dom::element v;
      if (obj[field].get(v) != simdjson::SUCCESS || v.is_null()) continue;
      std::int64_t mt = 0;
      const std::int64_t limit = std::numeric_limits<int>::max();
      if (!v.is_int64() || v.get_int64().get(mt) != simdjson::SUCCESS || mt < 1 || mt > limit)
        return std::string("'") + field + "' must be an integer from 1 to " + std::to_string(limit) + ", got " +
               simdjson::to_string(v);
      g.max_tokens = static_cast<int>(mt);
      break;
    }
    g.prompt = std::make_shared<std::vector<Token>>();
    if (chat) {
      simdjson::dom::array msgs;
      if (obj["messages"].get_array().get(msgs)) return "'messages' must be an array of {role, content}";
      for (auto m : msgs) {
        std::string_view role, content;
        if (m["role"].get_string().get(role)) return "every message needs a string 'role'";
        auto r = pseudo_tokenize(role);
        g.prompt->insert(g.prompt->end(), r.begin(), r.end());
        simdjson::dom::array parts;
        if (m["content"].get_string().get(content) == simdjson::SUCCESS) {
          auto t = pseudo_tokenize(content);
          g.prompt->insert(g.prompt->end(), t.begin(), t.end());
        } else if (m["content"].get_array().get(parts) == simdjson::SUCCESS) {
          for (auto p : parts) {
            std::string_view text;
            if (p["text"].get_string().get(text) == simdjson::SUCCESS) {
              auto t = pseudo_tokenize(text);
              g.prompt->insert(g.prompt->end(), t.begin(), t.end());
            }
          }
        } else {
          return "message 'content' must be a string or an array of parts";
        }
      }
    } else {
      std::string_view text;
      simdjson::dom::array ids;
      if (obj["prompt"].get_string().get(text) == simdjson::SUCCESS) {
        *g.prompt = pseudo_tokenize(text);
      } else if (obj["prompt"].get_array().get(ids) == simdjson::SUCCESS) {
        g.prompt->reserve(ids.size());
        for (auto v : ids) {
          std::int64_t id;
          if (v.get_int64().get(id)) return "'prompt' must be a string or an array of token ids (one prompt per request)";
          if (id < 0 || id > std::numeric_limits<Token>::max())
            return "'prompt' token id " + std::to_string(id) + " is out of range (0 to " +
                   std::to_string(std::numeric_limits<Token>::max()) + ")";
          g.prompt->push_back(static_cast<Token>(id));
        }
      } else {
        return "'prompt' is missing (a string or an array of token ids)";
      }
    }
    if (g.prompt->empty()) return "the prompt is empty";
    const std::int64_t total = static_cast<std::int64_t>(g.prompt->size()) + g.max_tokens;
    if (total > engine->model().max_context)
      return "Requested token count exceeds the model's maximum context length of " +
             std::to_string(engine->model().max_context) + " tokens. You requested a total of " +
             std::to_string(total) + " tokens: " + std::to_string(g.prompt->size()) +
             " tokens from the input messages and " + std::to_string(g.max_tokens) + " tokens for the completion.";
    return {};
  }

  std::string chunk_json(const GenerateRequest& g, std::uint64_t id, const std::string& text, const char* finish) {
    nlohmann::json choice = {{"index", 0}, {"finish_reason", finish ? nlohmann::json(finish) : nlohmann::json(nullptr)}};
    if (g.chat) choice["delta"] = {{"role", "assistant"}, {"content", text}};
    else choice["text"] = text;
    return nlohmann::json{{"id", "sim-" + std::to_string(id)},
                          {"object", g.chat ? "chat.completion.chunk" : "text_completion"},
                          {"model", model_name},
                          {"choices", {choice}}}
        .dump();
  }

  asio::awaitable<bool> generate(beast::tcp_stream& stream, http::request<http::string_body>& req, bool chat) {
    GenerateRequest g;
    const bool ka = req.keep_alive();
    if (auto err = parse_generate(req.body(), chat, g); !err.empty())
      co_return co_await send_simple(stream, req.version(), ka, http::status::bad_request, "application/json",
                                     error_json(400, "BadRequestError", err));
    const std::uint64_t id = next_id++;
    const auto prompt_len = static_cast<std::int64_t>(g.prompt->size());
    // The engine's front end (HTTP, chat template, tokenising the whole
    // prompt, a queue per tokenizer worker) before the scheduler sees the
    // request, as the virtual-time client charges it; its clock is the
    // engine's (wall time x the time scale).
    if (!front_end->free_of_cost()) {
      const double now = static_cast<double>(std::chrono::steady_clock::now().time_since_epoch().count());
      const std::int64_t ready = front_end->admit(static_cast<std::int64_t>(now * opts.time_scale), prompt_len).done_ns;
      asio::steady_timer wait(io, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(
                                      static_cast<std::int64_t>(static_cast<double>(ready) / opts.time_scale))));
      co_await wait.async_wait(nothrow);
    }
    auto ch = submit(SimRequestSpec{id, g.prompt, g.max_tokens, prompt_len});

    if (!g.stream) {
      TokenEvent last;
      std::optional<std::string> error;
      for (bool done = false; !done;) {
        while (ch->events.empty()) {
          ch->timer.expires_at(std::chrono::steady_clock::time_point::max());
          co_await ch->timer.async_wait(nothrow);
        }
        while (!ch->events.empty()) {
          last = ch->events.front();
          ch->events.pop_front();
          if (last.error) error = last.error;
          done = done || last.finished;
        }
      }
      if (error)
        co_return co_await send_simple(stream, req.version(), ka, http::status::service_unavailable, "application/json",
                                       error_json(503, "ServiceUnavailableError", *error));
      nlohmann::json choice = {{"index", 0}, {"finish_reason", "length"}};
      const std::string text = token_text(static_cast<int>(last.completion_tokens), 0);
      if (chat) choice["message"] = {{"role", "assistant"}, {"content", text}};
      else choice["text"] = text;
      nlohmann::json j = {{"id", "sim-" + std::to_string(id)},
                          {"object", chat ? "chat.completion" : "text_completion"},
                          {"model", model_name},
                          {"choices", {choice}},
                          {"usage", usage_json(last)}};
      co_return co_await send_simple(stream, req.version(), ka, http::status::ok, "application/json", j.dump());
    }

    // HTTP/1.0 has no chunked encoding (nginx talks 1.0 to its upstreams
    // by default): the stream is then delimited by closing the connection.
    const bool chunked = req.version() >= 11;
    const auto frame = [chunked](const std::string& data) { return chunked ? chunk_frame(data) : data; };
    std::string head = chunked ? "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                                 "Transfer-Encoding: chunked\r\n"
                               : "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n";
    head += ka && chunked ? "\r\n" : "Connection: close\r\n\r\n";
    auto [hec, hn] = co_await asio::async_write(stream, asio::buffer(head), nothrow);
    if (hec) co_return false;
    StreamChunker chunker(engine->config().stream_interval);
    std::int64_t sent_tokens = 0;
    for (bool done = false; !done;) {
      while (ch->events.empty()) {
        ch->timer.expires_at(std::chrono::steady_clock::time_point::max());
        co_await ch->timer.async_wait(nothrow);
      }
      std::string out;
      while (!ch->events.empty()) {
        TokenEvent ev = ch->events.front();
        ch->events.pop_front();
        if (ev.error) {
          out += frame("data: " + nlohmann::json{{"error", {{"message", *ev.error}, {"type", "ServiceUnavailableError"}, {"code", 503}}}}.dump() + "\n\n");
          done = true;
          break;
        }
        if (const int n = chunker.on_tokens(ev.new_tokens, ev.first, ev.finished); n > 0) {
          out += frame("data: " + chunk_json(g, id, token_text(n, sent_tokens), ev.finished ? "length" : nullptr) + "\n\n");
          sent_tokens += n;
        }
        if (ev.finished) {
          if (g.include_usage) {
            nlohmann::json u = {{"id", "sim-" + std::to_string(id)},
                                {"object", g.chat ? "chat.completion.chunk" : "text_completion"},
                                {"model", model_name},
                                {"choices", nlohmann::json::array()},
                                {"usage", usage_json(ev)}};
            out += frame("data: " + u.dump() + "\n\n");
          }
          done = true;
          break;
        }
      }
      if (done) out += chunked ? chunk_frame("data: [DONE]\n\n") + "0\r\n\r\n" : std::string("data: [DONE]\n\n");
      auto [ec, n] = co_await asio::async_write(stream, asio::buffer(out), nothrow);
      if (ec) co_return false;  // the client left; the engine finishes the request on its own
    }
    co_return chunked;  // an HTTP/1.0 stream ends with the connection
  }
};

SimServer::SimServer(std::unique_ptr<Engine> engine, SimServerOptions opts)
    : impl_(std::make_unique<Impl>(std::move(engine), std::move(opts))) {
  if (!(impl_->opts.time_scale > 0)) throw UserError("--time-scale must be > 0");
}

SimServer::~SimServer() { stop(); }

void SimServer::start() {
  auto& d = *impl_;
  d.port = listen_on(d.acceptor, d.opts.host, d.opts.port);
  d.work.emplace(d.io.get_executor());
  asio::co_spawn(d.io, accept_each(d.acceptor, [&d](tcp::socket s) { return d.serve(std::move(s)); }), asio::detached);
  d.io_thread = std::thread([&d] { d.io.run(); });
  d.engine_thread = std::thread([&d] { d.engine_loop(); });
  d.running = true;
}

void SimServer::stop() {
  auto& d = *impl_;
  if (!d.running) return;
  d.running = false;
  {
    std::lock_guard lk(d.mu);
    d.stopping = true;
  }
  d.cv.notify_all();
  d.engine_thread.join();
  asio::post(d.io, [&d] {
    beast::error_code ec;
    d.acceptor.close(ec);
  });
  d.work.reset();
  d.io.stop();
  d.io_thread.join();
}

std::uint16_t SimServer::port() const { return impl_->port; }
std::string SimServer::url() const { return "http://" + impl_->opts.host + ":" + std::to_string(impl_->port); }
EngineStats SimServer::stats() const {
  std::lock_guard lk(impl_->stats_mu);
  return impl_->stats_snapshot;
}
const Engine& SimServer::engine() const { return *impl_->engine; }

}  // namespace agentperf::sim
