// Opening a listening socket the same way in every server (the simulator,
// the router, the scripted test server): an IP address, SO_REUSEADDR, the
// port (0 = ephemeral) bound or a UserError naming host, port and reason.
#pragma once
#include <cstdint>
#include <string>

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

}  // namespace agentperf::aio
