// The client against a real Beast server (testserver::ScriptedServer) that
// streams scripted responses on an exact schedule, and misbehaves on purpose.
#include "net/http_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

#include "common/utf8.h"

#include "support/client_harness.h"
#include "testserver/openai_scripts.h"
#include "testserver/scripted_server.h"
#include "testserver/self_signed.h"

using namespace agentperf;
using namespace std::chrono_literals;
using testserver::ScriptedResponse;
using testserver::ScriptedServer;
using testserver::StreamScript;
using test_support::ClientHarness;
using test_support::chat_request;

namespace {
double ms(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }

ScriptedResponse fixed(int status, std::string reason, std::string body, std::string ctype = "application/json") {
  ScriptedResponse r;
  r.status = status;
  r.reason = std::move(reason);
  r.framing = ScriptedResponse::Framing::content_length;
  r.headers = {{"Content-Type", ctype}};
  r.steps.push_back({0ns, std::move(body)});
  return r;
}
}  // namespace

TEST(HttpClient, MeasuresTtftAndItlWithinOneMillisecondOfTheSchedule) {
  StreamScript s;
  s.tokens = 20;
  s.ttft = 50ms;
  s.itl = 10ms;
  s.prompt_tokens = 7;
  testserver::ServerOptions opts;
  opts.record_write_times = true;
  ScriptedServer server([&](const testserver::ReceivedRequest&) { return testserver::openai_stream_response(s); }, opts);
  server.start();
  ClientHarness h(server.url());
  auto rec = h.send(chat_request("sched-1"));
  ASSERT_TRUE(rec.ok()) << rec.error->message;
  ASSERT_EQ(rec.content_ns.size(), 20u);
  auto writes = server.write_times("sched-1");
  ASSERT_GE(writes.size(), 20u);
  // The client's stamps follow what the server did within 1 ms: TTFT, each
  // inter-token gap, and each event against the moment it was written. (The
  // server itself may run late on a loaded machine; that is not the
  // client's error, so the schedule is checked loosely.) The first event is
  // held to the same rule as the others below (at most one of the 20 late
  // by 1 ms, none by 5 ms): CI once saw it stamped 1.06 ms after its write,
  // the VM's wake-up, not the stamping.
  EXPECT_NEAR(ms(rec.content_ns.front() - rec.start_ns), 50.0, 5.0);
  // Every gap and every event within 1 ms, except at most one: a 2-core VM
  // now and then deschedules the client thread for 2 ms (seen in 2 of about
  // 20 runs), which is the machine, not the stamping; none may be off by 5 ms.
  std::vector<double> gaps;
  int gaps_off = 0;
  for (std::size_t i = 1; i < 20; ++i) {
    const double off = std::fabs(ms(rec.content_ns[i] - rec.content_ns[i - 1]) - ms(writes[i] - writes[i - 1]));
    if (off >= 1.0) ++gaps_off;
    EXPECT_LT(off, 5.0) << "gap " << i;
    gaps.push_back(ms(rec.content_ns[i] - rec.content_ns[i - 1]));
  }
  EXPECT_LE(gaps_off, 2) << "gaps off by 1 ms or more (one late read moves the two gaps around it)";
  // The schedule itself, loosely: a single server hiccup (15 ms instead of
  // 10 on this shared 2-core machine) moves one gap, not the median.
  std::nth_element(gaps.begin(), gaps.begin() + 9, gaps.end());
  EXPECT_NEAR(gaps[9], 10.0, 2.0);
  int events_late = 0;
  for (std::size_t i = 0; i < 20; ++i) {
    EXPECT_GE(rec.content_ns[i], writes[i]);
    if (ms(rec.content_ns[i] - writes[i]) >= 1.0) ++events_late;
    EXPECT_LT(ms(rec.content_ns[i] - writes[i]), 5.0) << "event " << i;
  }
  EXPECT_LE(events_late, 1) << "events stamped 1 ms or more after their write";
  EXPECT_EQ(rec.usage_prompt_tokens, 7);
  EXPECT_EQ(rec.usage_completion_tokens, 20);
  EXPECT_TRUE(rec.saw_done);
  EXPECT_TRUE(rec.streamed);
}

