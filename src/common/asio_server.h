// The server plumbing shared by the simulator, the router and the scripted
// test server: opening the listening socket (an IP address, SO_REUSEADDR,
// the port (0 = ephemeral) bound or a UserError naming host, port and
// reason), the accept loop, and stopping an io_context run by threads.
#pragma once
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/asio_aliases.h"
#include "common/error.h"

namespace agentperf::aio {

// Returns the port bound. `who` prefixes the messages ("route: ", "").
inline std::uint16_t listen_on(tcp::acceptor& acceptor, const std::string& host, std::uint16_t port,
                               const std::string& who = "") {
  beast::error_code ec;
  const auto addr = asio::ip::make_address(host, ec);
  if (ec) throw UserError(who + "--host '" + host + "' is not an IP address");
  const tcp::endpoint ep(addr, port);
  acceptor.open(ep.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.bind(ep, ec);
  if (ec) throw UserError(who + "cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message());
  acceptor.listen(asio::socket_base::max_listen_connections);
  return acceptor.local_endpoint().port();
}

// Accepts until the acceptor is closed and runs `serve(tcp::socket)` (a
// coroutine: asio::awaitable<void>) for each connection, on a strand of its
// own: the socket is accepted onto the strand and the coroutine is spawned
// there. The router and the scripted server run their io_context on several
// threads, and a beast::tcp_stream with a deadline keeps a timer beside its
// read: on a plain executor the timer's handler (which closes the socket)
// and the read's completion (after which the connection closes the socket
// too) could run on two threads at once, and closing one socket twice at
// once crashed in the epoll reactor (150 stalled clients reaching the idle
// limit together, as HttpServeLoop's hostile-client test does). The strand
// runs a connection's handlers one at a time, whatever the thread count.
// Out of file descriptors (EMFILE/ENFILE) or buffers, it waits 100 ms before
// accepting again instead of spinning a core until descriptors free up.
template <class Serve>
asio::awaitable<void> accept_each(tcp::acceptor& acceptor, Serve serve) {
  asio::steady_timer backoff(acceptor.get_executor());
  for (;;) {
    const asio::any_io_executor strand = asio::make_strand(acceptor.get_executor());
    auto [ec, sock] = co_await acceptor.async_accept(strand, nothrow);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space || ec == asio::error::no_memory ||
          ec.value() == ENFILE) {
        backoff.expires_after(std::chrono::milliseconds(100));
        co_await backoff.async_wait(nothrow);
      }
      continue;
    }
    asio::co_spawn(strand, serve(std::move(sock)), asio::detached);
  }
}

// Closes the acceptor on its own executor, lets the io_context stop, and
// joins the threads that ran it.
inline void stop_serving(asio::io_context& io, tcp::acceptor& acceptor,
                         std::optional<asio::executor_work_guard<asio::io_context::executor_type>>& work,
                         std::vector<std::thread>& threads) {
  asio::post(io, [&acceptor] {
    beast::error_code ec;
    acceptor.close(ec);
  });
  work.reset();
  io.stop();
  for (auto& t : threads) t.join();
  threads.clear();
}

}  // namespace agentperf::aio
