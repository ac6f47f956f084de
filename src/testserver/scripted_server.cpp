#include "testserver/scripted_server.h"

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <thread>

#include "common/asio_aliases.h"
#include "common/asio_server.h"
#include "common/http_serve_loop.h"
#include "common/clock.h"

namespace agentperf::testserver {

using namespace aio;

namespace {

std::string to_hex(std::size_t n) {
  char buf[32];
  int len = std::snprintf(buf, sizeof buf, "%zx", n);
  return std::string(buf, static_cast<std::size_t>(len));
}
}  // namespace

std::string ReceivedRequest::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

struct ScriptedServer::Impl {
  Handler handler;
  ServerOptions opts;
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  tcp::acceptor acceptor{io};
  std::vector<std::thread> threads;
  std::atomic<std::uint64_t> connections{0}, requests{0}, idle_closes{0};
  std::atomic<std::uint64_t> next_conn_id{1};
  mutable std::mutex times_mu;
  std::map<std::string, std::vector<std::int64_t>> times;
  std::uint16_t port = 0;
  bool running = false;

  std::unique_ptr<asio::ssl::context> tls;

  Impl(Handler h, ServerOptions o) : handler(std::move(h)), opts(o), io(o.threads) {
    if (!opts.tls_cert_pem.empty()) {
      tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
      tls->use_certificate_chain(asio::buffer(opts.tls_cert_pem));
      tls->use_private_key(asio::buffer(opts.tls_key_pem), asio::ssl::context::pem);
    }
  }


  asio::awaitable<void> serve(tcp::socket sock, std::uint64_t conn_id) {
    beast::error_code ignored;
    sock.set_option(tcp::no_delay(true), ignored);
    if (tls) {
      beast::ssl_stream<beast::tcp_stream> stream(std::move(sock), *tls);
      beast::get_lowest_layer(stream).expires_after(opts.idle_timeout);
      auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, nothrow);
      if (!ec) co_await serve_stream(stream, conn_id);
      beast::get_lowest_layer(stream).socket().close(ignored);
    } else {
      beast::tcp_stream stream(std::move(sock));
      co_await serve_stream(stream, conn_id);
      stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
      stream.socket().close(ignored);
    }
  }

  template <class Stream>
  asio::awaitable<void> serve_stream(Stream& stream, std::uint64_t conn_id) {
    asio::steady_timer timer(io);
    aio::ServeLimits limits;
    limits.max_body_bytes = std::size_t(512) << 20;
    limits.idle_timeout = opts.idle_timeout;
    const auto end = co_await serve_requests(
        stream, limits,
        [this, &stream, &timer, conn_id](http::request<http::string_body>& msg) {
          return answer(stream, timer, conn_id, msg);
        },
        [](const aio::Rejection& r) {
          http::response<http::string_body> res{static_cast<http::status>(r.status), 11};
          res.set(http::field::content_type, "text/plain");
          res.body() = r.message;
          return res;
        });
    if (end == aio::ConnectionEnd::idle_timeout) ++idle_closes;
  }

