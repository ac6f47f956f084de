#include "cli/route_command.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "cli/cli_numbers.h"
#include "load/profile_config.h"
#include "route/router_server.h"

namespace agentperf::cli {

struct RouteCommand {
  CLI::App* cmd = nullptr;
  route::RouterOptions opts;
  std::string policy = "session_sticky";
  std::vector<std::string> key_headers;
  int health_interval_ms = 5000, connect_timeout_ms = 5000;
  double backend_idle_timeout_s = 1800;
};

namespace {
std::atomic<bool> g_stop_routing{false};
extern "C" void on_route_signal(int) { g_stop_routing = true; }
}  // namespace

std::shared_ptr<RouteCommand> add_route_command(CLI::App& app) {
  auto rc = std::make_shared<RouteCommand>();
  auto& o = rc->opts;
  auto& p = o.policy_opts;
  rc->cmd = app.add_subcommand("route", "Session-sticky, cache-aware HTTP router in front of data-parallel engine replicas");
  auto* c = rc->cmd;
  c->add_option("-b,--backend", o.backends, "Backend base URL (repeat, or comma-separate): http://host:port")
      ->required()->delimiter(',');
  c->add_option("--policy", rc->policy,
                "round_robin, least_outstanding, session_sticky, cache_aware or consistent_hash (the key alone picks "
                "the backend, as SGLang Model Gateway's consistent_hashing)")
      ->check(CLI::IsMember({"round_robin", "least_outstanding", "session_sticky", "cache_aware", "consistent_hash"}))
      ->capture_default_str();
  c->add_option("--host", o.host, "Address to listen on")->capture_default_str();
  c->add_option("--port", o.port, "Port to listen on (0 = ephemeral, printed at start)")
      ->transform(int_in(0, 65535))->capture_default_str();
  c->add_option("--threads", o.threads, "Event-loop threads")->transform(int_in(1, 64))->capture_default_str();
  c->add_option("--dp-size", o.dp_size,
                "Data-parallel ranks per backend: each rank is a routing target, pinned with X-Data-Parallel-Rank")
      ->transform(int_in(1, 64))->capture_default_str();
  c->add_option("--max-outstanding-per-target", p.max_outstanding,
                "Requests in flight per target (backend or DP rank) before it counts as full; all full -> 503 (0 = no cap)")
      ->transform(int_in(0, 1000000))->capture_default_str();
  c->add_option("--routing-key-headers", rc->key_headers,
                "Headers whose first non-empty value is the session key, in order (default x-smg-routing-key, "
                "x-session-id, x-correlation-id)")->delimiter(',');
  auto* g = "Session sticky";
  c->add_option("--bounded-load-epsilon", p.bounded_load_epsilon,
                "New keys go to a target only while its load < ceil((1+eps) x (total+1) / healthy)")
      ->check(real_in(0, 10))->group(g)->capture_default_str();
  c->add_option("--session-ttl", p.session_ttl_s, "Forget a routing key idle this many seconds")
      ->check(positive_seconds_up_to(limits::max_seconds))->group(g)->capture_default_str();
  g = "Cache aware (SGLang Model Gateway defaults)";
  c->add_option("--cache-threshold", p.cache_threshold, "Route to the best prefix match if it covers more than this share")
      ->check(real_in(0, 1))->group(g)->capture_default_str();
  c->add_option("--balance-abs-threshold", p.balance_abs_threshold, "Imbalanced when max - min load exceeds this ...")
      ->transform(int_in(0, 1000000))->group(g)->capture_default_str();
  c->add_option("--balance-rel-threshold", p.balance_rel_threshold, "... and max load exceeds this times min load")
      ->check(real_in(0, 1000000, true))->group(g)->capture_default_str();
  c->add_option("--prefix-block-bytes", p.block_bytes, "Prompt text per prefix block")
      ->transform(int_in(8, 65536))->group(g)->capture_default_str();
  c->add_option("--max-prefix-blocks", p.max_blocks_per_target, "Prefix blocks remembered per target (LRU)")
      ->transform(int_in(1, 1000000000))->group(g)->capture_default_str();
  g = "Health";
  c->add_option("--health-interval-ms", rc->health_interval_ms, "GET /health on every backend this often")
      ->transform(int_in(10, 3600000))->group(g)->capture_default_str();
  c->add_option("--eject-after", o.eject_after, "Consecutive failures (probes or requests) that eject a backend")
      ->transform(int_in(1, 1000))->group(g)->capture_default_str();
  c->add_option("--readmit-after", o.readmit_after, "Consecutive passing probes that re-admit it")
      ->transform(int_in(1, 1000))->group(g)->capture_default_str();
  c->add_option("--connect-timeout-ms", rc->connect_timeout_ms, "Backend connect timeout")
      ->transform(int_in(1, 600000))->group(g)->capture_default_str();
  c->add_option_function<double>(
       "--idle-timeout",
       [&o](double s) { o.client_idle_timeout = std::chrono::milliseconds(static_cast<long long>(s * 1000)); },
       "Close client keep-alive connections idle this many seconds (nginx's default: 75)")
      ->default_str("75")->check(seconds_in(0.001, 86400))->group(g);
  c->add_option("--backend-idle-timeout", rc->backend_idle_timeout_s,
                "Seconds a backend may stay silent (before its first byte or mid-stream) before the request fails")
      ->check(positive_seconds_up_to(limits::max_seconds))->group(g)->capture_default_str();
  return rc;
}

int execute_route_command(RouteCommand& rc) {
  if (!rc.cmd->parsed()) return -1;
  auto& o = rc.opts;
  o.policy = route::parse_policy(rc.policy);
  if (!rc.key_headers.empty()) {
    o.key_headers.clear();
    for (auto h : rc.key_headers) {
      std::transform(h.begin(), h.end(), h.begin(), [](unsigned char ch) { return std::tolower(ch); });
      o.key_headers.push_back(h);
    }
  }
  o.health_interval = std::chrono::milliseconds(rc.health_interval_ms);
  o.connect_timeout = std::chrono::milliseconds(rc.connect_timeout_ms);
  o.backend_idle_timeout = std::chrono::milliseconds(static_cast<long long>(rc.backend_idle_timeout_s * 1000));
  route::RouterServer server(o);
  server.start();
  std::fprintf(stderr, "agentperf route: %s on %s -> %zu backend(s) x %d rank(s); Ctrl-C stops\n",
               route::policy_name(o.policy), server.url().c_str(), o.backends.size(), o.dp_size);
  std::signal(SIGINT, on_route_signal);
  std::signal(SIGTERM, on_route_signal);
  while (!g_stop_routing) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.stop();
  const auto s = server.stats();
  for (const auto& b : s.backends)
    std::fprintf(stderr, "agentperf route: %s: %llu requests, %llu errors, %llu ejections\n", b.url.c_str(),
                 static_cast<unsigned long long>(b.requests), static_cast<unsigned long long>(b.errors),
                 static_cast<unsigned long long>(b.ejections));
  return 0;
}

}  // namespace agentperf::cli
