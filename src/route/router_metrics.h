// The router's counters and their two renderings: Prometheus text for
// GET /metrics and JSON for GET /router/backends. Kept apart from the
// networking so the output formats can change (and be read) without Asio.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "route/routing_policy.h"

namespace agentperf::route {

struct BackendStats {
  std::string url;
  bool healthy = true;
  int in_flight = 0;
  std::uint64_t requests = 0, errors = 0, ejections = 0, readmissions = 0;
};

struct RouterStats {
  std::vector<BackendStats> backends;
  std::map<std::string, std::uint64_t> decisions;  // reason -> count
  std::uint64_t rejected = 0, bad_requests = 0;
  std::uint64_t backend_retries = 0;  // requests re-sent after a pooled backend socket turned out closed
  double route_seconds_sum = 0;  // request read -> request written to the backend
  std::uint64_t routed = 0;
};

// Prometheus text format 0.0.4 (agentperf_router_* metrics).
std::string router_metrics_text(const RouterStats& s, Policy policy);
// The /router/backends document.
std::string router_backends_json(const RouterStats& s, Policy policy, int dp_size);

}  // namespace agentperf::route
