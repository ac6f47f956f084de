// agentperf_bench_router: what `agentperf route` adds. A backend streams as
// fast as it can (child process); the router runs in a second child process;
// the client (this process) measures the same workloads straight to the
// backend and through the router:
//   latency   one request at a time, 8-event streams: time to first byte of
//             the response and to stream end, p50/p99; the difference is the
//             proxy's cost per request
//   ceiling   64 in flight, 8-event streams: requests/s through each path
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "bench_support.h"
#include "common/clock.h"
#include "load/load_runner.h"
#include "metrics/stats.h"
#include "route/router_server.h"

using namespace agentperf;

namespace {

struct Measured {
  Summary ack_us, e2e_us;
  double req_per_s = 0;
  long long ok = 0, errors = 0;
};

Measured measure(const std::string& url, int concurrency, double seconds) {
  const ProfileConfig c = bench::closed_loop(url, concurrency, 8, seconds);
  LoadRunner runner(c, "bench");
  const auto t0 = monotonic_ns();
  auto result = runner.run();
  const double wall = static_cast<double>(monotonic_ns() - t0) / 1e9;
  std::vector<double> ack, e2e;
  Measured m;
  for (const auto& r : result.records) {
    if (!r.ok()) {
      ++m.errors;
      continue;
    }
    ++m.ok;
    ack.push_back(static_cast<double>(r.ack_ns - r.start_ns) / 1e3);
    e2e.push_back(static_cast<double>(r.end_ns - r.start_ns) / 1e3);
  }
  m.ack_us = summarize(ack);
  m.e2e_us = summarize(e2e);
  m.req_per_s = static_cast<double>(m.ok) / wall;
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 4;
  std::string policy = "session_sticky";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--policy") && i + 1 < argc) policy = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--seconds S] [--policy NAME]\n", argv[0]);
      return 2;
    }
  }
  bench::Child backend = bench::start_instant_backend();
  const std::string direct = "http://127.0.0.1:" + std::to_string(backend.port);
  bench::Child router;
  router.start([&](auto ready) {
    route::RouterOptions o;
    o.backends = {direct};
    o.threads = 1;
    o.policy = route::parse_policy(policy);
    route::RouterServer server(o);
    server.start();
    ready(server.port());
    server.stop();
  });
  const std::string routed = "http://127.0.0.1:" + std::to_string(router.port);

  const Measured d1 = measure(direct, 1, seconds), r1 = measure(routed, 1, seconds);
  const Measured d64 = measure(direct, 64, seconds), r64 = measure(routed, 64, seconds);
  router.stop();
  backend.stop();

  std::printf("agentperf route overhead (%s; backend, router and client in separate processes; 8-event streams)\n",
              policy.c_str());
  std::printf("  %-26s %12s %12s %12s %12s %10s\n", "", "ack p50 us", "ack p99 us", "e2e p50 us", "e2e p99 us", "req/s");
  auto row = [](const char* name, const Measured& m) {
    std::printf("  %-26s %12.1f %12.1f %12.1f %12.1f %10.0f  (%lld ok, %lld errors)\n", name, m.ack_us.percentile(50),
                m.ack_us.percentile(99), m.e2e_us.percentile(50), m.e2e_us.percentile(99), m.req_per_s, m.ok, m.errors);
  };
  row("direct, 1 in flight", d1);
  row("via router, 1 in flight", r1);
  row("direct, 64 in flight", d64);
  row("via router, 64 in flight", r64);
  std::printf("  added per request (1 in flight): ack p50 %+.1f us, e2e p50 %+.1f us; ceiling via router %.0f req/s (%.0f%% of direct)\n",
              r1.ack_us.percentile(50) - d1.ack_us.percentile(50), r1.e2e_us.percentile(50) - d1.e2e_us.percentile(50),
              r64.req_per_s, 100 * r64.req_per_s / d64.req_per_s);
  return (d1.errors + r1.errors + d64.errors + r64.errors) ? 1 : 0;
}
