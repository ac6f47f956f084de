#include "route/backend_pool.h"

#include "common/asio_aliases.h"
#include "net/socket_freshness.h"

namespace agentperf::route {

using namespace aio;

BackendConn BackendPool::take(std::chrono::milliseconds idle_limit) {
  const auto now = std::chrono::steady_clock::now();
  const std::int64_t limit_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(idle_limit).count();
  while (!idle_.empty()) {
    Pooled c = std::move(idle_.back());
    idle_.pop_back();
    const std::int64_t idle_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - c.idle_since).count();
    auto& sock = c.stream->socket();
    if (net::pooled_socket_usable(sock.is_open() ? sock.native_handle() : -1, idle_ns, limit_ns))
      return std::move(c.stream);
  }
  return nullptr;
}

void BackendPool::put(BackendConn s) {
  s->expires_never();
  idle_.push_back({std::move(s), std::chrono::steady_clock::now()});
}

asio::awaitable<BackendConn> connect_backend(net::Url url, std::chrono::milliseconds timeout, std::string& error) {
  auto s = std::make_unique<beast::tcp_stream>(co_await asio::this_coro::executor);
  tcp::resolver resolver(co_await asio::this_coro::executor);
  s->expires_after(timeout);
  auto [rec, eps] = co_await resolver.async_resolve(url.host, std::to_string(url.port), nothrow);
  if (rec) {
    error = "cannot resolve " + url.host + ": " + rec.message();
    co_return nullptr;
  }
  auto [cec, ep] = co_await s->async_connect(eps, nothrow);
  if (cec) {
    error = cec == beast::error::timeout ? "connect timed out" : "connect failed: " + cec.message();
    co_return nullptr;
  }
  beast::error_code ignored;
  s->socket().set_option(tcp::no_delay(true), ignored);
  co_return s;
}

}  // namespace agentperf::route
