#include "net/http_client.h"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <variant>

#include "common/asio_aliases.h"
#include "common/clock.h"
#include "common/error.h"
#include "net/http_response_reader.h"
#include "net/openai_response.h"
#include "net/socket_freshness.h"
#include "net/sse_parser.h"

namespace agentperf::net {

using namespace aio;

namespace {
// Counts the content events that arrived in bursts (kBurstRead or more,
// each within kBurstGapNs of the one before: the same socket read, or
// back-to-back ones; no engine streams tokens that close together) and
// flags a stream whose content arrived mostly so (record.h).
void note_bursts(RequestRecord& rec) {
  constexpr std::int64_t kBurstGapNs = 100'000;
  const auto& t = rec.content_ns;
  rec.burst_events = 0;
  for (std::size_t i = 0; i < t.size();) {
    std::size_t j = i + 1;
    while (j < t.size() && t[j] - t[j - 1] < kBurstGapNs) ++j;
    if (static_cast<int>(j - i) >= kBurstRead) rec.burst_events += static_cast<int>(j - i);
    i = j;
  }
  if (rec.content_events >= 8 && 2 * rec.burst_events >= rec.content_events && rec.warning.empty())
    rec.warning = kBurstyWarning;
}

// What the client can check of a server's word: a stream that ended with
// neither [DONE] nor a finish reason, and a usage count that the request or
// the stream rules out (record.h). Warnings, not errors: the request was
// answered, but its numbers are not to be trusted.
void note_untrusted(RequestRecord& rec, bool sse) {
  if (rec.error) return;
  if (const auto& u = rec.usage_completion_tokens) {
    const std::int64_t events = rec.content_events + rec.reasoning_events;
    if (rec.requested_osl > 0 && *u > rec.requested_osl) {
      rec.warning = kUsageOverMaxTokensWarning;
      return;
    }
    if (sse && *u > 1000 * (events + 1)) {
      rec.warning = kUsageOverStreamWarning;
      return;
    }
  }
  if (sse && !rec.saw_done && !rec.saw_finish_reason) rec.warning = kNoDoneWarning;
}
}  // namespace

namespace {
constexpr std::size_t kReadChunk = 64 << 10;
// How soon a stale keep-alive socket fails after a request is written to
// it: within a network round trip (RST or EOF on the first read). A failure
// later than this is a server that had the request (see send()).
constexpr std::int64_t kStaleSocketBoundNs = 250'000'000;

bool is_event_stream(std::string_view content_type) {
  return content_type.find("text/event-stream") != std::string_view::npos;
}
}  // namespace

using TlsStream = asio::ssl::stream<tcp::socket>;

// One pooled connection: its socket (under TLS or not), its read buffer and
// its watchdog.
//
// The watchdog is one timer per connection, not one per read: an exchange
// sets `deadline` and the timer, when it fires, either cancels the socket's
// operations (the deadline has passed: timed_out) or re-arms itself for the
// deadline now set. Request deadlines only move later, so a request re-arms
// nothing (only a deadline earlier than the armed one does) and the timer
// fires about once per request timeout, where Beast's tcp_stream armed and
// cancelled a timer around every read and write.
struct Connection {
  std::variant<tcp::socket, TlsStream> stream;
  asio::steady_timer watchdog;
  // Read by the watchdog's handler, which may run after the connection is
  // gone (a completed wait already queued when the timer is destroyed).
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  bool watchdog_armed = false;
  std::uint64_t arm_generation = 0;
  bool timed_out = false;
  // One read buffer for the connection's life: a read takes whatever the
  // kernel holds (up to 64 KiB) in one recvmsg; body bytes are parsed in
  // place from it.
  std::unique_ptr<char[]> buffer{new char[kReadChunk]};
  // Reset per exchange, kept for the connection's life so that their
  // buffers are allocated once, not per request.
  HttpResponseReader reader;
  SseParser sse;
  std::vector<asio::const_buffer> write_buffers;
  std::int64_t last_used_ns = 0;
  std::uint64_t served = 0;

  explicit Connection(asio::io_context& io) : stream(std::in_place_index<0>, io), watchdog(io) {}
  Connection(asio::io_context& io, asio::ssl::context& ctx) : stream(std::in_place_index<1>, io, ctx), watchdog(io) {}
  ~Connection() { *alive = false; }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  tcp::socket& socket() {
    if (auto* p = std::get_if<0>(&stream)) return *p;
    return std::get<1>(stream).next_layer();
  }

