// The router in front of real servers: `agentperf sim serve` engines and
// scripted Beast servers, all on 127.0.0.1 with ephemeral ports.
#include "route/router_server.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "metrics/inferencex_aggregate.h"
#include "replay/replay_runner.h"
#include "sim/sim_server.h"
#include "support/sim_backend.h"
#include "support/raw_http.h"
#include "testserver/scripted_server.h"
#include "trace/synth.h"

using namespace agentperf;
using namespace std::chrono_literals;
namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

struct Reply {
  int status = 0;
  std::string body;
  std::string retry_after;
  std::string error;  // transport failure
};

// A blocking request with a deadline: a hang fails the test instead of stalling it.
Reply call(std::uint16_t port, const std::string& target, const std::string& body,
           std::vector<std::pair<std::string, std::string>> headers = {}, std::chrono::seconds deadline = 20s) {
  asio::io_context io;
  beast::tcp_stream s(io);
  Reply r;
  beast::error_code ec;
  s.expires_after(deadline);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return {0, "", "", ec.message()};
  http::request<http::string_body> req{body.empty() ? http::verb::get : http::verb::post, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  http::write(s, req, ec);
  if (ec) return {0, "", "", ec.message()};
  beast::flat_buffer buf;
  http::response_parser<http::string_body> p;
  p.body_limit(boost::none);
  http::read(s, buf, p, ec);
  r.status = p.get().result_int();
  r.body = p.get().body();
  r.retry_after = std::string(p.get()[http::field::retry_after]);
  if (ec) r.error = ec.message();
  return r;
}

std::string chat(int max_tokens, bool stream, const std::string& text = "hello") {
  return R"({"model":"Qwen/Qwen3-8B","messages":[{"role":"user","content":")" + text + R"("}],"max_tokens":)" +
         std::to_string(max_tokens) + (stream ? R"(,"stream":true})" : "}");
}

route::RouterOptions router_opts(std::vector<std::string> backends, route::Policy policy) {
  route::RouterOptions o;
  o.backends = std::move(backends);
  o.policy = policy;
  o.health_interval = 100ms;
  o.health_timeout = 500ms;
  o.connect_timeout = 1000ms;
  return o;
}

// Observed prefix-cache hit of an agentic replay through a router over 3 simulated engines.
double replay_hit_rate(route::Policy policy, std::uint64_t* per_backend_requests_min) {
  std::vector<std::unique_ptr<sim::SimServer>> engines;
  std::vector<std::string> urls;
  for (int i = 0; i < 3; ++i) {
    engines.push_back(test_support::start_sim_backend(20));
    urls.push_back(engines.back()->url());
  }
  route::RouterServer router(router_opts(urls, policy));
  router.start();
  trace::SynthOptions o;
  o.traces = 24;
  o.mean_turns = 8;
  // Little shared across sessions (every engine caches a common system
  // prompt whatever the routing); most of each prompt is the session's own.
  o.system_tokens = 200;
  o.tool_tokens = 100;
  o.mean_turn_input = 1500;
  o.mean_output = 40;
  o.max_context = 30000;
  o.mean_think_time = 0.5;
  o.subagent_probability = 0.3;
  const auto traces = trace::synthesize_traces(o);
  replay::ReplayConfig c;
  c.client.url = router.url();
  c.client.endpoint_type = EndpointType::completions;  // token-id prompts: exact without a tokenizer
  c.output.quiet = true;
  c.lanes = 12;
  c.duration_s = 3.0;
  c.grace_s = 10;
  c.system_idle_cap_s = 0.3;
  c.warmup = false;
  c.routing_headers = true;
  c.benchmark_id = "route-test";
  const auto res = replay::run_replay(c, traces, "Qwen/Qwen3-8B");
  const auto stats = router.stats();
  router.stop();
  for (auto& e : engines) e->stop();
  std::uint64_t lo = ~0ull;
  for (const auto& b : stats.backends) lo = std::min(lo, b.requests);
  *per_backend_requests_min = lo;
  EXPECT_GT(res.run.records.size(), 50u);
  std::size_t failed = 0;
  for (const auto& r : res.run.records)
    if (!r.ok() && failed++ < 3) ADD_FAILURE() << "request failed: " << r.error->code.value_or(0) << " " << r.error->message;
  InferenceXInputs ix;
  const auto agg = inferencex_request_metrics(res.run.records, ix);
  return agg["cache"]["observed_cache_hit_rate"].get<double>();
}

}  // namespace