TEST(HttpClient, HandlesEventsSplitAcrossReadsAndManyEventsPerRead) {
  const std::string ev = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n";
  testserver::ServerOptions opts;
  opts.record_write_times = true;
  ScriptedServer server([&](const testserver::ReceivedRequest&) {
    ScriptedResponse r;
    r.headers = {{"Content-Type", "text/event-stream"}};
    r.steps.push_back({0ns, ev + ev.substr(0, 17)});           // one event and a half
    r.steps.push_back({20ms, ev.substr(17) + ev + ev + ev});   // the rest, then three merged
    r.steps.push_back({40ms, ev.substr(0, ev.size() - 1)});    // all but the final LF
    r.steps.push_back({60ms, "\ndata: [DONE]\n\n"});
    return r;
  }, opts);
  server.start();
  ClientHarness h(server.url());
  auto rec = h.send(chat_request("split-1"));
  ASSERT_TRUE(rec.ok()) << rec.error->message;
  ASSERT_EQ(rec.content_ns.size(), 6u);
  const auto writes = server.write_times("split-1");
  ASSERT_EQ(writes.size(), 4u);
  // An event is stamped when its last byte arrives: event 2 with the second
  // write (as are events 3-5), event 6 with the fourth (its blank line). Within 1 ms of the
  // server's writes (which may themselves run late on a loaded machine).
  EXPECT_NEAR(ms(rec.content_ns[1] - rec.content_ns[0]), ms(writes[1] - writes[0]), 1.0);
  EXPECT_NEAR(ms(rec.content_ns[5] - rec.content_ns[4]), ms(writes[3] - writes[1]), 1.0);
  EXPECT_NEAR(ms(rec.content_ns[1] - rec.content_ns[0]), 20.0, 10.0);
  EXPECT_LE(rec.content_ns[1], rec.content_ns[2]);
  EXPECT_LE(rec.content_ns[2], rec.content_ns[3]);
  EXPECT_TRUE(rec.saw_done);
}

TEST(HttpClient, ParsesCrlfStreams) {
  StreamScript s;
  s.tokens = 5;
  s.line_end = "\r\n";
  ScriptedServer server([&](const testserver::ReceivedRequest&) { return testserver::openai_stream_response(s); });
  server.start();
  ClientHarness h(server.url());
  auto rec = h.send(chat_request());
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec.content_events, 5);
  EXPECT_TRUE(rec.saw_done);
}

TEST(HttpClient, ReusesKeepAliveConnections) {
  StreamScript s;
  ScriptedServer server([&](const testserver::ReceivedRequest&) { return testserver::openai_stream_response(s); });
  server.start();
  ClientHarness h(server.url());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(h.send(chat_request()).ok());
  EXPECT_EQ(server.stats().connections, 1u);
  EXPECT_EQ(h.client.stats().reused, 4u);
}

