#include "route/health_checker.h"

#include "common/asio_aliases.h"
#include "route/backend_pool.h"

namespace agentperf::route {

using namespace aio;

HealthChange record_health(HealthState& h, bool ok, int eject_after, int readmit_after) {
  if (ok) {
    h.failures = 0;
    if (!h.healthy && ++h.passes >= readmit_after) {
      h.healthy = true;
      h.passes = 0;
      return HealthChange::readmitted;
    }
    return HealthChange::none;
  }
  h.passes = 0;
  if (h.healthy && ++h.failures >= eject_after) {
    h.healthy = false;
    return HealthChange::ejected;
  }
  return HealthChange::none;
}

asio::awaitable<bool> probe_health(net::Url url, std::chrono::milliseconds timeout) {
  std::string error;
  BackendConn conn = co_await connect_backend(url, timeout, error);  // its timeout covers the whole probe
  if (!conn) co_return false;
  beast::tcp_stream& s = *conn;
  http::request<http::empty_body> req{http::verb::get, net::join_path(url.path, "/health"), 11};
  req.set(http::field::host, url.host_header());
  req.keep_alive(false);
  auto [wec, wn] = co_await http::async_write(s, req, nothrow);
  if (wec) co_return false;
  beast::flat_buffer buf;
  http::response<http::string_body> res;
  auto [ec, n] = co_await http::async_read(s, buf, res, nothrow);
  beast::error_code ignored;
  s.socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return !ec && res.result() == http::status::ok;
}

asio::awaitable<void> health_loop(net::Url url, std::chrono::milliseconds interval, std::chrono::milliseconds timeout,
                                  const std::atomic<bool>& stopping, std::function<void(bool)> on_result) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!stopping) {
    timer.expires_after(interval);
    co_await timer.async_wait(nothrow);  // woken early only by cancellation: the loop checks stopping
    if (stopping) co_return;
    const bool ok = co_await probe_health(url, timeout);
    on_result(ok);
  }
}

}  // namespace agentperf::route
