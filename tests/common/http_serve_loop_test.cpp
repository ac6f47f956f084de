// The one serve loop (common/http_serve_loop.h), driven through the scripted
// test server with hand-written bytes: what a malformed, oversized, idle or
// HTTP/1.0 peer gets back. The router and the simulator share the loop; their
// own tests check their error bodies.
#include "common/http_serve_loop.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "common/clock.h"
#include "route/router_server.h"
#include "sim/sim_server.h"
#include "support/raw_http.h"
#include "support/sim_backend.h"
#include "testserver/scripted_server.h"

using namespace agentperf;
using namespace std::chrono_literals;
using test_support::raw_exchange;
using testserver::ScriptedResponse;
using testserver::ScriptedServer;

namespace {

ScriptedServer make_server(std::chrono::milliseconds idle = 5000ms) {
  testserver::ServerOptions o;
  o.idle_timeout = idle;
  return ScriptedServer(
      [](const testserver::ReceivedRequest& req) {
        ScriptedResponse r;
        r.framing = ScriptedResponse::Framing::content_length;
        r.steps.push_back({0ns, "hello " + req.target});
        return r;
      },
      o);
}

// The server counts an idle close as its coroutine ends, which may be just
// after the client has seen the socket close.
std::uint64_t idle_closes_after_close(const ScriptedServer& server) {
  for (int i = 0; i < 200 && server.stats().idle_closes == 0; ++i) std::this_thread::sleep_for(5ms);
  return server.stats().idle_closes;
}

std::size_t count_of(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(HttpServeLoop, GarbageGets400AndClose) {
  auto server = make_server();
  server.start();
  const auto got = raw_exchange(server.port(), "GARBAGE GARBAGE\r\n\r\n");
  EXPECT_EQ(got.received.rfind("HTTP/1.1 400", 0), 0u) << got.received;
  EXPECT_NE(got.received.find("Connection: close"), std::string::npos) << got.received;
  EXPECT_TRUE(got.closed_by_server);
  EXPECT_EQ(server.stats().requests, 0u);
}

TEST(HttpServeLoop, HeaderBlockOverTheCapGets431) {
  auto server = make_server();
  server.start();
  const std::string big(70 * 1024, 'a');  // the cap is 64 KiB
  const auto got = raw_exchange(server.port(), "GET /x HTTP/1.1\r\nHost: h\r\nX-Big: " + big + "\r\n\r\n");
  EXPECT_EQ(got.received.rfind("HTTP/1.1 431", 0), 0u) << got.received.substr(0, 200);
  EXPECT_NE(got.received.find("65536 bytes"), std::string::npos);
  EXPECT_TRUE(got.closed_by_server);
  EXPECT_EQ(server.stats().requests, 0u);
}

TEST(HttpServeLoop, DeclaredBodyOverTheCapGets413BeforeTheBodyIsSent) {
  auto server = make_server();
  server.start();
  // 600 MiB declared against the scripted server's 512 MiB cap; no body follows.
  const auto got = raw_exchange(server.port(), "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 629145600\r\n\r\n");
  EXPECT_EQ(got.received.rfind("HTTP/1.1 413", 0), 0u) << got.received;
  EXPECT_TRUE(got.closed_by_server);
}

TEST(HttpServeLoop, KeepAliveCarriesPipelinedRequestsThenIdleCloses) {
  auto server = make_server(300ms);
  server.start();
  const auto t0 = std::chrono::steady_clock::now();
  const auto got = raw_exchange(server.port(), "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n");
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(count_of(got.received, "HTTP/1.1 200"), 2u) << got.received;
  EXPECT_NE(got.received.find("hello /a"), std::string::npos);
  EXPECT_NE(got.received.find("hello /b"), std::string::npos);
  EXPECT_TRUE(got.closed_by_server);
  EXPECT_GE(waited, 250ms);  // held open until the idle limit, not closed after the responses
  EXPECT_EQ(server.stats().requests, 2u);
  EXPECT_EQ(idle_closes_after_close(server), 1u);
}

TEST(HttpServeLoop, Http10WithoutKeepAliveIsClosedAfterOneResponse) {
  auto server = make_server(5000ms);
  server.start();
  const auto t0 = std::chrono::steady_clock::now();
  const auto got = raw_exchange(server.port(), "GET /a HTTP/1.0\r\n\r\n");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);  // not held until the idle limit
  EXPECT_EQ(got.received.rfind("HTTP/1.1 200", 0), 0u) << got.received;  // the script writes 1.1 framing
  EXPECT_TRUE(got.closed_by_server);
}

TEST(HttpServeLoop, HalfARequestThenSilenceIsAnIdleCloseNotA400) {
  auto server = make_server(300ms);
  server.start();
  const auto got = raw_exchange(server.port(), "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nabc");
  EXPECT_TRUE(got.closed_by_server);
  EXPECT_EQ(got.received, "");
  EXPECT_EQ(idle_closes_after_close(server), 1u);
}

namespace {
long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

// How many of these client sockets the server has closed (a read finds
// end of stream or a reset instead of waiting).
int closed_by_server(std::vector<std::unique_ptr<boost::asio::ip::tcp::socket>>& sockets) {
  int closed = 0;
  for (auto& s : sockets) {
    s->non_blocking(true);
    char c;
    boost::system::error_code ec;
    s->read_some(boost::asio::buffer(&c, 1), ec);
    if (ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset) ++closed;
  }
  return closed;
}

// Hostile clients against one server: 150 sockets that send half a request
// and stall (slowloris), 5 oversized header blocks, 3 bodies declared far
// over the cap. A health probe on a fresh connection must still answer
// within a bound, the hostile sockets must be closed by the idle limit, and
// memory must stay bounded.
void stress(std::uint16_t port, const std::string& who) {
  namespace asio = boost::asio;
  asio::io_context io;
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> slow;
  const long rss0 = rss_kib();
  for (int i = 0; i < 150; ++i) {
    auto s = std::make_unique<asio::ip::tcp::socket>(io);
    s->connect({asio::ip::make_address("127.0.0.1"), port});
    asio::write(*s, asio::buffer(std::string("POST /v1/completions HTTP/1.1\r\nHost: h\r\nX-Slow: ")));
    slow.push_back(std::move(s));
  }
  for (int i = 0; i < 5; ++i) {
    const auto got = test_support::raw_exchange(
        port, "GET /health HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(100 * 1024, 'x') + "\r\n\r\n");
    EXPECT_EQ(got.received.rfind("HTTP/1.1 431", 0), 0u) << who;
  }
  for (int i = 0; i < 3; ++i) {
    const auto got = test_support::raw_exchange(
        port, "POST /v1/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 107374182400\r\n\r\n");
    EXPECT_EQ(got.received.rfind("HTTP/1.1 413", 0), 0u) << who;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto health = test_support::raw_exchange(port, "GET /health HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << who;
  EXPECT_EQ(health.received.rfind("HTTP/1.1 200", 0), 0u) << who << ": " << health.received;
  // The idle limit (300 ms here) closes every stalled socket.
  std::this_thread::sleep_for(800ms);
  EXPECT_EQ(closed_by_server(slow), 150) << who;
  EXPECT_LT(rss_kib() - rss0, 64 * 1024) << who << ": resident memory grew by more than 64 MiB";
}
}  // namespace

TEST(HttpServeLoop, SimServerAndRouterStayResponsiveUnderHostileClients) {
  sim::SimServerOptions so;
  so.idle_timeout = 300ms;
  auto server_ptr = test_support::start_sim_backend(so);
  auto& server = *server_ptr;
  stress(server.port(), "sim serve");
  route::RouterOptions ro;
  ro.backends = {server.url()};
  ro.client_idle_timeout = 300ms;
  ro.log_health_changes = false;
  route::RouterServer router(ro);
  router.start();
  stress(router.port(), "route");
  router.stop();
  server.stop();
}

// Out of file descriptors, a pending connection makes accept fail at once,
// again and again: the accept loop waits 100 ms between tries instead of
// spinning a core. The server runs in a child process whose descriptors are
// used up; the parent connects, and the child measures its own CPU time.
TEST(HttpServeLoop, OutOfDescriptorsTheAcceptLoopWaitsInsteadOfSpinning) {
  int port_pipe[2];
  ASSERT_EQ(::pipe(port_pipe), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(port_pipe[0]);
    int status = 2;
    {
      ScriptedServer server([](const testserver::ReceivedRequest&) { return ScriptedResponse{}; });
      server.start();
      const std::uint16_t port = server.port();
      std::vector<int> held;  // every free descriptor taken, then the port told
      for (int fd; (fd = ::dup(0)) >= 0;) held.push_back(fd);
      if (::write(port_pipe[1], &port, sizeof port) != sizeof port) ::_exit(3);
      std::this_thread::sleep_for(300ms);  // the parent's connections arrive
      const double cpu0 = process_cpu_seconds();
      std::this_thread::sleep_for(1s);
      const double cpu = process_cpu_seconds() - cpu0;
      status = cpu < 0.3 ? 0 : 1;  // spinning burns a whole core: ~1 s
      for (int fd : held) ::close(fd);
    }
    ::_exit(status);
  }
  ::close(port_pipe[1]);
  std::uint16_t port = 0;
  ASSERT_EQ(::read(port_pipe[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
  ::close(port_pipe[0]);
  boost::asio::io_context io;
  std::vector<boost::asio::ip::tcp::socket> pending;
  for (int i = 0; i < 4; ++i) {
    pending.emplace_back(io);
    pending.back().connect({boost::asio::ip::make_address("127.0.0.1"), port});  // completes in the backlog
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the accept loop used 0.3 s or more of CPU in 1 s while out of descriptors";
}

// Large bodies are bounded and not kept: a 300 MB body is refused (413)
// before it is read, and after three 50 MB bodies at once (answered 400)
// and the end of their connections, resident memory is back near where it
// was (three 300 MB bodies once pushed it to 1.5 GB and left 400 MB held).
TEST(HttpServeLoop, SimServerGivesLargeBodiesBack) {
  sim::SimServerOptions so;
  // The requests ask for Connection: close, so each connection ends with
  // its 400 and nothing waits for the idle limit. The limit covers reading
  // a whole request, body included: it stays long, so an upload descheduled
  // on a loaded CI machine is not cut off before its 400 (1 s, once the
  // limit that closed these connections, was overrun by three 50 MB
  // uploads in a fresh ctest run; 200 ms before that).
  so.idle_timeout = 30s;
  auto server_ptr = test_support::start_sim_backend(so);
  auto& server = *server_ptr;
  const long rss0 = rss_kib();
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i)
    clients.emplace_back([&] {
      // The request is built and dropped here: only the server's memory is
      // left to measure afterwards.
      std::string request =
          "POST /v1/completions HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 52428800\r\n\r\n";
      request.append(50u << 20, 'x');
      const auto got = test_support::raw_exchange(server.port(), request);
      EXPECT_EQ(got.received.rfind("HTTP/1.1 400", 0), 0u) << got.received.substr(0, 200);
    });
  for (auto& c : clients) c.join();
  std::this_thread::sleep_for(300ms);  // the server frees and trims right after its close, which the clients saw
  EXPECT_LT(rss_kib() - rss0, 48 * 1024) << "resident memory still 48 MiB or more above its start";
  // Over the 64 MiB default cap: 413 before the body is read.
  const auto big = test_support::raw_exchange(
      server.port(), "POST /v1/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 314572800\r\n\r\n");
  EXPECT_EQ(big.received.rfind("HTTP/1.1 413", 0), 0u) << big.received;
  server.stop();
}

// The router runs its io_context on several threads. Stalled clients that
// reach the idle limit together once crashed it in the epoll reactor: a
// connection's deadline timer and its read completion ran on two threads at
// once and both closed the socket (8 of 8 runs of this test crashed before
// each connection got a strand of its own; see accept_each). Four rounds of
// 400 stalled sockets against a router on 8 threads; every socket must be
// closed by the router's idle limit, and the process must live.
TEST(HttpServeLoop, RouterOnManyThreadsClosesManyStalledClientsAtOnce) {
  namespace asio = boost::asio;
  sim::SimServerOptions so;
  auto server_ptr = test_support::start_sim_backend(so);
  for (int round = 0; round < 4; ++round) {
    route::RouterOptions ro;
    ro.backends = {server_ptr->url()};
    ro.client_idle_timeout = 200ms;
    ro.log_health_changes = false;
    ro.threads = 8;
    route::RouterServer router(ro);
    router.start();
    asio::io_context io;
    std::vector<std::unique_ptr<asio::ip::tcp::socket>> slow;
    for (int i = 0; i < 400; ++i) {
      auto s = std::make_unique<asio::ip::tcp::socket>(io);
      s->connect({asio::ip::make_address("127.0.0.1"), router.port()});
      asio::write(*s, asio::buffer(std::string("POST /v1/completions HTTP/1.1\r\nHost: h\r\nX-Slow: ")));
      slow.push_back(std::move(s));
    }
    std::this_thread::sleep_for(700ms);
    EXPECT_EQ(closed_by_server(slow), 400) << "round " << round;
    router.stop();
  }
}