TEST(HttpClient, ServerClosingAnIdleSocketLosesNoRequest) {
  StreamScript s;
  testserver::ServerOptions opts;
  opts.idle_timeout = 100ms;  // like uvicorn's keep-alive timeout, only shorter
  ScriptedServer server([&](const testserver::ReceivedRequest&) { return testserver::openai_stream_response(s); }, opts);
  server.start();
  net::ClientOptions copts;
  copts.keepalive_idle_limit = 60s;  // the client does not know the server's limit
  ClientHarness h(server.url(), copts);
  for (int i = 0; i < 3; ++i) {
    auto rec = h.send(chat_request());
    ASSERT_TRUE(rec.ok()) << "request " << i << ": " << rec.error->message;
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_EQ(server.stats().requests, 3u);
  EXPECT_EQ(server.stats().idle_closes, 3u);
  EXPECT_EQ(h.client.stats().stale_dropped, 2u);  // detected before sending, never re-sent
  EXPECT_EQ(server.stats().connections, 3u);
}

TEST(HttpClient, DropsConnectionsIdleLongerThanTheClientLimit) {
  StreamScript s;
  ScriptedServer server([&](const testserver::ReceivedRequest&) { return testserver::openai_stream_response(s); });
  server.start();
  net::ClientOptions copts;
  copts.keepalive_idle_limit = 50ms;
  ClientHarness h(server.url(), copts);
  ASSERT_TRUE(h.send(chat_request()).ok());
  std::this_thread::sleep_for(120ms);
  ASSERT_TRUE(h.send(chat_request()).ok());
  EXPECT_EQ(h.client.stats().stale_dropped, 1u);
  EXPECT_EQ(server.stats().connections, 2u);
}

TEST(HttpClient, HttpErrorStatusesBecomeErrorRecords) {
  ScriptedServer server([&](const testserver::ReceivedRequest& req) {
    if (req.target == "/bad")
      return fixed(400, "Bad Request", R"({"object":"error","message":"prompt too long","code":400})");
    return fixed(503, "Service Unavailable", "overloaded", "text/plain");
  });
  server.start();
  ClientHarness h(server.url());
  auto bad = h.send(chat_request("a", "/bad"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error->code, 400);
  EXPECT_EQ(bad.error->message, "HTTP 400: prompt too long");
  auto busy = h.send(chat_request("b", "/other"));
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error->code, 503);
  EXPECT_NE(busy.error->message.find("overloaded"), std::string::npos);
  // An error answer leaves the connection usable.
  EXPECT_EQ(server.stats().connections, 1u);
}

TEST(HttpClient, GarbageResponseIsAProtocolError) {
  ScriptedServer server([&](const testserver::ReceivedRequest&) {
    ScriptedResponse r;
    r.framing = ScriptedResponse::Framing::raw;
    r.steps.push_back({0ns, "SSH-2.0-OpenSSH_9.2\r\n\r\n"});
    r.close_after = true;
    return r;
  });
  server.start();
  ClientHarness h(server.url());
  auto rec = h.send(chat_request());
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->type, "ProtocolError");
  EXPECT_NE(rec.error->message.find("invalid HTTP response"), std::string::npos);
}

TEST(HttpClient, TruncatedStreamIsAnError) {
  StreamScript s;
  s.tokens = 3;
  ScriptedServer server([&](const testserver::ReceivedRequest&) {
    auto r = testserver::openai_stream_response(s);
    r.steps.resize(3);  // no usage, no [DONE]
    r.truncate = true;  // and no chunked terminator: the connection just closes
    return r;
  });
  server.start();
  ClientHarness h(server.url());
  auto rec = h.send(chat_request());
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->type, "TruncatedStream");
  EXPECT_NE(rec.error->message.find("3 SSE events"), std::string::npos) << rec.error->message;
}

TEST(HttpClient, CloseWithoutResponseIsAConnectionError) {
  ScriptedServer server([&](const testserver::ReceivedRequest&) {
    ScriptedResponse r;
    r.framing = ScriptedResponse::Framing::raw;
    r.close_after = true;
    return r;
  });
  server.start();
  ClientHarness h(server.url());
  auto rec = h.send(chat_request());
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.error->message.find("without sending a response"), std::string::npos) << rec.error->message;
}

TEST(HttpClient, SseErrorEventIsRecorded) {
  ScriptedServer server([&](const testserver::ReceivedRequest&) {
    ScriptedResponse r;
    r.headers = {{"Content-Type", "text/event-stream"}};
    r.steps.push_back({0ns, "event: error\ndata: {\"message\":\"scheduler crashed\"}\n\n"});
    return r;
  });
  server.start();
  ClientHarness h(server.url());
  auto rec = h.send(chat_request());
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->code, 502);
  EXPECT_NE(rec.error->message.find("scheduler crashed"), std::string::npos);
}

