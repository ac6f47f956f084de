#include "route/router_server.h"

#include <atomic>
#include <cstdio>
#include <tuple>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/asio_aliases.h"
#include "common/asio_server.h"
#include "common/http_serve_loop.h"
#include "common/error.h"
#include "net/url.h"
#include "route/backend_pool.h"
#include "route/health_checker.h"
#include "route/prefix_index.h"
#include "route/router_metrics.h"

namespace agentperf::route {

using namespace aio;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string error_json(int code, const std::string& type, const std::string& message) {
  return nlohmann::json{{"error", {{"message", message}, {"type", type}, {"code", code}}}}.dump();
}

// Headers that describe one hop's connection, not the message (RFC 9110 §7.6.1).
void strip_hop_by_hop(http::fields& f) {
  for (auto field : {http::field::connection, http::field::keep_alive, http::field::proxy_connection, http::field::te,
                     http::field::trailer, http::field::upgrade, http::field::proxy_authorization})
    f.erase(field);
}

// The first non-empty of `key_headers` (field lookup is case-insensitive).
std::string routing_key(const http::fields& fields, const std::vector<std::string>& key_headers) {
  for (const auto& name : key_headers)
    if (auto it = fields.find(name); it != fields.end() && !it->value().empty()) return std::string(it->value());
  return {};
}

struct Backend {
  net::Url url;
  std::string name;  // as given on the command line
  HealthState health;
  BackendStats stats;
  BackendPool pool;
};

}  // namespace

struct RouterServer::Impl {
  RouterOptions opts;
  std::atomic<bool> running{false}, stopping{false};

  mutable std::mutex mu;  // the routing state below
  std::vector<Backend> backends;
  std::vector<TargetState> targets;
  std::unique_ptr<RoutingPolicy> policy;
  RouterStats counters;  // decisions, rejected, bad_requests, route time
  std::size_t models_rr = 0;
  Clock::time_point epoch = Clock::now();

  // Declared after the routing state: destroying the io_context destroys
  // suspended request coroutines, whose cleanup still updates that state.
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  tcp::acceptor acceptor{io};
  std::vector<std::thread> threads;
  std::uint16_t port = 0;

  explicit Impl(RouterOptions o) : opts(std::move(o)) {
    if (opts.backends.empty()) throw UserError("route: at least one --backend is needed");
    if (opts.dp_size < 1) throw UserError("route: --dp-size must be >= 1");
    if (opts.eject_after < 1 || opts.readmit_after < 1) throw UserError("route: --eject-after and --readmit-after must be >= 1");
    for (const auto& b : opts.backends) {
      Backend be;
      be.url = net::parse_url(b);
      if (be.url.tls) throw UserError("route: backend '" + b + "': https backends are not supported (the router speaks HTTP/1.1 to backends)");
      be.name = be.url.origin();
      for (const auto& other : backends)
        if (other.name == be.name)
          throw UserError("route: --backend '" + b + "' is given twice (as " + other.name +
                          "): each backend is one set of targets");
      try {
        // Resolved once here, so a typo fails at start, not as 502s later.
        asio::io_context resolve_io;
        tcp::resolver resolver(resolve_io);
        resolver.resolve(be.url.host, std::to_string(be.url.port));
      } catch (const std::exception& e) {
        throw UserError("route: --backend '" + b + "': cannot resolve host '" + be.url.host + "': " + e.what());
      }
      be.stats.url = be.name;
      backends.push_back(std::move(be));
    }
    targets.resize(backends.size() * opts.dp_size);
    policy = make_policy(opts.policy, static_cast<int>(targets.size()), opts.policy_opts);
  }

  int backend_of(int target) const { return target / opts.dp_size; }
  int rank_of(int target) const { return target % opts.dp_size; }

  // --- health ---------------------------------------------------------------