TEST(Router, SessionStickyRaisesTheObservedPrefixHitOverRoundRobin) {
  std::uint64_t rr_min = 0, sticky_min = 0, cache_min = 0;
  const double rr = replay_hit_rate(route::Policy::round_robin, &rr_min);
  const double sticky = replay_hit_rate(route::Policy::session_sticky, &sticky_min);
  const double cache = replay_hit_rate(route::Policy::cache_aware, &cache_min);
  std::printf("observed prefix-cache hit over 3 simulated engines: round_robin %.3f, session_sticky %.3f, cache_aware %.3f\n",
              rr, sticky, cache);
  EXPECT_GT(sticky, rr + 0.15);
  EXPECT_GT(cache, rr + 0.15);
  EXPECT_GT(sticky_min, 0u);  // every engine got sessions
  EXPECT_GT(rr_min, 0u);
}

TEST(Router, StreamsThroughAndPinsDataParallelRanks) {
  std::vector<std::string> ranks;
  std::mutex mu;
  testserver::ScriptedServer backend([&](const testserver::ReceivedRequest& r) {
    if (r.target != "/health") {
      std::lock_guard lk(mu);
      ranks.push_back(r.header("x-data-parallel-rank"));
    }
    testserver::ScriptedResponse res;
    res.headers = {{"Content-Type", "text/event-stream"}};
    res.steps = {{0ms, "data: {\"a\":1}\n\n"}, {50ms, "data: [DONE]\n\n"}};
    return res;
  });
  backend.start();
  auto o = router_opts({backend.url()}, route::Policy::session_sticky);
  o.dp_size = 4;
  route::RouterServer router(o);
  router.start();
  for (int i = 0; i < 12; ++i) {
    const auto r = call(router.port(), "/v1/chat/completions", chat(1, true), {{"X-SMG-Routing-Key", "tree-" + std::to_string(i % 3)}});
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "data: {\"a\":1}\n\ndata: [DONE]\n\n");
  }
  router.stop();
  backend.stop();
  // Each tree's 4 requests carry one rank; three trees, bounded load: at least two ranks used.
  ASSERT_EQ(ranks.size(), 12u);
  std::set<std::string> used(ranks.begin(), ranks.end());
  for (int i = 0; i < 12; ++i) EXPECT_EQ(ranks[i], ranks[i % 3]) << i;
  EXPECT_GE(used.size(), 2u);
  for (const auto& r : used) EXPECT_TRUE(r == "0" || r == "1" || r == "2" || r == "3") << r;
}

TEST(Router, PassesStatusCodesAndErrorBodiesThrough) {
  testserver::ScriptedServer backend([](const testserver::ReceivedRequest&) {
    testserver::ScriptedResponse res;
    res.status = 429;
    res.reason = "Too Many Requests";
    res.framing = testserver::ScriptedResponse::Framing::content_length;
    res.steps = {{0ms, R"({"error":"slow down"})"}};
    return res;
  });
  backend.start();
  route::RouterServer router(router_opts({backend.url()}, route::Policy::round_robin));
  router.start();
  const auto r = call(router.port(), "/v1/completions", R"({"prompt":"x"})");
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.body, R"({"error":"slow down"})");
  router.stop();
  backend.stop();
}

