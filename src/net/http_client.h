// HTTP/1.1 client for one target, owned by one event loop (one worker
// thread): a keep-alive connection pool, TLS, connect and request timeouts,
// streaming SSE responses fed straight into the OpenAI response parser.
//
// Per request it does little besides the system calls: the head is written
// with the body's shared segments in one gathered write; each read lands in
// the connection's own 64 KiB buffer and is framed in place by
// HttpResponseReader (no Beast parser, no per-read timer: one watchdog timer
// per connection holds the deadlines); one coroutine suspension per write and
// per read. docs/bench.md has the measurements behind each choice.
//
// Stale sockets: servers close idle keep-alive sockets (uvicorn after 5 s).
// Before reusing a pooled socket the client drops it if it has been idle
// longer than keepalive_idle_limit and otherwise peeks it (non-blocking) to
// see whether the peer has closed it. The peek cannot see a close that is
// still in flight, so a request that fails on a *reused* socket before any
// response byte arrives is sent once more on a fresh connection (counted in
// PoolStats::retries and RequestRecord::retries). A request that received
// any response byte is never re-sent: if it fails, it is recorded as an
// error, never lost.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/record.h"
#include "net/client_options.h"
#include "net/http_request.h"
#include "net/url.h"

namespace boost::asio::ssl {
class context;
}

namespace agentperf::net {

struct Connection;

// Handle the load runner keeps for an in-flight request so it can cancel it
// (grace-period expiry, Ctrl-C). Used on the client's own event loop only.
struct InFlight {
  Connection* conn = nullptr;
  bool cancelled = false;
  std::int64_t cancel_ns = 0;
  std::string cancel_reason;
  void cancel(std::string reason);
};

struct SimpleResponse {
  int status = 0;
  std::string body;
  std::optional<ErrorInfo> error;
};

struct PoolStats {
  std::uint64_t connects = 0;
  std::uint64_t connect_failures = 0;
  std::uint64_t reused = 0;
  std::uint64_t stale_dropped = 0;  // idle too long or closed by the peer
  std::uint64_t retries = 0;        // requests re-sent after a reused socket failed before any response byte
};

// One GET on its own event loop, for readiness probes: the status and body,
// or the transport error. Never throws for network failures.
SimpleResponse http_get_once(const std::string& url, std::chrono::milliseconds timeout);

class HttpClient {
 public:
  HttpClient(boost::asio::io_context& io, Url target, ClientOptions opts);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Resolves the host (blocking); call once before the run. Throws UserError.
  void resolve();
  // Shares already resolved endpoints (workers resolve once, not N times).
  void set_endpoints(boost::asio::ip::tcp::resolver::results_type eps);
  const boost::asio::ip::tcp::resolver::results_type& endpoints() const { return endpoints_; }

  // Sends req and fills rec (stamps, content, usage, error). Never throws for
  // network or protocol failures: they become rec.error.
  boost::asio::awaitable<void> send(const HttpRequest& req, RequestRecord& rec, InFlight* inflight);

  // A small request whose whole body is returned (preflight: /v1/models).
  boost::asio::awaitable<SimpleResponse> fetch(const HttpRequest& req);

  const PoolStats& stats() const noexcept { return stats_; }
  const Url& target() const noexcept { return target_; }
  std::size_t idle_connections() const noexcept { return idle_.size(); }

 private:
  boost::asio::awaitable<std::unique_ptr<Connection>> acquire(ErrorInfo& err);
  boost::asio::awaitable<std::unique_ptr<Connection>> connect_new(ErrorInfo& err);
  void release(std::unique_ptr<Connection> conn);
  std::string serialize_head(const HttpRequest& req) const;

  boost::asio::io_context& io_;
  Url target_;
  ClientOptions opts_;
  std::unique_ptr<boost::asio::ssl::context> tls_ctx_;
  boost::asio::ip::tcp::resolver::results_type endpoints_;
  std::vector<std::unique_ptr<Connection>> idle_;  // LIFO: most recently used on top
  PoolStats stats_;
  // Exchanges in progress. Each connection's watchdog (one timer, armed
  // while in use) is pending work for the event loop: when the last exchange
  // ends, the idle connections' watchdogs are disarmed so that io.run() can
  // return.
  int busy_ = 0;
  struct Busy {
    explicit Busy(HttpClient& c);
    ~Busy();
    HttpClient& client;
  };
};

}  // namespace agentperf::net