TEST(HttpClient, UnreachableServerIsAConnectionError) {
  std::string url;
  {
    ScriptedServer s([](const testserver::ReceivedRequest&) { return ScriptedResponse{}; });
    s.start();
    url = s.url();
  }  // stopped: nothing listens on that port now
  net::ClientOptions copts;
  copts.connect_attempts = 2;
  ClientHarness h(url, copts);
  auto rec = h.send(chat_request());
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->type, "ConnectionError");
  EXPECT_NE(rec.error->message.find("cannot connect"), std::string::npos);
  EXPECT_NE(rec.error->message.find("2 attempts"), std::string::npos);
  EXPECT_EQ(h.client.stats().connect_failures, 2u);
}

TEST(HttpClient, RequestTimeoutIsReported) {
  StreamScript s;
  s.ttft = 2s;
  ScriptedServer server([&](const testserver::ReceivedRequest&) { return testserver::openai_stream_response(s); });
  server.start();
  net::ClientOptions copts;
  copts.request_timeout = 200ms;
  ClientHarness h(server.url(), copts);
  const auto t0 = std::chrono::steady_clock::now();
  auto rec = h.send(chat_request());
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->type, "RequestTimeout");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

TEST(HttpClient, ATimeoutMidStreamKeepsTheEventsThatArrived) {
  StreamScript s;
  s.tokens = 50;
  s.ttft = 10ms;
  s.itl = 20ms;  // 1 s of stream against a 200 ms timeout
  ScriptedServer server([&](const testserver::ReceivedRequest&) { return testserver::openai_stream_response(s); });
  server.start();
  net::ClientOptions copts;
  copts.request_timeout = 200ms;
  ClientHarness h(server.url(), copts);
  const auto t0 = std::chrono::steady_clock::now();
  auto rec = h.send(chat_request());
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->type, "RequestTimeout");
  EXPECT_NE(rec.error->message.find("response not complete within 200 ms"), std::string::npos) << rec.error->message;
  EXPECT_GT(rec.content_ns.size(), 2u);
  EXPECT_LT(rec.content_ns.size(), 50u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 800ms);
}

// One watchdog timer per connection holds the deadlines (http_client.cpp):
// requests in a row on one kept-alive socket, together far longer than the
// timeout, each within it, must all succeed; and the event loop must still
// run dry after each (the harness's io.run() returns).
TEST(HttpClient, RequestsInARowOnOneSocketEachGetTheirOwnDeadline) {
  StreamScript s;
  s.tokens = 4;
  s.ttft = 40ms;
  s.itl = 10ms;  // about 70 ms a request
  ScriptedServer server([&](const testserver::ReceivedRequest&) { return testserver::openai_stream_response(s); });
  server.start();
  net::ClientOptions copts;
  copts.request_timeout = 250ms;
  ClientHarness h(server.url(), copts);
  for (int i = 0; i < 8; ++i) {
    auto rec = h.send(chat_request());
    ASSERT_TRUE(rec.ok()) << i << ": " << rec.error->message;
  }
  EXPECT_EQ(server.stats().connections, 1u);
}

TEST(HttpClient, CancelMidStreamGives499) {
  StreamScript s;
  s.tokens = 100;
  s.itl = 10ms;
  ScriptedServer server([&](const testserver::ReceivedRequest&) { return testserver::openai_stream_response(s); });
  server.start();
  ClientHarness h(server.url());
  net::InFlight inflight;
  boost::asio::steady_timer timer(h.io, 100ms);
  timer.async_wait([&](auto) { inflight.cancel("cancelled: grace period expired"); });
  auto rec = h.send(chat_request(), &inflight);
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->code, 499);
  EXPECT_TRUE(rec.was_cancelled);
  EXPECT_EQ(rec.error->message, "cancelled: grace period expired");
  EXPECT_GT(rec.content_ns.size(), 3u);
  EXPECT_LT(rec.content_ns.size(), 100u);
}

