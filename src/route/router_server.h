// `agentperf route`: an HTTP/1.1 reverse proxy (Boost.Beast) in front of N
// OpenAI-compatible backends. Responses stream through as they arrive (each
// read from the backend is written to the client at once, SSE unbuffered);
// status codes and error bodies pass through unchanged.
//
// Failures are explicit, never a hang: a backend that cannot be reached or
// fails before its response starts gives the client a 502 naming it; one that
// fails mid-stream ends an SSE response with an `event: error` and closes the
// connection (other bodies are cut short, which the client sees as
// truncation); no healthy backend gives 503, every target at its outstanding
// cap gives 503 with Retry-After. Only connecting is retried (on another
// target): a request whose bytes reached a backend is never re-sent.
//
// Health: GET /health on each backend every health_interval; eject_after
// consecutive failures (probes or requests) eject it, readmit_after passing
// probes re-admit it. Router endpoints: GET /health (200 while any backend is
// healthy), /metrics (Prometheus), /router/backends (JSON).
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "route/router_metrics.h"
#include "route/routing_policy.h"

namespace agentperf::route {

struct RouterOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0 = ephemeral
  int threads = 2;
  std::vector<std::string> backends;  // http://host:port
  Policy policy = Policy::session_sticky;
  PolicyOptions policy_opts;
  int dp_size = 1;  // >1: each backend is dp_size targets, pinned by X-Data-Parallel-Rank
  std::vector<std::string> key_headers = {"x-smg-routing-key", "x-session-id", "x-correlation-id"};
  std::chrono::milliseconds health_interval{5000};
  std::chrono::milliseconds health_timeout{2000};
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds backend_idle_timeout{std::chrono::minutes(30)};  // longest gap between backend bytes
  std::chrono::milliseconds pool_idle_limit{4000};  // pooled backend sockets idle longer are dropped (uvicorn: 5 s)
  int eject_after = 2;
  int readmit_after = 1;
  std::size_t max_body_bytes = std::size_t(256) << 20;
  // Client keep-alive connections idle this long are closed (nginx's
  // keepalive_timeout default, 75 s: nginx.org/en/docs/http/ngx_http_core_module.html#keepalive_timeout).
  std::chrono::milliseconds client_idle_timeout{75000};
  // Ejections and readmissions are logged (one line each, to stderr).
  bool log_health_changes = true;
};

class RouterServer {
 public:
  explicit RouterServer(RouterOptions opts);  // throws UserError for a bad option
  ~RouterServer();
  RouterServer(const RouterServer&) = delete;
  RouterServer& operator=(const RouterServer&) = delete;

  void start();  // binds and serves on background threads; throws UserError if it cannot listen
  void stop();
  std::uint16_t port() const;
  std::string url() const;
  RouterStats stats() const;
  std::string metrics_text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace agentperf::route
