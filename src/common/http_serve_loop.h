// The one HTTP/1.1 request loop of every server in the tool: the simulator
// (`sim serve`), the router (`route`) and the scripted test server.
//
// A connection is served as a sequence of requests. Each read has the idle
// limit as its deadline (a client that keeps a socket open but sends nothing
// is closed when it runs out, as uvicorn's --timeout-keep-alive does for
// SGLang), a cap on the header block and a cap on the body. How the read
// ends decides what happens next:
//   - the peer closed, reset or went idle: the loop ends quietly;
//   - the request was malformed or over a cap: the peer gets one error
//     response (400, 413 or 431, shaped by the server's `reject` callback,
//     always with `Connection: close`) and the loop ends, because the rest of
//     the byte stream can no longer be framed;
//   - a request was read: the server's `handle` callback answers it and says
//     whether the connection may carry another one; the loop also ends when
//     the request itself asked for `Connection: close` (or was HTTP/1.0
//     without keep-alive).
// The loop returns how it ended, so servers can count idle closes and bad
// requests without each writing its own loop.
#pragma once
#include <chrono>
#include <cstddef>
#include <string>

#include <boost/asio/ssl/error.hpp>

#include "common/asio_aliases.h"

namespace agentperf::aio {

struct ServeLimits {
  std::size_t max_header_bytes = std::size_t(64) << 10;
  std::size_t max_body_bytes = std::size_t(256) << 20;
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(30)};
  std::chrono::milliseconds write_timeout{std::chrono::seconds(60)};  // for the error response only
};

enum class ConnectionEnd {
  peer_closed,      // the peer closed or reset the socket, or it was cancelled
  idle_timeout,     // no request arrived within idle_timeout
  bad_request,      // malformed, or over a cap: answered with an error and closed
  handler_closed,   // the handler answered and said the connection is done
  request_closed,   // the request asked for Connection: close
};

// What to send for a request that could not be read; status 0 = send nothing.
struct Rejection {
  int status = 0;
  std::string type;     // "BadRequest", "PayloadTooLarge", "RequestHeaderFieldsTooLarge"
  std::string message;  // names the cap that was exceeded, or the parse error
};

// How a failed read ends the connection.
inline ConnectionEnd classify_read_error(const beast::error_code& ec) {
  if (ec == beast::error::timeout) return ConnectionEnd::idle_timeout;
  if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
      ec == asio::error::operation_aborted || ec == asio::error::broken_pipe ||
      ec == asio::ssl::error::stream_truncated)
    return ConnectionEnd::peer_closed;
  return ConnectionEnd::bad_request;
}

// The error response for a request that could not be read.
inline Rejection rejection_for(const beast::error_code& ec, const ServeLimits& limits) {
  if (ec == http::error::body_limit)
    return {413, "PayloadTooLarge", "request body over " + std::to_string(limits.max_body_bytes) + " bytes"};
  if (ec == http::error::header_limit)
    return {431, "RequestHeaderFieldsTooLarge",
            "request header block over " + std::to_string(limits.max_header_bytes) + " bytes"};
  return {400, "BadRequest", "malformed HTTP request: " + ec.message()};
}

// `handle(http::request<http::string_body>&)` returns asio::awaitable<bool>:
// true when the connection can carry another request. `reject(const
// Rejection&)` returns the http::response<http::string_body> to send for a
// request that could not be read (the server shapes its error body).
template <class Stream, class Handle, class Reject>
asio::awaitable<ConnectionEnd> serve_requests(Stream& stream, const ServeLimits& limits, Handle handle,
                                              Reject reject) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
    parser.body_limit(limits.max_body_bytes);
    beast::get_lowest_layer(stream).expires_after(limits.idle_timeout);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, nothrow);
    beast::get_lowest_layer(stream).expires_never();
    if (ec) {
      const ConnectionEnd end = classify_read_error(ec);
      if (end == ConnectionEnd::bad_request) {
        const Rejection r = rejection_for(ec, limits);
        http::response<http::string_body> res = reject(r);
        res.keep_alive(false);
        res.prepare_payload();
        beast::get_lowest_layer(stream).expires_after(limits.write_timeout);
        co_await http::async_write(stream, res, nothrow);
        beast::get_lowest_layer(stream).expires_never();
      }
      co_return end;
    }
    auto& req = parser.get();
    const bool request_keep_alive = req.keep_alive();
    const bool go_on = co_await handle(req);
    if (!go_on) co_return ConnectionEnd::handler_closed;
    if (!request_keep_alive) co_return ConnectionEnd::request_closed;
  }
}

}  // namespace agentperf::aio