  template <class Stream>
  asio::awaitable<bool> answer(Stream& stream, asio::steady_timer& timer, std::uint64_t conn_id,
                               http::request<http::string_body>& msg) {
    ReceivedRequest req;
    req.received_ns = monotonic_ns();
    req.connection_id = conn_id;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    for (const auto& f : msg) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req.headers[name] = std::string(f.value());
    }
    req.body = std::move(msg.body());
    ++requests;
    ScriptedResponse resp = handler(req);
    const bool ok = co_await write_response(stream, timer, req, resp);
    co_return ok && !resp.close_after && !resp.truncate &&
        resp.framing != ScriptedResponse::Framing::close_delimited;
  }

  template <class Stream>
  asio::awaitable<bool> write_response(Stream& stream, asio::steady_timer& timer,
                                       const ReceivedRequest& req, const ScriptedResponse& resp) {
    using Framing = ScriptedResponse::Framing;
    std::string head;
    if (resp.framing != Framing::raw) {
      head = "HTTP/1.1 " + std::to_string(resp.status) + " " + resp.reason + "\r\n";
      for (const auto& [k, v] : resp.headers) head += k + ": " + v + "\r\n";
      if (resp.framing == Framing::chunked) head += "Transfer-Encoding: chunked\r\n";
      if (resp.framing == Framing::content_length) {
        std::size_t total = 0;
        for (const auto& s : resp.steps) total += s.bytes.size();
        head += "Content-Length: " + std::to_string(total) + "\r\n";
      }
      if (resp.framing == Framing::close_delimited || resp.close_after) head += "Connection: close\r\n";
      head += "\r\n";
    }
    const std::string request_id = opts.record_write_times ? req.header("x-request-id") : std::string();
    std::vector<std::int64_t> stamps;
    const auto base = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(req.received_ns));

    std::string out = std::move(head);
    std::size_t i = 0;
    while (i < resp.steps.size()) {
      // Steps due at the same instant go out in one write.
      const auto at = resp.steps[i].at;
      if (at.count() > 0) {
        if (!out.empty()) {
          auto [ec, n] = co_await asio::async_write(stream, asio::buffer(out), nothrow);
          if (ec) co_return false;
          out.clear();
        }
        timer.expires_at(base + at);
        co_await timer.async_wait(nothrow);
      }
      for (; i < resp.steps.size() && resp.steps[i].at == at; ++i) {
        const auto& bytes = resp.steps[i].bytes;
        if (opts.record_write_times) stamps.push_back(monotonic_ns());
        if (resp.framing == Framing::chunked) {
          if (bytes.empty()) continue;
          out += to_hex(bytes.size());
          out += "\r\n";
          out += bytes;
          out += "\r\n";
        } else {
          out += bytes;
        }
      }
    }
    if (resp.framing == Framing::chunked && !resp.truncate) out += "0\r\n\r\n";
    // Stored before the last write, so a client that has read the whole
    // response always finds them.
    if (opts.record_write_times && !request_id.empty()) {
      std::lock_guard lock(times_mu);
      times[request_id] = std::move(stamps);
    }
    if (!out.empty()) {
      auto [ec, n] = co_await asio::async_write(stream, asio::buffer(out), nothrow);
      if (ec) co_return false;
    }
    co_return true;
  }
};

ScriptedServer::ScriptedServer(Handler handler, ServerOptions opts)
    : impl_(std::make_unique<Impl>(std::move(handler), opts)) {}

ScriptedServer::~ScriptedServer() { stop(); }

void ScriptedServer::start(std::uint16_t port) {
  auto& d = *impl_;
  d.port = listen_on(d.acceptor, "127.0.0.1", port, "scripted server: ");
  d.work.emplace(d.io.get_executor());
  asio::co_spawn(d.io, accept_each(d.acceptor, [&d](tcp::socket s) {
                   ++d.connections;
                   return d.serve(std::move(s), d.next_conn_id++);
                 }),
                 asio::detached);
  for (int i = 0; i < std::max(1, d.opts.threads); ++i) d.threads.emplace_back([&d] { d.io.run(); });
  d.running = true;
}

void ScriptedServer::stop() {
  auto& d = *impl_;
  if (!d.running) return;
  d.running = false;
  stop_serving(d.io, d.acceptor, d.work, d.threads);
}

std::uint16_t ScriptedServer::port() const { return impl_->port; }
std::string ScriptedServer::url() const {
  return std::string(impl_->tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(impl_->port);
}

ServerStats ScriptedServer::stats() const {
  return ServerStats{impl_->connections.load(), impl_->requests.load(), impl_->idle_closes.load()};
}

std::vector<std::int64_t> ScriptedServer::write_times(const std::string& request_id) const {
  std::lock_guard lock(impl_->times_mu);
  auto it = impl_->times.find(request_id);
  return it == impl_->times.end() ? std::vector<std::int64_t>{} : it->second;
}

}  // namespace agentperf::testserver