  // Operations from now on end by `until`: past it, they are cancelled and
  // timed_out is set.
  void watch(std::chrono::steady_clock::time_point until) {
    deadline = until;
    timed_out = false;
    // Armed for later than this (a connect's deadline before a shorter
    // request timeout): arm again, earlier.
    if (!watchdog_armed || watchdog.expiry() > until) arm();
  }
  void unwatch() { deadline = std::chrono::steady_clock::time_point::max(); }
  // An armed watchdog is pending work that keeps the event loop running:
  // the pool disarms its idle connections once nothing is in flight.
  void disarm() {
    if (!watchdog_armed) return;
    watchdog_armed = false;
    ++arm_generation;  // the cancelled wait's handler, when it runs, is stale
    watchdog.cancel();
  }

  void arm() {
    watchdog_armed = true;
    const std::uint64_t generation = ++arm_generation;  // a wait this replaces is stale
    watchdog.expires_at(deadline);
    watchdog.async_wait([this, alive = alive, generation](const boost::system::error_code& ec) {
      if (!*alive || generation != arm_generation) return;
      watchdog_armed = false;
      if (ec || deadline == std::chrono::steady_clock::time_point::max()) return;  // idle: armed again on use
      if (std::chrono::steady_clock::now() >= deadline) {
        timed_out = true;
        boost::system::error_code ignored;
        socket().cancel(ignored);
        return;
      }
      arm();
    });
  }

  void close() {
    boost::system::error_code ec;
    socket().shutdown(tcp::socket::shutdown_both, ec);
    socket().close(ec);
  }
};

void InFlight::cancel(std::string reason) {
  if (cancelled) return;
  cancelled = true;
  cancel_ns = monotonic_ns();
  cancel_reason = std::move(reason);
  if (conn) {
    boost::system::error_code ignored;
    conn->socket().cancel(ignored);
  }
}

HttpClient::HttpClient(asio::io_context& io, Url target, ClientOptions opts)
    : io_(io), target_(std::move(target)), opts_(opts) {
  if (target_.tls) {
    tls_ctx_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    if (opts_.tls_verify) {
      tls_ctx_->set_default_verify_paths();
      tls_ctx_->set_verify_mode(asio::ssl::verify_peer);
    } else {
      tls_ctx_->set_verify_mode(asio::ssl::verify_none);
    }
  }
}

HttpClient::~HttpClient() {
  for (auto& c : idle_) c->close();
}

void HttpClient::resolve() {
  tcp::resolver resolver(io_);
  boost::system::error_code ec;
  endpoints_ = resolver.resolve(target_.host, std::to_string(target_.port), ec);
  if (ec || endpoints_.empty())
    throw UserError("cannot resolve host '" + target_.host + "' of " + target_.origin() + ": " +
                    (ec ? ec.message() : std::string("no addresses")));
}

void HttpClient::set_endpoints(tcp::resolver::results_type eps) { endpoints_ = std::move(eps); }

std::string HttpClient::serialize_head(const HttpRequest& req) const {
  std::string head;
  head.reserve(256);
  head += req.method;
  head += ' ';
  head += req.path;
  head += " HTTP/1.1\r\nHost: ";
  head += target_.host_header();
  head += "\r\n";
  // A header the user gives replaces ours (one Connection, one Accept...);
  // Host and Content-Length stay ours: they describe the bytes we send.
  bool has_ct = false, has_accept = false, has_connection = false;
  for (const auto& [k, v] : req.headers) {
    if (ascii_iequals(k, "host") || ascii_iequals(k, "content-length")) continue;
    if (ascii_iequals(k, "content-type")) has_ct = true;
    if (ascii_iequals(k, "accept")) has_accept = true;
    if (ascii_iequals(k, "connection")) has_connection = true;
    head += k;
    head += ": ";
    head += v;
    head += "\r\n";
  }
  if (!has_ct && !req.body.empty()) head += "Content-Type: application/json\r\n";
  if (!has_accept) head += "Accept: text/event-stream, application/json\r\n";
  if (!has_connection) head += "Connection: keep-alive\r\n";
  if (req.method != "GET" || !req.body.empty()) {
    head += "Content-Length: ";
    head += std::to_string(req.body_size());
    head += "\r\n";
  }
  head += "\r\n";
  return head;
}

asio::awaitable<std::unique_ptr<Connection>> HttpClient::acquire(ErrorInfo& err) {
  const std::int64_t now = monotonic_ns();
  const std::int64_t limit_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(opts_.keepalive_idle_limit).count();
  while (!idle_.empty()) {
    auto conn = std::move(idle_.back());
    idle_.pop_back();
    auto& sock = conn->socket();
    if (!pooled_socket_usable(sock.is_open() ? sock.native_handle() : -1, now - conn->last_used_ns, limit_ns)) {
      ++stats_.stale_dropped;
      conn->close();
      continue;
    }
    ++stats_.reused;
    co_return conn;
  }
  co_return co_await connect_new(err);
}

asio::awaitable<std::unique_ptr<Connection>> HttpClient::connect_new(ErrorInfo& err) {
  if (endpoints_.empty()) resolve();
  std::string last;
  const int attempts = std::max(1, opts_.connect_attempts);
  const std::string timed_out = "timed out after " + std::to_string(opts_.connect_timeout.count()) + " ms";
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0) {
      asio::steady_timer backoff(io_, std::chrono::milliseconds(50 << std::min(attempt - 1, 6)));
      co_await backoff.async_wait(nothrow);
    }
    auto conn = tls_ctx_ ? std::make_unique<Connection>(io_, *tls_ctx_) : std::make_unique<Connection>(io_);
    // The connect and the TLS handshake share one deadline.
    conn->watch(std::chrono::steady_clock::now() + opts_.connect_timeout);
    auto [ec, ep] = co_await asio::async_connect(conn->socket(), endpoints_, nothrow);
    if (ec) {
      last = conn->timed_out ? timed_out : ec.message();
      ++stats_.connect_failures;
      continue;
    }
    boost::system::error_code ignored;
    conn->socket().set_option(tcp::no_delay(true), ignored);
    if (auto* tls = std::get_if<1>(&conn->stream)) {
      if (!SSL_set_tlsext_host_name(tls->native_handle(), target_.host.c_str())) {
        last = boost::system::error_code(static_cast<int>(::ERR_get_error()), asio::error::get_ssl_category()).message();
        continue;
      }
      auto [hec] = co_await tls->async_handshake(asio::ssl::stream_base::client, nothrow);
      if (hec) {
        // A failed handshake is not retried: it is a configuration problem.
        err = ErrorInfo{std::nullopt, "TLSError",
                        "TLS handshake with " + target_.origin() + " failed: " + (conn->timed_out ? timed_out : hec.message())};
        co_return nullptr;
      }
    }
    conn->unwatch();
    ++stats_.connects;
    co_return conn;
  }
  err = ErrorInfo{std::nullopt, "ConnectionError",
                  "cannot connect to " + target_.origin() + ": " + last + " (" + std::to_string(attempts) + " attempt" +
                      (attempts == 1 ? "" : "s") + ")"};
  co_return nullptr;
}