  // One result (a probe, or a request's outcome) for a backend; under mu.
  void record_result_locked(int b, bool ok) {
    Backend& be = backends[b];
    switch (record_health(be.health, ok, opts.eject_after, opts.readmit_after)) {
      case HealthChange::readmitted:
        ++be.stats.readmissions;
        set_targets_health_locked(b, true);
        if (opts.log_health_changes)
          std::fprintf(stderr, "agentperf route: backend %s readmitted after %d passing probe(s)\n", be.name.c_str(),
                       opts.readmit_after);
        break;
      case HealthChange::ejected:
        ++be.stats.ejections;
        be.pool.clear();
        set_targets_health_locked(b, false);
        if (opts.log_health_changes)
          std::fprintf(stderr, "agentperf route: backend %s ejected after %d consecutive failure(s)\n", be.name.c_str(),
                       opts.eject_after);
        break;
      case HealthChange::none:
        break;
    }
  }
  void set_targets_health_locked(int b, bool healthy) {
    for (int r = 0; r < opts.dp_size; ++r) {
      const int t = b * opts.dp_size + r;
      targets[t].healthy = healthy;
      if (!healthy) policy->target_lost(t);
    }
  }
  void record_result(int b, bool ok) {
    std::lock_guard lk(mu);
    record_result_locked(b, ok);
  }

  // --- backend connections ----------------------------------------------------

  // A pooled connection (reused = true) or a new one.
  asio::awaitable<BackendConn> acquire(int b, std::string& error, bool& reused) {
    {
      std::lock_guard lk(mu);
      if (auto c = backends[b].pool.take(opts.pool_idle_limit)) {
        reused = true;
        co_return c;
      }
    }
    reused = false;
    co_return co_await connect_backend(backends[b].url, opts.connect_timeout, error);
  }

  void release(int b, BackendConn s) {
    std::lock_guard lk(mu);
    if (!backends[b].health.healthy) return;
    backends[b].pool.put(std::move(s));
  }

  // --- client side ------------------------------------------------------------

  // Responses are built by plain functions and only then awaited: GCC 12
  // destroys some temporaries of a co_await full-expression twice (string
  // temporaries under ?: in the arguments did, here).
  static http::response<http::string_body> make_reply(unsigned version, bool keep_alive, http::status status,
                                                      const char* content_type, std::string body, int retry_after = 0) {
    http::response<http::string_body> res{status, version};
    res.set(http::field::content_type, content_type);
    res.set(http::field::server, "agentperf-route");
    if (retry_after > 0) res.set(http::field::retry_after, std::to_string(retry_after));
    res.keep_alive(keep_alive);
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
  }
  static http::response<http::string_body> make_error(unsigned version, bool keep_alive, int code, const char* type,
                                                      const std::string& message, int retry_after = 0) {
    return make_reply(version, keep_alive, static_cast<http::status>(code), "application/json",
                      error_json(code, type, message), retry_after);
  }

  asio::awaitable<bool> send(beast::tcp_stream& client, http::response<http::string_body>& res) {
    client.expires_after(std::chrono::seconds(60));
    auto [ec, n] = co_await http::async_write(client, res, nothrow);
    client.expires_never();
    co_return !ec;
  }

  asio::awaitable<void> serve(tcp::socket sock) {
    beast::error_code ignored;
    sock.set_option(tcp::no_delay(true), ignored);
    beast::tcp_stream client(std::move(sock));
    aio::ServeLimits limits;
    limits.max_body_bytes = opts.max_body_bytes;
    limits.idle_timeout = opts.client_idle_timeout;
    const auto end = co_await serve_requests(
        client, limits, [this, &client](http::request<http::string_body>& req) { return answer(client, req); },
        [](const aio::Rejection& r) { return make_error(11, false, r.status, r.type.c_str(), r.message); });
    if (end == aio::ConnectionEnd::bad_request) {
      std::lock_guard lk(mu);
      ++counters.bad_requests;
    }
    client.socket().shutdown(tcp::socket::shutdown_both, ignored);
    client.socket().close(ignored);
  }

  // One request from a client: the router's own endpoints, or a proxied call.
  asio::awaitable<bool> answer(beast::tcp_stream& client, http::request<http::string_body>& req) {
    const bool ka = req.keep_alive();
    const std::string target(req.target());
    if (req.method() == http::verb::get && target == "/health") {
      bool any = false;
      {
        std::lock_guard lk(mu);
        for (const auto& b : backends) any = any || b.health.healthy;
      }
      auto res = any ? make_reply(req.version(), ka, http::status::ok, "application/json", "{}")
                     : make_error(req.version(), ka, 503, "ServiceUnavailable", "no healthy backend");
      co_return co_await send(client, res);
    }
    if (req.method() == http::verb::get && target == "/metrics") {
      auto res = make_reply(req.version(), ka, http::status::ok, "text/plain; version=0.0.4", metrics());
      co_return co_await send(client, res);
    }
    if (req.method() == http::verb::get && target == "/router/backends") {
      auto res = make_reply(req.version(), ka, http::status::ok, "application/json", backends_json());
      co_return co_await send(client, res);
    }
    co_return co_await proxy(client, std::move(req));
  }