TEST(HttpClient, NonStreamedJsonResponse) {
  StreamScript s;
  s.tokens = 4;
  s.prompt_tokens = 9;
  s.ttft = 30ms;
  ScriptedServer server([&](const testserver::ReceivedRequest&) { return testserver::openai_json_response(s); });
  server.start();
  ClientHarness h(server.url());
  auto rec = h.send(chat_request());
  ASSERT_TRUE(rec.ok()) << rec.error->message;
  EXPECT_FALSE(rec.streamed);
  ASSERT_EQ(rec.content_ns.size(), 1u);
  EXPECT_NEAR(ms(rec.content_ns[0] - rec.start_ns), 30.0, 10.0);
  EXPECT_EQ(rec.usage_completion_tokens, 4);
}

TEST(HttpClient, StreamsOverTls) {
  auto pem = testserver::make_self_signed_cert();
  StreamScript s;
  s.tokens = 6;
  s.ttft = 10ms;
  s.itl = 2ms;
  testserver::ServerOptions opts;
  opts.tls_cert_pem = pem.cert;
  opts.tls_key_pem = pem.key;
  ScriptedServer server([&](const testserver::ReceivedRequest&) { return testserver::openai_stream_response(s); }, opts);
  server.start();
  ASSERT_EQ(server.url().rfind("https://", 0), 0u);
  ClientHarness h(server.url());  // certificate not verified by default
  for (int i = 0; i < 2; ++i) {
    auto rec = h.send(chat_request());
    ASSERT_TRUE(rec.ok()) << rec.error->message;
    EXPECT_EQ(rec.content_events, 6);
    // TLS is what this test is about; timing accuracy has its own tests.
    EXPECT_NEAR(ms(rec.content_ns.front() - rec.start_ns), 10.0, 10.0);
  }
  EXPECT_EQ(server.stats().connections, 1u);  // TLS sessions are kept alive too

  net::ClientOptions verify;
  verify.tls_verify = true;  // a self-signed certificate must then be refused
  ClientHarness strict(server.url(), verify);
  auto rec = strict.send(chat_request());
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->type, "TLSError");
}

// ---- How requests end (issue: no result lost, no failure passed off) ----

namespace {
// A server like llama.cpp's: answers with keep-alive but closes the socket
// when the next request arrives on it, without a byte of response. Each
// connection serves one request.
struct OneRequestPerConnection {
  std::mutex mu;
  std::map<std::uint64_t, int> served;
  StreamScript script;
  ScriptedResponse operator()(const testserver::ReceivedRequest& req) {
    std::lock_guard lk(mu);
    if (served[req.connection_id]++ > 0) {
      ScriptedResponse r;
      r.framing = ScriptedResponse::Framing::raw;
      r.close_after = true;
      return r;
    }
    return testserver::openai_stream_response(script);
  }
};
}  // namespace

TEST(HttpClient, RequestOnAStaleReusedSocketIsRetriedOnceOnAFreshConnection) {
  OneRequestPerConnection behaviour;
  behaviour.script.tokens = 3;
  ScriptedServer server([&](const testserver::ReceivedRequest& r) { return behaviour(r); });
  server.start();
  ClientHarness h(server.url());
  for (int i = 0; i < 5; ++i) {
    auto rec = h.send(chat_request("stale-" + std::to_string(i)));
    ASSERT_TRUE(rec.ok()) << "request " << i << ": " << rec.error->message;
    EXPECT_EQ(rec.content_events, 3);
    EXPECT_EQ(rec.retries, i == 0 ? 0 : 1) << i;
    // The latency counts from the first send; the retry's send is kept.
    if (i > 0) EXPECT_GT(rec.retry_start_ns, rec.start_ns) << i;
    else EXPECT_EQ(rec.retry_start_ns, 0) << i;
  }
  EXPECT_EQ(h.client.stats().retries, 4u);
  EXPECT_EQ(server.stats().connections, 5u);
}