TEST(Router, RequestOnAStalePooledBackendSocketIsResentOnANewConnection) {
  // A backend like llama.cpp's server: it announces keep-alive, but when the
  // next request arrives on the same connection it closes it unanswered.
  std::mutex mu;
  std::map<std::uint64_t, int> served;
  testserver::ScriptedServer backend([&](const testserver::ReceivedRequest& req) {
    testserver::ScriptedResponse res;
    std::lock_guard lk(mu);
    if (served[req.connection_id]++ > 0) {
      res.framing = testserver::ScriptedResponse::Framing::raw;
      res.close_after = true;
      return res;
    }
    res.framing = testserver::ScriptedResponse::Framing::content_length;
    res.headers = {{"Content-Type", "application/json"}};
    res.steps = {{0ms, R"({"choices":[{"text":"ok"}]})"}};
    return res;
  });
  backend.start();
  route::RouterServer router(router_opts({backend.url()}, route::Policy::round_robin));
  router.start();
  for (int i = 0; i < 5; ++i) {
    const auto r = call(router.port(), "/v1/completions", R"({"prompt":"x"})");
    EXPECT_EQ(r.status, 200) << i << ": " << r.body << r.error;
  }
  EXPECT_GE(router.stats().backend_retries, 4u);
  router.stop();
  backend.stop();
}

TEST(Router, BackendKilledMidRunFailsItsStreamClearlyAndIsEjected) {
  auto a = test_support::start_sim_backend(1), b = test_support::start_sim_backend(1);
  auto o = router_opts({a->url(), b->url()}, route::Policy::round_robin);
  route::RouterServer router(o);
  router.start();
  // Round robin from target 0: the first stream goes to a, the second to b.
  auto to_a = std::async(std::launch::async, [&] { return call(router.port(), "/v1/chat/completions", chat(300, true)); });
  std::this_thread::sleep_for(100ms);
  auto to_b = std::async(std::launch::async, [&] { return call(router.port(), "/v1/chat/completions", chat(3000, true)); });
  std::this_thread::sleep_for(400ms);
  const auto killed_at = std::chrono::steady_clock::now();
  b.reset();  // the engine, its sockets and its port are gone
  const auto rb = to_b.get();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_LT(waited, 2.0) << "the broken stream must end promptly";
  EXPECT_EQ(rb.status, 200);  // it had started streaming
  EXPECT_NE(rb.body.find("event: error"), std::string::npos) << rb.body.substr(rb.body.size() > 300 ? rb.body.size() - 300 : 0);
  EXPECT_NE(rb.body.find("failed mid-stream"), std::string::npos);
  const auto ra = to_a.get();
  EXPECT_EQ(ra.status, 200);
  EXPECT_NE(ra.body.find("[DONE]"), std::string::npos);
  // Every later request succeeds on the survivor (connect failures retry elsewhere).
  for (int i = 0; i < 6; ++i) EXPECT_EQ(call(router.port(), "/v1/chat/completions", chat(2, false)).status, 200) << i;
  std::this_thread::sleep_for(400ms);
  const auto s = router.stats();
  EXPECT_TRUE(s.backends[0].healthy);
  EXPECT_FALSE(s.backends[1].healthy);
  EXPECT_EQ(s.backends[1].ejections, 1u);
  EXPECT_GE(s.backends[1].errors, 1u);
  EXPECT_NE(router.metrics_text().find("agentperf_router_backend_healthy{backend=\"" + s.backends[1].url + "\"} 0"),
            std::string::npos);
  router.stop();
}