void HttpClient::release(std::unique_ptr<Connection> conn) {
  conn->last_used_ns = monotonic_ns();
  ++conn->served;
  idle_.push_back(std::move(conn));
}

namespace {

// What one request/response exchange produced, besides the record.
struct ExchangeResult {
  bool reusable = false;
  // The exchange failed before a single response byte arrived (the write
  // failed, or the peer closed/reset while we waited for the status line):
  // the server cannot have started answering this request.
  bool failed_before_response = false;
};

bool is_closed_by_peer(const boost::system::error_code& ec) {
  return ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::ssl::error::stream_truncated;
}

template <class Stream>
asio::awaitable<ExchangeResult> exchange(Stream& stream, Connection& conn, const std::string& head,
                                         const HttpRequest& req, RequestRecord& rec, InFlight* inflight,
                                         const ClientOptions& opts, std::string* body_out) {
  ExchangeResult result;
  auto& buffers = conn.write_buffers;
  buffers.clear();
  buffers.emplace_back(asio::buffer(head));
  for (const auto& seg : req.body) buffers.emplace_back(asio::buffer(*seg));

  auto fail = [&](ErrorInfo e) {
    if (inflight && inflight->cancelled) {
      rec.was_cancelled = true;
      rec.cancellation_ns = inflight->cancel_ns;
      e = ErrorInfo{499, "RequestCancelled", inflight->cancel_reason};
    }
    if (!rec.error) rec.error = std::move(e);
    rec.end_ns = monotonic_ns();
    conn.unwatch();
  };
  auto timeout_ms = [&opts] { return std::to_string(opts.request_timeout.count()) + " ms"; };

  rec.start_ns = monotonic_ns();
  rec.start_wall_ns = wall_ns();
  // monotonic_ns() reads steady_clock (common/clock.cpp): no second clock read.
  conn.watch(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(rec.start_ns)) + opts.request_timeout);
  auto [wec, written] = co_await asio::async_write(stream, buffers, nothrow);
  if (wec) {
    result.failed_before_response = !conn.timed_out;
    fail(ErrorInfo{std::nullopt, conn.timed_out ? "RequestTimeout" : "ConnectionError",
                   "failed to send the request (" + std::to_string(written) + " of " +
                       std::to_string(head.size() + req.body_size()) + " bytes written): " +
                       (conn.timed_out ? "timed out after " + timeout_ms() : wec.message())});
    co_return result;
  }

