// The router's state (RouterServer::Impl), private to the route component
// and shared by its two translation units:
//   router_server.cpp  construction, health, the client connections (serve,
//                      answer), the router's own endpoints, start/stop
//   router_proxy.cpp   proxy(): choosing a target, forwarding one request
//                      and relaying its response as it arrives
// Each instantiates Beast's HTTP templates inside coroutines, the slowest
// code in the build to compile; as two files compiled on their own (never in
// a unity batch, CMakeLists.txt) an edit to either recompiles in about half
// the time of the whole (docs/testing.md#building).
#pragma once
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/url.h"
#include "route/backend_pool.h"
#include "route/health_checker.h"
#include "route/router_metrics.h"
#include "route/router_server.h"
#include "route/routing_policy.h"

namespace agentperf::route {

using RouterClock = std::chrono::steady_clock;

inline double seconds_since(RouterClock::time_point t) {
  return std::chrono::duration<double>(RouterClock::now() - t).count();
}

// An OpenAI-style error body: {"error": {"message", "type", "code"}}.
std::string router_error_json(int code, const std::string& type, const std::string& message);

// One backend as the router sees it.
struct RoutedBackend {
  net::Url url;
  std::string name;  // as given on the command line
  HealthState health;
  BackendStats stats;
  BackendPool pool;
};

struct RouterServer::Impl {
  using Response = boost::beast::http::response<boost::beast::http::string_body>;
  using Request = boost::beast::http::request<boost::beast::http::string_body>;

  RouterOptions opts;
  std::atomic<bool> running{false}, stopping{false};

  mutable std::mutex mu;  // the routing state below
  std::vector<RoutedBackend> backends;
  std::vector<TargetState> targets;
  std::unique_ptr<RoutingPolicy> policy;
  RouterStats counters;  // decisions, rejected, bad_requests, route time
  std::size_t models_rr = 0;
  RouterClock::time_point epoch = RouterClock::now();

  // Declared after the routing state: destroying the io_context destroys
  // suspended request coroutines, whose cleanup still updates that state.
  boost::asio::io_context io;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  boost::asio::ip::tcp::acceptor acceptor{io};
  std::vector<std::thread> threads;
  std::uint16_t port = 0;

  explicit Impl(RouterOptions o);  // throws UserError for a bad option

  int backend_of(int target) const { return target / opts.dp_size; }
  int rank_of(int target) const { return target % opts.dp_size; }

  // --- health (router_server.cpp) ---------------------------------------------
  // One result (a probe, or a request's outcome) for a backend; under mu.
  void record_result_locked(int b, bool ok);
  void set_targets_health_locked(int b, bool healthy);
  void record_result(int b, bool ok);
  void record_error(int b);  // a failed request: counted, and a failing health result

  // --- backend connections (router_server.cpp) --------------------------------
  // A pooled connection (reused = true) or a new one.
  boost::asio::awaitable<BackendConn> acquire(int b, std::string& error, bool& reused);
  void release(int b, BackendConn s);

  // --- client side (router_server.cpp) ----------------------------------------
  // Responses are built by plain functions and only then awaited: GCC 12
  // destroys some temporaries of a co_await full-expression twice (string
  // temporaries under ?: in the arguments did, here).
  static Response make_reply(unsigned version, bool keep_alive, boost::beast::http::status status,
                             const char* content_type, std::string body, int retry_after = 0);
  static Response make_error(unsigned version, bool keep_alive, int code, const char* type,
                             const std::string& message, int retry_after = 0);
  boost::asio::awaitable<bool> send(boost::beast::tcp_stream& client, Response& res);
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket sock);
  // One request from a client: the router's own endpoints, or a proxied call.
  boost::asio::awaitable<bool> answer(boost::beast::tcp_stream& client, Request& req);

  // --- forwarding (router_proxy.cpp) -------------------------------------------
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
  // False when the client connection must close (it is gone, or its
  // response was cut short).
  boost::asio::awaitable<bool> proxy(boost::beast::tcp_stream& client, Request req);

  // --- reporting (router_server.cpp) -------------------------------------------
  RouterStats snapshot() const;
  std::string metrics() const { return router_metrics_text(snapshot(), opts.policy); }
  std::string backends_json() const { return router_backends_json(snapshot(), opts.policy, opts.dp_size); }
};

}  // namespace agentperf::route
