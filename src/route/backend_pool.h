// The router's keep-alive connections to one backend: idle sockets kept for
// reuse (dropped when stale, by net/socket_freshness) and opening new ones.
// Split out of the router so the proxy code only asks for "a connection".
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "net/url.h"

namespace agentperf::route {

using BackendConn = std::unique_ptr<boost::beast::tcp_stream>;

// Not thread-safe: the router calls it under its own lock.
class BackendPool {
 public:
  // The most recently pooled socket that is still usable, or null; stale
  // ones (idle past idle_limit, or closed by the peer) are dropped.
  BackendConn take(std::chrono::milliseconds idle_limit);
  void put(BackendConn s);
  void clear() { idle_.clear(); }

 private:
  struct Pooled {
    BackendConn stream;
    std::chrono::steady_clock::time_point idle_since;
  };
  std::vector<Pooled> idle_;
};

// A new connection to url (TCP_NODELAY), or null with `error` saying why.
// The stream's deadline, set to `timeout` before resolving, stays in force.
boost::asio::awaitable<BackendConn> connect_backend(net::Url url, std::chrono::milliseconds timeout,
                                                    std::string& error);

}  // namespace agentperf::route