  auto& reader = conn.reader;
  reader.reset();
  OpenAIResponseParser oai(rec);
  auto& sse_parser = conn.sse;
  sse_parser.reset();
  bool sse = false, success = false;
  std::string body;  // non-SSE body (JSON answer or error text)
  std::size_t body_cap = 0;
  int events = 0;
  bool oversized_event = false, trailing_bytes = false;

  while (!reader.done()) {
    auto [ec, n] = co_await stream.async_read_some(asio::buffer(conn.buffer.get(), kReadChunk), nothrow);
    // A cancel that lands while a completed read waits to be delivered
    // cancels nothing in the socket: check the flag after every read.
    if (inflight && inflight->cancelled) {
      fail(ErrorInfo{});
      co_return result;
    }
    // The watchdog may fire while a completed read waits to be delivered:
    // its cancel then cancelled nothing, so the read ends the exchange here.
    if (conn.timed_out && !ec) ec = asio::error::operation_aborted;
    std::string_view in(conn.buffer.get(), n);
    while (!in.empty() && !reader.done() && !reader.failed()) {
      const bool had_head = reader.head_complete();
      const std::string_view piece = reader.next(in);
      if (!had_head && reader.head_complete()) {
        rec.ack_ns = monotonic_ns();
        rec.http_status = reader.status();
        success = rec.http_status >= 200 && rec.http_status < 300;
        // A compressed body (a proxy honouring a user's -H 'Accept-Encoding:
        // gzip') cannot be parsed as events or JSON: say so, rather than
        // report a truncated stream with 0 events.
        if (const auto enc = reader.field("content-encoding"); !enc.empty() && !ascii_iequals(enc, "identity")) {
          fail(ErrorInfo{rec.http_status, "CompressedResponse",
                         "the response is compressed (Content-Encoding: " + std::string(enc) +
                             "); agentperf reads uncompressed responses: drop the Accept-Encoding header"});
          co_return result;
        }
        sse = success && is_event_stream(reader.field("content-type")) && !body_out;
        rec.streamed = sse;
        // One stamp per content event: room for the answer asked for (up
        // to 4096) at once, rather than growing 1, 2, 4, ... per request.
        if (sse && rec.requested_osl > 0)
          rec.content_ns.reserve(static_cast<std::size_t>(std::min<std::int64_t>(rec.requested_osl, 4096)));
        body_cap = success ? opts.max_body_bytes : opts.max_error_body_bytes;
      }
      if (piece.empty()) continue;
      if (sse) {
        if (!sse_parser.feed(piece, [&](const SseEvent& ev) {
              ++events;
              oai.on_event(ev);
            }))
          oversized_event = true;
      } else if (body.size() < body_cap) {
        body.append(piece.substr(0, body_cap - body.size()));
      }
      if (oversized_event) {
        fail(ErrorInfo{std::nullopt, "ProtocolError",
                       "an SSE event exceeded 64 MiB; the stream is not a valid event stream"});
        co_return result;
      }
    }
    if (reader.done() && !in.empty()) trailing_bytes = true;  // bytes past the answer: not reusable
    if (reader.failed()) {
      fail(ErrorInfo{std::nullopt, "ProtocolError",
                     reader.head_complete() ? "invalid HTTP response body after " +
                                                  std::to_string(reader.body_bytes()) + " bytes: " + reader.error()
                                            : "invalid HTTP response: " + reader.error()});
      co_return result;
    }
    if (!ec) continue;
    if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated) {
      reader.on_close();
      if (reader.done()) break;
    }
    if (!reader.head_complete()) {
      result.failed_before_response = reader.bytes_seen() == 0 && !conn.timed_out && is_closed_by_peer(ec);
      fail(ErrorInfo{std::nullopt, conn.timed_out ? "RequestTimeout" : "ConnectionError",
                     conn.timed_out ? "no response headers within " + timeout_ms()
                     : reader.bytes_seen() == 0 && is_closed_by_peer(ec)
                         ? "server closed the connection without sending a response (" + ec.message() + ")"
                         : "the connection ended inside the response's head after " +
                               std::to_string(reader.bytes_seen()) + " bytes (" + ec.message() + ")"});
      co_return result;
    }
    // A server that sent [DONE] and then closed without the chunked
    // terminator still delivered the whole answer.
    if (sse && rec.saw_done && !rec.error && !conn.timed_out && is_closed_by_peer(ec)) {
      rec.end_ns = monotonic_ns();
      conn.unwatch();
      note_untrusted(rec, true);
      note_bursts(rec);
      co_return result;
    }
    fail(ErrorInfo{std::nullopt, conn.timed_out ? "RequestTimeout" : "TruncatedStream",
                   conn.timed_out ? "response not complete within " + timeout_ms() + " (" + std::to_string(events) +
                                        " SSE events received)"
                                  : "response stream truncated after " + std::to_string(reader.body_bytes()) +
                                        " body bytes and " + std::to_string(events) + " SSE events: " +
                                        (ec == asio::error::eof ? std::string("the server closed the connection")
                                                                : ec.message())});
    co_return result;
  }
  rec.end_ns = monotonic_ns();
  conn.unwatch();

  if (!success) {
    if (!rec.error) rec.error = OpenAIResponseParser::http_error(rec.http_status, reader.reason(), body);
    if (body_out) *body_out = std::move(body);
  } else if (body_out) {
    *body_out = std::move(body);
  } else if (sse) {
    note_untrusted(rec, true);
    note_bursts(rec);
    if (sse_parser.has_partial_event() && !rec.error && !rec.saw_done) {
      rec.error = ErrorInfo{std::nullopt, "TruncatedStream",
                            "response ended in the middle of an SSE event after " + std::to_string(events) +
                                " events"};
    }
  } else {
    oai.on_body(body, rec.end_ns);
    note_untrusted(rec, false);
  }
  result.reusable = reader.keep_alive() && !trailing_bytes;
  if (inflight && inflight->cancelled) result.reusable = false;
  co_return result;
}

}  // namespace

