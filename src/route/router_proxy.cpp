// RouterServer::Impl::proxy: one client request forwarded to a target and
// its response relayed as it arrives (the header essay in router_server.h
// gives the failure rules; router_state.h says why this is its own file).
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <tuple>

#include "common/asio_aliases.h"
#include "route/prefix_index.h"
#include "route/router_state.h"

namespace agentperf::route {

using namespace aio;

namespace {

// Headers that describe one hop's connection, not the message (RFC 9110 §7.6.1).
void strip_hop_by_hop(http::fields& f) {
  for (auto field : {http::field::connection, http::field::keep_alive, http::field::proxy_connection, http::field::te,
                     http::field::trailer, http::field::upgrade, http::field::proxy_authorization})
    f.erase(field);
}

// The first non-empty of `key_headers` (field lookup is case-insensitive).
std::string routing_key(const http::fields& fields, const std::vector<std::string>& key_headers) {
  for (const auto& name : key_headers)
    if (auto it = fields.find(name); it != fields.end() && !it->value().empty()) return std::string(it->value());
  return {};
}

}  // namespace

asio::awaitable<bool> RouterServer::Impl::proxy(beast::tcp_stream& client, http::request<http::string_body> req) {
  const auto t0 = RouterClock::now();
  const unsigned version = req.version();
  const bool client_ka = req.keep_alive();
  RouteRequest rr;
  rr.key = routing_key(req, opts.key_headers);
  rr.now_s = seconds_since(epoch);
  const bool generate = req.method() == http::verb::post;
  if (generate && opts.policy == Policy::cache_aware && !prompt_blocks(req.body(), opts.policy_opts.block_bytes, rr.prefix)) {
    {
      std::lock_guard lk(mu);
      ++counters.bad_requests;
    }
    auto res = make_error(version, client_ka, 400, "BadRequest", "request body is not a JSON object");
    co_return co_await send(client, res);
  }

  // Choose a target; on a connect failure try once more elsewhere (nothing was sent yet).
  BackendConn conn;
  bool reused = false;  // conn came from the pool
  std::optional<Outstanding> held;
  int target = -1;
  std::string failure;
  std::vector<char> excluded(targets.size(), 0);
  for (int attempt = 0; attempt < 2 && !conn; ++attempt) {
    RouteDecision dec;
    {
      std::lock_guard lk(mu);
      auto view = targets;
      for (std::size_t t = 0; t < view.size(); ++t)
        if (excluded[t]) view[t].healthy = false;
      if (!generate) {
        // Model lists and other GETs: any healthy backend, in turn.
        dec = {-1, "no_healthy", 0};
        for (std::size_t i = 0; i < view.size(); ++i) {
          const std::size_t t = (models_rr + i) % view.size();
          if (view[t].healthy) {
            dec = {static_cast<int>(t), "passthrough", 0};
            models_rr = t + 1;
            break;
          }
        }
      } else {
        dec = policy->choose(rr, view);
      }
      if (dec.target >= 0) {
        ++targets[dec.target].outstanding;
        ++backends[backend_of(dec.target)].stats.in_flight;
        ++backends[backend_of(dec.target)].stats.requests;
        if (generate) policy->routed(dec.target, rr);
      }
      ++counters.decisions[dec.reason];
      if (dec.target < 0) ++counters.rejected;
    }
    if (dec.target < 0) {
      const bool overloaded = dec.reason == "overloaded";
      auto res = !failure.empty() ? make_error(version, client_ka, 502, "BadGateway", failure)
                 : overloaded     ? make_error(version, client_ka, 503, "ServiceUnavailable",
                                               "every backend is at its outstanding-request cap", 1)
                                  : make_error(version, client_ka, 503, "ServiceUnavailable", "no healthy backend");
      co_return co_await send(client, res);
    }
    held.reset();
    held.emplace(this, dec.target);
    target = dec.target;
    const int b = backend_of(target);
    std::string why;
    conn = co_await acquire(b, why, reused);
    if (!conn) {
      failure = "backend " + backends[b].name + ": " + why;
      for (int r = 0; r < opts.dp_size; ++r) excluded[b * opts.dp_size + r] = 1;  // every rank of it
      record_error(b);
    }
  }
  if (!conn) {
    auto res = make_error(version, client_ka, 502, "BadGateway", failure);
    co_return co_await send(client, res);
  }
  const int b = backend_of(target);
  const std::string bname = backends[b].name;

  // Forward the request.
  strip_hop_by_hop(req);
  req.set(http::field::host, backends[b].url.host_header());
  req.keep_alive(true);
  if (opts.dp_size > 1) req.set("X-Data-Parallel-Rank", std::to_string(rank_of(target)));
  if (backends[b].url.path != "/") req.target(net::join_path(backends[b].url.path, std::string(req.target())));
  req.prepare_payload();
  // A pooled socket the backend already closed (llama.cpp's server closes
  // after every stream while announcing keep-alive; others on an idle
  // timer) fails before any response byte: the request is sent once more
  // on a new connection, as the client does (net/http_client.h). A request
  // that got any response byte is never re-sent.
  beast::flat_buffer bbuf;
  std::optional<http::response_parser<http::buffer_body>> parser;
  beast::error_code wec, hec;
  for (;;) {
    conn->expires_after(opts.backend_idle_timeout);
    std::tie(wec, std::ignore) = co_await http::async_write(*conn, req, nothrow);
    parser.emplace();
    parser->body_limit(boost::none);
    if (!wec) std::tie(hec, std::ignore) = co_await http::async_read_header(*conn, bbuf, *parser, nothrow);
    const beast::error_code& ec = wec ? wec : hec;
    const bool closed_before_answering =
        bbuf.size() == 0 && (ec == http::error::end_of_stream || ec == asio::error::eof ||
                             ec == asio::error::connection_reset || ec == asio::error::broken_pipe);
    if (!reused || !closed_before_answering) break;
    std::string why;
    reused = false;
    auto fresh = co_await connect_backend(backends[b].url, opts.connect_timeout, why);
    if (!fresh) break;  // reported below as the first attempt's failure
    conn = std::move(fresh);
    wec = hec = {};
    std::lock_guard lk(mu);
    ++counters.backend_retries;
  }
  {
    std::lock_guard lk(mu);
    counters.route_seconds_sum += seconds_since(t0);
    ++counters.routed;
  }
  if (wec) {
    record_error(b);
    auto res = make_error(version, client_ka, 502, "BadGateway", "backend " + bname + ": sending the request failed: " + wec.message());
    co_return co_await send(client, res);
  }

  // Relay the response as it arrives.
  auto& p = *parser;
  if (hec) {
    record_error(b);
    const std::string why = hec == beast::error::timeout ? "sent no response in time" : "failed before responding: " + hec.message();
    auto res = make_error(version, client_ka, 502, "BadGateway", "backend " + bname + " " + why);
    co_return co_await send(client, res);
  }
  auto& res = p.get();
  const bool backend_ka = res.keep_alive();
  const bool sse = res[http::field::content_type].starts_with("text/event-stream");
  strip_hop_by_hop(res);
  res.version(version);
  res.keep_alive(client_ka);
  // A close-delimited body cannot keep the client's connection: chunk it.
  if (!res.has_content_length() && !res.chunked() && !p.is_done() && version == 11) res.chunked(true);
  const bool chunked = res.chunked();
  http::serializer<false, http::buffer_body> sr{res};
  client.expires_after(opts.backend_idle_timeout);
  auto [cwe, cwn] = co_await http::async_write_header(client, sr, nothrow);
  if (cwe) co_return false;  // client gone; the backend socket is dropped with conn

  char chunk[16384];
  bool backend_failed = false, body_finished = false;
  std::string backend_error;
  // Once the whole response is read, the backend connection goes back to
  // the pool before the last bytes are written to the client: a client
  // that sends its next request the moment it has this response finds
  // the connection pooled (the router's threads would otherwise race it
  // to the pool, and open a new connection as often as not).
  bool backend_done = false;
  auto done_with_backend = [&] {
    if (backend_done) return;
    backend_done = true;
    {
      std::lock_guard lk(mu);
      record_result_locked(b, true);
    }
    if (backend_ka) release(b, std::move(conn));
  };
  while (!p.is_done()) {
    res.body().data = chunk;
    res.body().size = sizeof chunk;
    conn->expires_after(opts.backend_idle_timeout);
    auto [rec, rn] = co_await http::async_read_some(*conn, bbuf, p, nothrow);
    if (rec == http::error::need_buffer) rec = {};
    if (rec) {
      backend_failed = true;
      backend_error = rec == beast::error::timeout ? "no data within the backend idle timeout" : rec.message();
      break;
    }
    // Whatever else the backend has already sent sits parsed-ready in
    // bbuf: take it too (no socket read, so nothing waits), so a burst of
    // small chunks goes to the client as one write, not one per chunk.
    while (!p.is_done() && bbuf.size() > 0 && res.body().size > 0) {
      beast::error_code pec;
      const std::size_t used = p.put(bbuf.data(), pec);
      bbuf.consume(used);
      if (pec == http::error::need_more || pec == http::error::need_buffer) break;
      if (pec) {
        backend_failed = true;
        backend_error = pec.message();
        break;
      }
      if (used == 0) break;
    }
    if (backend_failed) break;
    const std::size_t got = sizeof chunk - res.body().size;
    if (got == 0) continue;  // framing only (a chunk header, or the terminator: then the loop ends)
    res.body().data = chunk;
    res.body().size = got;
    res.body().more = !p.is_done();
    body_finished = !res.body().more;
    if (body_finished) done_with_backend();
    client.expires_after(opts.backend_idle_timeout);
    auto [wec2, wn2] = co_await http::async_write(client, sr, nothrow);
    if (wec2 == http::error::need_buffer) wec2 = {};
    if (wec2) co_return false;  // client gone
  }
  if (backend_failed) {
    record_error(b);
    if (chunked && sse) {
      // End the stream with an SSE error event the client can read, then the last chunk.
      const std::string ev = "event: error\ndata: " +
                             router_error_json(502, "BadGateway", "backend " + bname + " failed mid-stream: " + backend_error) +
                             "\n\n";
      char head[32];
      std::snprintf(head, sizeof head, "%zx\r\n", ev.size());
      const std::string tail = std::string(head) + ev + "\r\n0\r\n\r\n";
      co_await asio::async_write(client.socket(), asio::buffer(tail), nothrow);
    }
    co_return false;  // close the client connection: the response is incomplete
  }
  done_with_backend();  // the response is read whole (a body that ended on framing alone)
  // The serializer ends the body (a chunked body's last chunk) on the first
  // write with more = false, and only then; is_done() can lag behind it.
  if (!body_finished) {
    res.body().data = nullptr;
    res.body().size = 0;
    res.body().more = false;
    auto [fec, fn] = co_await http::async_write(client, sr, nothrow);
    if (fec && fec != http::error::need_buffer) co_return false;
  }
  client.expires_never();
  co_return true;
}

}  // namespace agentperf::route