  // Decrements a target's outstanding count however the request ends.
  struct Outstanding {
    Impl* d;
    int target;
    ~Outstanding() {
      std::lock_guard lk(d->mu);
      --d->targets[target].outstanding;
      --d->backends[d->backend_of(target)].stats.in_flight;
    }
  };

  asio::awaitable<bool> proxy(beast::tcp_stream& client, http::request<http::string_body> req) {
    const auto t0 = Clock::now();
    const unsigned version = req.version();
    const bool client_ka = req.keep_alive();
    RouteRequest rr;
    rr.key = routing_key(req, opts.key_headers);
    rr.now_s = seconds_since(epoch);
    const bool generate = req.method() == http::verb::post;
    if (generate && opts.policy == Policy::cache_aware && !prompt_blocks(req.body(), opts.policy_opts.block_bytes, rr.prefix)) {
      {
        std::lock_guard lk(mu);
        ++counters.bad_requests;
      }
      auto res = make_error(version, client_ka, 400, "BadRequest", "request body is not a JSON object");
      co_return co_await send(client, res);
    }

    // Choose a target; on a connect failure try once more elsewhere (nothing was sent yet).
    BackendConn conn;
    bool reused = false;  // conn came from the pool
    std::optional<Outstanding> held;
    int target = -1;
    std::string failure;
    std::vector<char> excluded(targets.size(), 0);
    for (int attempt = 0; attempt < 2 && !conn; ++attempt) {
      RouteDecision dec;
      {
        std::lock_guard lk(mu);
        auto view = targets;
        for (std::size_t t = 0; t < view.size(); ++t)
          if (excluded[t]) view[t].healthy = false;
        if (!generate) {
          // Model lists and other GETs: any healthy backend, in turn.
          dec = {-1, "no_healthy", 0};
          for (std::size_t i = 0; i < view.size(); ++i) {
            const std::size_t t = (models_rr + i) % view.size();
            if (view[t].healthy) {
              dec = {static_cast<int>(t), "passthrough", 0};
              models_rr = t + 1;
              break;
            }
          }
        } else {
          dec = policy->choose(rr, view);
        }
        if (dec.target >= 0) {
          ++targets[dec.target].outstanding;
          ++backends[backend_of(dec.target)].stats.in_flight;
          ++backends[backend_of(dec.target)].stats.requests;
          if (generate) policy->routed(dec.target, rr);
        }
        ++counters.decisions[dec.reason];
        if (dec.target < 0) ++counters.rejected;
      }
      if (dec.target < 0) {
        const bool overloaded = dec.reason == "overloaded";
        auto res = !failure.empty() ? make_error(version, client_ka, 502, "BadGateway", failure)
                   : overloaded     ? make_error(version, client_ka, 503, "ServiceUnavailable",
                                                 "every backend is at its outstanding-request cap", 1)
                                    : make_error(version, client_ka, 503, "ServiceUnavailable", "no healthy backend");
        co_return co_await send(client, res);
      }
      held.reset();
      held.emplace(this, dec.target);
      target = dec.target;
      const int b = backend_of(target);
      std::string why;
      conn = co_await acquire(b, why, reused);
      if (!conn) {
        failure = "backend " + backends[b].name + ": " + why;
        for (int r = 0; r < opts.dp_size; ++r) excluded[b * opts.dp_size + r] = 1;  // every rank of it
        record_error(b);
      }
    }
    if (!conn) {
      auto res = make_error(version, client_ka, 502, "BadGateway", failure);
      co_return co_await send(client, res);
    }
    const int b = backend_of(target);
    const std::string bname = backends[b].name;

    // Forward the request.
    strip_hop_by_hop(req);
    req.set(http::field::host, backends[b].url.host_header());
    req.keep_alive(true);
    if (opts.dp_size > 1) req.set("X-Data-Parallel-Rank", std::to_string(rank_of(target)));
    if (backends[b].url.path != "/") req.target(net::join_path(backends[b].url.path, std::string(req.target())));
    req.prepare_payload();
    // A pooled socket the backend already closed (llama.cpp's server closes
    // after every stream while announcing keep-alive; others on an idle
    // timer) fails before any response byte: the request is sent once more
    // on a new connection, as the client does (net/http_client.h). A request
    // that got any response byte is never re-sent.
    beast::flat_buffer bbuf;
    std::optional<http::response_parser<http::buffer_body>> parser;
    beast::error_code wec, hec;
    for (;;) {
      conn->expires_after(opts.backend_idle_timeout);
      std::tie(wec, std::ignore) = co_await http::async_write(*conn, req, nothrow);
      parser.emplace();
      parser->body_limit(boost::none);
      if (!wec) std::tie(hec, std::ignore) = co_await http::async_read_header(*conn, bbuf, *parser, nothrow);
      const beast::error_code& ec = wec ? wec : hec;
      const bool closed_before_answering =
          bbuf.size() == 0 && (ec == http::error::end_of_stream || ec == asio::error::eof ||
                               ec == asio::error::connection_reset || ec == asio::error::broken_pipe);
      if (!reused || !closed_before_answering) break;
      std::string why;
      reused = false;
      auto fresh = co_await connect_backend(backends[b].url, opts.connect_timeout, why);
      if (!fresh) break;  // reported below as the first attempt's failure
      conn = std::move(fresh);
      wec = hec = {};
      std::lock_guard lk(mu);
      ++counters.backend_retries;
    }
    {
      std::lock_guard lk(mu);
      counters.route_seconds_sum += seconds_since(t0);
      ++counters.routed;
    }
    if (wec) {
      record_error(b);
      auto res = make_error(version, client_ka, 502, "BadGateway", "backend " + bname + ": sending the request failed: " + wec.message());
      co_return co_await send(client, res);
    }

    // Relay the response as it arrives.
    auto& p = *parser;
    if (hec) {
      record_error(b);
      const std::string why = hec == beast::error::timeout ? "sent no response in time" : "failed before responding: " + hec.message();
      auto res = make_error(version, client_ka, 502, "BadGateway", "backend " + bname + " " + why);
      co_return co_await send(client, res);
    }
    auto& res = p.get();
    const bool backend_ka = res.keep_alive();
    const bool sse = res[http::field::content_type].starts_with("text/event-stream");
    strip_hop_by_hop(res);
    res.version(version);
    res.keep_alive(client_ka);
    // A close-delimited body cannot keep the client's connection: chunk it.
    if (!res.has_content_length() && !res.chunked() && !p.is_done() && version == 11) res.chunked(true);
    const bool chunked = res.chunked();
    http::serializer<false, http::buffer_body> sr{res};
    client.expires_after(opts.backend_idle_timeout);
    auto [cwe, cwn] = co_await http::async_write_header(client, sr, nothrow);
    if (cwe) co_return false;  // client gone; the backend socket is dropped with conn

    char chunk[16384];
    bool backend_failed = false, body_finished = false;
    std::string backend_error;
    // Once the whole response is read, the backend connection goes back to
    // the pool before the last bytes are written to the client: a client
    // that sends its next request the moment it has this response finds
    // the connection pooled (the router's threads would otherwise race it
    // to the pool, and open a new connection as often as not).
    bool backend_done = false;
    auto done_with_backend = [&] {
      if (backend_done) return;
      backend_done = true;
      {
        std::lock_guard lk(mu);
        record_result_locked(b, true);
      }
      if (backend_ka) release(b, std::move(conn));
    };
    while (!p.is_done()) {
      res.body().data = chunk;
      res.body().size = sizeof chunk;
      conn->expires_after(opts.backend_idle_timeout);
      auto [rec, rn] = co_await http::async_read_some(*conn, bbuf, p, nothrow);
      if (rec == http::error::need_buffer) rec = {};
      if (rec) {
        backend_failed = true;
        backend_error = rec == beast::error::timeout ? "no data within the backend idle timeout" : rec.message();
        break;
      }
      // Whatever else the backend has already sent sits parsed-ready in
      // bbuf: take it too (no socket read, so nothing waits), so a burst of
      // small chunks goes to the client as one write, not one per chunk.
      while (!p.is_done() && bbuf.size() > 0 && res.body().size > 0) {
        beast::error_code pec;
        const std::size_t used = p.put(bbuf.data(), pec);
        bbuf.consume(used);
        if (pec == http::error::need_more || pec == http::error::need_buffer) break;
        if (pec) {
          backend_failed = true;
          backend_error = pec.message();
          break;
        }
        if (used == 0) break;
      }
      if (backend_failed) break;
      const std::size_t got = sizeof chunk - res.body().size;
      if (got == 0) continue;  // framing only (a chunk header, or the terminator: then the loop ends)
      res.body().data = chunk;
      res.body().size = got;
      res.body().more = !p.is_done();
      body_finished = !res.body().more;
      if (body_finished) done_with_backend();
      client.expires_after(opts.backend_idle_timeout);
      auto [wec2, wn2] = co_await http::async_write(client, sr, nothrow);
      if (wec2 == http::error::need_buffer) wec2 = {};
      if (wec2) co_return false;  // client gone
    }
    if (backend_failed) {
      record_error(b);
      if (chunked && sse) {
        // End the stream with an SSE error event the client can read, then the last chunk.
        const std::string ev = "event: error\ndata: " +
                               error_json(502, "BadGateway", "backend " + bname + " failed mid-stream: " + backend_error) +
                               "\n\n";
        char head[32];
        std::snprintf(head, sizeof head, "%zx\r\n", ev.size());
        const std::string tail = std::string(head) + ev + "\r\n0\r\n\r\n";
        co_await asio::async_write(client.socket(), asio::buffer(tail), nothrow);
      }
      co_return false;  // close the client connection: the response is incomplete
    }
    done_with_backend();  // the response is read whole (a body that ended on framing alone)
    // The serializer ends the body (a chunked body's last chunk) on the first
    // write with more = false, and only then; is_done() can lag behind it.
    if (!body_finished) {
      res.body().data = nullptr;
      res.body().size = 0;
      res.body().more = false;
      auto [fec, fn] = co_await http::async_write(client, sr, nothrow);
      if (fec && fec != http::error::need_buffer) co_return false;
    }
    client.expires_never();
    co_return true;
  }