// A server that takes a request on a reused connection, works on it for
// 600 ms and drops the connection without a byte: not a stale socket (that
// fails at once), so the request is an error naming what happened, not
// re-sent and timed from the retry (it used to report ~1 ms, VALID, while
// the server did the work twice).
TEST(HttpClient, ARequestTheServerWorkedOnAndDroppedIsAnErrorNotAResend) {
  std::mutex mu;
  std::map<std::uint64_t, int> served;
  std::atomic<int> seen{0};
  StreamScript script;
  script.tokens = 2;
  ScriptedServer server([&](const testserver::ReceivedRequest& req) {
    ++seen;
    std::lock_guard lk(mu);
    if (served[req.connection_id]++ > 0) {
      ScriptedResponse r;
      r.framing = ScriptedResponse::Framing::raw;
      r.steps.push_back({600ms, ""});
      r.close_after = true;
      return r;
    }
    return testserver::openai_stream_response(script);
  });
  server.start();
  ClientHarness h(server.url());
  ASSERT_TRUE(h.send(chat_request("w-1")).ok());
  auto rec = h.send(chat_request("w-2"));
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.retries, 0);
  EXPECT_NE(rec.error->message.find("the server had the request and dropped it; not re-sent"), std::string::npos)
      << rec.error->message;
  EXPECT_GE(rec.end_ns - rec.start_ns, 550'000'000);  // the time it really took
  EXPECT_EQ(seen.load(), 2);                          // sent once
  EXPECT_EQ(h.client.stats().retries, 0u);
}

TEST(HttpClient, RequestThatGotResponseBytesIsNeverResent) {
  std::atomic<int> seen{0};
  ScriptedServer server([&](const testserver::ReceivedRequest&) {
    ++seen;
    ScriptedResponse r;
    r.headers = {{"Content-Type", "text/event-stream"}};
    r.steps.push_back({0ns, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"});
    r.truncate = true;  // the stream breaks after one event
    return r;
  });
  server.start();
  ClientHarness h(server.url());
  auto first = h.send(chat_request("t-1"));
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.retries, 0);
  EXPECT_EQ(seen.load(), 1);
  EXPECT_EQ(h.client.stats().retries, 0u);
}

TEST(HttpClient, UserHeaderReplacesOursInsteadOfDuplicatingIt) {
  std::mutex mu;
  std::vector<std::string> connection_headers;
  StreamScript s;
  s.tokens = 1;
  ScriptedServer server([&](const testserver::ReceivedRequest& r) {
    std::lock_guard lk(mu);
    connection_headers.push_back(r.header("connection"));
    return testserver::openai_stream_response(s);
  });
  server.start();
  ClientHarness h(server.url());
  auto req = chat_request("hdr");
  req.headers.emplace_back("Connection", "close");
  auto rec = h.send(req);
  ASSERT_TRUE(rec.ok()) << rec.error->message;
  ASSERT_EQ(connection_headers.size(), 1u);
  // The test server keeps the last of repeated fields: with ours appended
  // after the user's, it would read "keep-alive".
  EXPECT_EQ(connection_headers[0], "close");
}

TEST(HttpClient, LlamaCppErrorLineInsideA200StreamIsAnError) {
  ScriptedServer server([&](const testserver::ReceivedRequest&) {
    ScriptedResponse r;
    r.headers = {{"Content-Type", "text/event-stream"}};
    // What llama.cpp's server writes for a prompt with out-of-vocabulary ids.
    r.steps.push_back({0ns, "error: {\"code\":500,\"message\":\"invalid token id 40000\",\"type\":\"server_error\"}\n\n"});
    r.steps.push_back({0ns, "data: [DONE]\n\n"});
    return r;
  });
  server.start();
  ClientHarness h(server.url());
  auto rec = h.send(chat_request());
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->type, "SSEResponseError");
  EXPECT_EQ(rec.error->code, 500);
  EXPECT_NE(rec.error->message.find("invalid token id 40000"), std::string::npos) << rec.error->message;
}

TEST(HttpClient, InvalidUtf8ErrorBodyBecomesAnExportableErrorRecord) {
  ScriptedServer server([&](const testserver::ReceivedRequest&) {
    return fixed(500, "Internal \xff Error", std::string("<html>\xc3\x28 bad \xff\xfe bytes</html>"), "text/html");
  });
  server.start();
  ClientHarness h(server.url());
  auto rec = h.send(chat_request());
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->code, 500);
  EXPECT_TRUE(is_valid_utf8(rec.error->message)) << rec.error->message;
  EXPECT_TRUE(is_valid_utf8(rec.error->type)) << rec.error->type;
  EXPECT_NE(rec.error->message.find("bad"), std::string::npos);
  EXPECT_NE(rec.error->message.find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD where the bad bytes were
}