namespace {
// Clears what a failed first attempt wrote into the record; identity,
// schedule and request shape stay.
void reset_for_retry(RequestRecord& rec) {
  rec.ack_ns = rec.end_ns = 0;
  rec.content_ns.clear();
  rec.http_status = 0;
  rec.streamed = rec.saw_done = rec.saw_finish_reason = false;
  rec.error.reset();
}
}  // namespace

HttpClient::Busy::Busy(HttpClient& c) : client(c) { ++client.busy_; }
HttpClient::Busy::~Busy() {
  if (--client.busy_ == 0)
    for (auto& c : client.idle_) c->disarm();
}

asio::awaitable<void> HttpClient::send(const HttpRequest& req, RequestRecord& rec, InFlight* inflight) {
  const Busy busy(*this);
  ErrorInfo err;
  auto conn = co_await acquire(err);
  if (!conn) {
    rec.start_ns = monotonic_ns();
    rec.start_wall_ns = wall_ns();
    rec.end_ns = rec.start_ns;
    rec.error = std::move(err);
    co_return;
  }
  if (inflight && inflight->cancelled) {
    release(std::move(conn));
    rec.start_ns = rec.end_ns = monotonic_ns();
    rec.start_wall_ns = wall_ns();
    rec.was_cancelled = true;
    rec.cancellation_ns = inflight->cancel_ns;
    rec.error = ErrorInfo{499, "RequestCancelled", inflight->cancel_reason};
    co_return;
  }
  const std::string head = serialize_head(req);
  if (inflight) inflight->conn = conn.get();
  ExchangeResult r;
  if (auto* plain = std::get_if<0>(&conn->stream))
    r = co_await exchange(*plain, *conn, head, req, rec, inflight, opts_, nullptr);
  else
    r = co_await exchange(std::get<1>(conn->stream), *conn, head, req, rec, inflight, opts_, nullptr);
  // A reused keep-alive socket that the server had already closed (llama.cpp's
  // server closes after every stream while announcing keep-alive; others on
  // their idle timeout) fails before any response byte: the request never
  // reached a live connection, so it is sent once more on a fresh one, as
  // curl and Go's http.Transport do. A request that got any response byte is
  // never re-sent. Nor is one whose socket failed only after a while: a
  // stale socket fails within a round trip of the write, while a failure
  // kStaleSocketBound or more after sending means a live server took the
  // request, worked on it and dropped it; sending it again would time the
  // second attempt only and make the server do the work twice.
  const std::int64_t waited_ns = monotonic_ns() - rec.start_ns;
  if (r.failed_before_response && conn->served > 0 && !(inflight && inflight->cancelled) &&
      waited_ns >= kStaleSocketBoundNs) {
    if (rec.error)
      rec.error->message += " (on a reused connection, " + std::to_string(waited_ns / 1'000'000) +
                            " ms after sending: the server had the request and dropped it; not re-sent)";
  } else if (r.failed_before_response && conn->served > 0 && !(inflight && inflight->cancelled)) {
    conn->close();
    ++stats_.retries;
    ++rec.retries;
    const std::string first_error = rec.error ? rec.error->message : std::string();
    reset_for_retry(rec);
    ErrorInfo cerr;
    conn = co_await connect_new(cerr);
    if (!conn) {
      rec.end_ns = monotonic_ns();  // start_ns stays the first send
      cerr.message += " (retrying after a reused connection failed: " + first_error + ")";
      rec.error = std::move(cerr);
      if (inflight) inflight->conn = nullptr;
      co_return;
    }
    if (inflight) inflight->conn = conn.get();
    // The request's clock runs from its first send: the retry's delay is
    // part of what the user waited. The retry's own send time is kept.
    const std::int64_t first_start = rec.start_ns, first_wall = rec.start_wall_ns;
    if (auto* plain = std::get_if<0>(&conn->stream))
      r = co_await exchange(*plain, *conn, head, req, rec, inflight, opts_, nullptr);
    else
      r = co_await exchange(std::get<1>(conn->stream), *conn, head, req, rec, inflight, opts_, nullptr);
    rec.retry_start_ns = rec.start_ns;
    rec.start_ns = first_start;
    rec.start_wall_ns = first_wall;
  }
  if (inflight) inflight->conn = nullptr;
  if (r.reusable && !rec.error) {
    release(std::move(conn));
  } else if (r.reusable && rec.error && rec.http_status >= 400) {
    release(std::move(conn));  // an HTTP error answer leaves the socket healthy
  } else {
    conn->close();
  }
}