TEST(Router, UnreachableBackendGives502ThenNoHealthy503) {
  std::uint16_t dead_port;
  {
    asio::io_context io;
    tcp::acceptor acc(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    dead_port = acc.local_endpoint().port();
  }  // closed: nothing listens there now
  auto o = router_opts({"http://127.0.0.1:" + std::to_string(dead_port)}, route::Policy::least_outstanding);
  o.eject_after = 3;
  route::RouterServer router(o);
  router.start();
  const auto first = call(router.port(), "/v1/completions", R"({"prompt":"x"})");
  EXPECT_EQ(first.status, 502);
  EXPECT_NE(first.body.find(std::to_string(dead_port)), std::string::npos) << first.body;
  EXPECT_NE(first.body.find("connect"), std::string::npos) << first.body;
  std::this_thread::sleep_for(600ms);  // probes eject it
  const auto later = call(router.port(), "/v1/completions", R"({"prompt":"x"})");
  EXPECT_EQ(later.status, 503);
  EXPECT_NE(later.body.find("no healthy backend"), std::string::npos);
  EXPECT_EQ(call(router.port(), "/health", "").status, 503);
  router.stop();
}

TEST(Router, MalformedRequestsAndOverload) {
  testserver::ScriptedServer backend([](const testserver::ReceivedRequest&) {
    testserver::ScriptedResponse res;
    res.headers = {{"Content-Type", "text/event-stream"}};
    res.steps = {{0ms, "data: {}\n\n"}, {1500ms, "data: [DONE]\n\n"}};
    return res;
  });
  backend.start();
  auto o = router_opts({backend.url()}, route::Policy::cache_aware);
  o.policy_opts.max_outstanding = 1;
  route::RouterServer router(o);
  router.start();
  // Not HTTP at all.
  const auto garbage = test_support::raw_exchange(router.port(), "GARBAGE GARBAGE\r\n\r\n");
  EXPECT_EQ(garbage.received.rfind("HTTP/1.1 400", 0), 0u) << garbage.received;
  EXPECT_NE(garbage.received.find("\"type\":\"BadRequest\""), std::string::npos) << garbage.received;
  // A body the cache-aware policy cannot read.
  const auto bad = call(router.port(), "/v1/chat/completions", "{not json");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("not a JSON object"), std::string::npos);
  // One request in flight fills the only target: the next gets 503 + Retry-After.
  auto slow = std::async(std::launch::async, [&] { return call(router.port(), "/v1/chat/completions", chat(1, true)); });
  std::this_thread::sleep_for(300ms);
  const auto over = call(router.port(), "/v1/chat/completions", chat(1, true));
  EXPECT_EQ(over.status, 503);
  EXPECT_EQ(over.retry_after, "1");
  EXPECT_EQ(slow.get().status, 200);
  const auto s = router.stats();
  EXPECT_EQ(s.rejected, 1u);
  EXPECT_EQ(s.bad_requests, 2u);
  router.stop();
  backend.stop();
}

// A backend given twice or one whose host does not resolve is an error at
// start; idle client connections are closed after --idle-timeout; ejections
// are logged.
TEST(Router, BadBackendsFailAtStartIdleClientsCloseEjectionsAreLogged) {
  const auto twice = router_opts({"http://127.0.0.1:9", "http://127.0.0.1:9/"}, route::Policy::round_robin);
  EXPECT_THROW(route::RouterServer{twice}, UserError);
  try {
    route::RouterServer r(router_opts({"http://no-such-host.invalid:8000"}, route::Policy::round_robin));
    ADD_FAILURE() << "an unresolvable backend was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot resolve host 'no-such-host.invalid'"), std::string::npos) << e.what();
  }
  testserver::ScriptedServer backend([](const testserver::ReceivedRequest&) {
    testserver::ScriptedResponse r;
    r.framing = testserver::ScriptedResponse::Framing::content_length;
    r.steps.push_back({0ns, "{}"});
    return r;
  });
  backend.start();
  auto o = router_opts({backend.url()}, route::Policy::round_robin);
  o.client_idle_timeout = 300ms;
  route::RouterServer router(o);
  router.start();
  const auto t0 = std::chrono::steady_clock::now();
  const auto got = test_support::raw_exchange(router.port(), "GET /health HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(got.received.rfind("HTTP/1.1 ", 0), 0u) << got.received;
  EXPECT_TRUE(got.closed_by_server);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms);
  router.stop();
  backend.stop();

  // A dead backend is ejected after two failed probes, and the router says so.
  asio::io_context io;
  tcp::acceptor probe(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const auto dead_port = probe.local_endpoint().port();
  probe.close();
  auto dead = router_opts({"http://127.0.0.1:" + std::to_string(dead_port)}, route::Policy::round_robin);
  dead.health_interval = 50ms;
  testing::internal::CaptureStderr();
  route::RouterServer r2(dead);
  r2.start();
  for (int i = 0; i < 100 && r2.stats().backends[0].ejections == 0; ++i) std::this_thread::sleep_for(20ms);
  r2.stop();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("backend http://127.0.0.1:" + std::to_string(dead_port) + " ejected after 2 consecutive failure(s)"),
            std::string::npos)
      << err;
}