TEST(HttpClient, ServerTimingsAreKeptBesideOurStamps) {
  ScriptedServer server([&](const testserver::ReceivedRequest&) {
    ScriptedResponse r;
    r.headers = {{"Content-Type", "text/event-stream"}};
    r.steps.push_back({0ns, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"});
    r.steps.push_back({0ns, "data: {\"choices\":[{\"delta\":{}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1},"
                            "\"timings\":{\"prompt_n\":4,\"prompt_ms\":12.5,\"predicted_n\":1,\"predicted_ms\":3.25,\"cache_n\":1}}\n\n"});
    r.steps.push_back({0ns, "data: [DONE]\n\n"});
    return r;
  });
  server.start();
  ClientHarness h(server.url());
  auto rec = h.send(chat_request());
  ASSERT_TRUE(rec.ok()) << rec.error->message;
  ASSERT_TRUE(rec.server_timings.has_value());
  EXPECT_EQ(rec.server_timings->prompt_n, 4);
  EXPECT_DOUBLE_EQ(*rec.server_timings->prompt_ms, 12.5);
  EXPECT_EQ(rec.server_timings->predicted_n, 1);
  EXPECT_DOUBLE_EQ(*rec.server_timings->predicted_ms, 3.25);
  EXPECT_EQ(rec.server_timings->cache_n, 1);
}

// A proxy that holds a stream and releases it in bursts: the numbers are
// what arrived, and the record says the tokens came several to a read.
TEST(HttpClient, EventsArrivingInBurstsAreFlagged) {
  StreamScript burst;
  burst.tokens = 20;
  burst.itl = 0ns;  // every event in one write
  StreamScript paced;
  paced.tokens = 20;
  paced.itl = 3ms;
  std::atomic<bool> bursty{true};
  ScriptedServer server([&](const testserver::ReceivedRequest&) {
    return testserver::openai_stream_response(bursty ? burst : paced);
  });
  server.start();
  ClientHarness h(server.url());
  auto rec = h.send(chat_request());
  ASSERT_TRUE(rec.ok()) << rec.error->message;
  EXPECT_EQ(rec.content_events, 20);
  // All 20 written back to back; the first may come in a read of its own,
  // with the response head, and on a loaded 2-core VM the client is
  // sometimes scheduled between two writes, splitting the rest once more
  // (18 of 20 in a fresh-clone CI run). What the record must say: well over
  // half came several to a read (the warning's rule), where the paced
  // stream below has fewer than 10.
  EXPECT_GE(rec.burst_events, 15);
  EXPECT_EQ(rec.warning, "bursty_delivery");
  bursty = false;
  auto calm = h.send(chat_request());
  ASSERT_TRUE(calm.ok());
  EXPECT_EQ(calm.content_events, 20);
  EXPECT_LT(calm.burst_events, 10);
  EXPECT_EQ(calm.warning, "");
}

// A compressed body (a proxy honouring Accept-Encoding: gzip) is named as
// such, not reported as a stream truncated after 0 events.
TEST(HttpClient, CompressedResponseIsNamed) {
  ScriptedServer server([](const testserver::ReceivedRequest&) {
    ScriptedResponse r;
    r.headers = {{"Content-Type", "text/event-stream"}, {"Content-Encoding", "gzip"}};
    r.steps.push_back({0ns, std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8)});
    return r;
  });
  server.start();
  ClientHarness h(server.url());
  auto rec = h.send(chat_request());
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error->type, "CompressedResponse");
  EXPECT_NE(rec.error->message.find("Content-Encoding: gzip"), std::string::npos) << rec.error->message;
  EXPECT_NE(rec.error->message.find("drop the Accept-Encoding header"), std::string::npos);
}