asio::awaitable<SimpleResponse> HttpClient::fetch(const HttpRequest& req) {
  const Busy busy(*this);
  SimpleResponse out;
  ErrorInfo err;
  auto conn = co_await acquire(err);
  if (!conn) {
    out.error = std::move(err);
    co_return out;
  }
  RequestRecord rec;
  const std::string head = serialize_head(req);
  ExchangeResult r;
  if (auto* plain = std::get_if<0>(&conn->stream))
    r = co_await exchange(*plain, *conn, head, req, rec, nullptr, opts_, &out.body);
  else
    r = co_await exchange(std::get<1>(conn->stream), *conn, head, req, rec, nullptr, opts_, &out.body);
  out.status = rec.http_status;
  if (rec.error && (rec.http_status == 0 || rec.error->type == "CompressedResponse")) out.error = rec.error;
  if (r.reusable) release(std::move(conn));
  else conn->close();
  co_return out;
}

SimpleResponse http_get_once(const std::string& url, std::chrono::milliseconds timeout) {
  const Url u = parse_url(url);
  asio::io_context io;
  ClientOptions o;
  o.request_timeout = timeout;
  o.connect_timeout = timeout;
  o.connect_attempts = 1;
  HttpClient client(io, u, o);
  HttpRequest req;
  req.method = "GET";
  req.path = u.path;
  SimpleResponse out;
  try {
    asio::co_spawn(io, [&]() -> asio::awaitable<void> { out = co_await client.fetch(req); }, asio::detached);
    io.run();
  } catch (const UserError& e) {  // resolution failures
    out.error = ErrorInfo{std::nullopt, "ConnectionError", e.what()};
  }
  return out;
}

}  // namespace agentperf::net