  void record_error(int b) {
    std::lock_guard lk(mu);
    ++backends[b].stats.errors;
    record_result_locked(b, false);
  }

  // --- reporting --------------------------------------------------------------

  RouterStats snapshot() const {
    std::lock_guard lk(mu);
    RouterStats s = counters;
    for (const auto& b : backends) {
      BackendStats bs = b.stats;
      bs.healthy = b.health.healthy;
      s.backends.push_back(bs);
    }
    return s;
  }

  std::string metrics() const { return router_metrics_text(snapshot(), opts.policy); }
  std::string backends_json() const { return router_backends_json(snapshot(), opts.policy, opts.dp_size); }
};

RouterServer::RouterServer(RouterOptions opts) : impl_(std::make_unique<Impl>(std::move(opts))) {}

RouterServer::~RouterServer() { stop(); }

void RouterServer::start() {
  auto& d = *impl_;
  d.port = listen_on(d.acceptor, d.opts.host, d.opts.port, "route: ");
  d.work.emplace(d.io.get_executor());
  asio::co_spawn(d.io, accept_each(d.acceptor, [&d](tcp::socket s) { return d.serve(std::move(s)); }), asio::detached);
  // Each health loop on a strand of its own, as each connection is (see
  // accept_each): its probe streams have deadlines, and the io_context runs
  // on several threads.
  for (int b = 0; b < static_cast<int>(d.backends.size()); ++b)
    asio::co_spawn(asio::make_strand(d.io),
                   health_loop(d.backends[b].url, d.opts.health_interval, d.opts.health_timeout, d.stopping,
                               [&d, b](bool ok) { d.record_result(b, ok); }),
                   asio::detached);
  for (int i = 0; i < std::max(1, d.opts.threads); ++i) d.threads.emplace_back([&d] { d.io.run(); });
  d.running = true;
}

void RouterServer::stop() {
  auto& d = *impl_;
  if (!d.running.exchange(false)) return;
  d.stopping = true;
  stop_serving(d.io, d.acceptor, d.work, d.threads);
  // Pooled backend sockets belong to the io_context: close them while it lives.
  std::lock_guard lk(d.mu);
  for (auto& b : d.backends) b.pool.clear();
}

std::uint16_t RouterServer::port() const { return impl_->port; }
std::string RouterServer::url() const { return "http://" + impl_->opts.host + ":" + std::to_string(impl_->port); }
RouterStats RouterServer::stats() const { return impl_->snapshot(); }
std::string RouterServer::metrics_text() const { return impl_->metrics(); }

}  // namespace agentperf::route
