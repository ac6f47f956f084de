#include "route/router_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/asio_aliases.h"
#include "common/asio_server.h"
#include "common/error.h"
#include "common/http_serve_loop.h"
#include "route/router_state.h"

// The router's connections, health and own endpoints; the forwarding of a
// request is router_proxy.cpp (router_state.h says why two files).
namespace agentperf::route {

using namespace aio;

std::string router_error_json(int code, const std::string& type, const std::string& message) {
  return nlohmann::json{{"error", {{"message", message}, {"type", type}, {"code", code}}}}.dump();
}

RouterServer::Impl::Impl(RouterOptions o) : opts(std::move(o)) {
  if (opts.backends.empty()) throw UserError("route: at least one --backend is needed");
  if (opts.dp_size < 1) throw UserError("route: --dp-size must be >= 1");
  if (opts.eject_after < 1 || opts.readmit_after < 1) throw UserError("route: --eject-after and --readmit-after must be >= 1");
  for (const auto& b : opts.backends) {
    RoutedBackend be;
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

// --- health ---------------------------------------------------------------

void RouterServer::Impl::record_result_locked(int b, bool ok) {
  RoutedBackend& be = backends[b];
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

void RouterServer::Impl::set_targets_health_locked(int b, bool healthy) {
  for (int r = 0; r < opts.dp_size; ++r) {
    const int t = b * opts.dp_size + r;
    targets[t].healthy = healthy;
    if (!healthy) policy->target_lost(t);
  }
}

void RouterServer::Impl::record_result(int b, bool ok) {
  std::lock_guard lk(mu);
  record_result_locked(b, ok);
}

void RouterServer::Impl::record_error(int b) {
  std::lock_guard lk(mu);
  ++backends[b].stats.errors;
  record_result_locked(b, false);
}

// --- backend connections ----------------------------------------------------

asio::awaitable<BackendConn> RouterServer::Impl::acquire(int b, std::string& error, bool& reused) {
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

void RouterServer::Impl::release(int b, BackendConn s) {
  std::lock_guard lk(mu);
  if (!backends[b].health.healthy) return;
  backends[b].pool.put(std::move(s));
}

// --- client side ------------------------------------------------------------

RouterServer::Impl::Response RouterServer::Impl::make_reply(unsigned version, bool keep_alive, http::status status,
                                                           const char* content_type, std::string body, int retry_after) {
  http::response<http::string_body> res{status, version};
  res.set(http::field::content_type, content_type);
  res.set(http::field::server, "agentperf-route");
  if (retry_after > 0) res.set(http::field::retry_after, std::to_string(retry_after));
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

RouterServer::Impl::Response RouterServer::Impl::make_error(unsigned version, bool keep_alive, int code, const char* type,
                                                           const std::string& message, int retry_after) {
  return make_reply(version, keep_alive, static_cast<http::status>(code), "application/json",
                    router_error_json(code, type, message), retry_after);
}

asio::awaitable<bool> RouterServer::Impl::send(beast::tcp_stream& client, Response& res) {
  client.expires_after(std::chrono::seconds(60));
  auto [ec, n] = co_await http::async_write(client, res, nothrow);
  client.expires_never();
  co_return !ec;
}

asio::awaitable<void> RouterServer::Impl::serve(tcp::socket sock) {
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

asio::awaitable<bool> RouterServer::Impl::answer(beast::tcp_stream& client, Request& req) {
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

// --- reporting --------------------------------------------------------------

RouterStats RouterServer::Impl::snapshot() const {
  std::lock_guard lk(mu);
  RouterStats s = counters;
  for (const auto& b : backends) {
    BackendStats bs = b.stats;
    bs.healthy = b.health.healthy;
    s.backends.push_back(bs);
  }
  return s;
}

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
