// Short names used by the Asio/Beast translation units, and the completion
// token they all use: coroutines that get error codes back instead of
// exceptions.
#pragma once
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace agentperf::aio {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
inline constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);
}  // namespace agentperf::aio
