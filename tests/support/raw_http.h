// Writes raw bytes to a server on 127.0.0.1 and reads everything it sends
// back until it closes the socket (or `deadline` passes), for tests that
// speak malformed or hand-framed HTTP on purpose.
#pragma once
#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace agentperf::test_support {

struct RawExchange {
  std::string received;
  bool closed_by_server = false;  // false: the deadline passed with the socket still open
};

inline RawExchange raw_exchange(std::uint16_t port, const std::string& bytes,
                                std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  sock.connect({asio::ip::make_address("127.0.0.1"), port});
  boost::system::error_code ec;
  asio::write(sock, asio::buffer(bytes), ec);
  RawExchange out;
  char buf[4096];
  asio::steady_timer timer(io, deadline);
  bool timed_out = false;
  timer.async_wait([&](const boost::system::error_code& e) {
    if (!e) {
      timed_out = true;
      sock.cancel();
    }
  });
  std::function<void()> read_more = [&] {
    sock.async_read_some(asio::buffer(buf), [&](const boost::system::error_code& e, std::size_t n) {
      out.received.append(buf, n);
      if (e) {
        out.closed_by_server = !timed_out;
        timer.cancel();
        return;
      }
      read_more();
    });
  };
  read_more();
  io.run();
  return out;
}

}  // namespace agentperf::test_support
