#include "route/router_metrics.h"

#include <nlohmann/json.hpp>

#include "common/prometheus_writer.h"

namespace agentperf::route {

std::string router_metrics_text(const RouterStats& s, Policy policy) {
  PrometheusWriter w;
  auto per_backend = [&](const char* name, const char* type, const char* help, auto value) {
    w.family(name, type, help);
    for (const auto& b : s.backends) w.sample(name, {{"backend", b.url}}, double(value(b)));
  };
  per_backend("agentperf_router_backend_healthy", "gauge", "1 while the backend is in rotation",
              [](const BackendStats& b) { return b.healthy; });
  per_backend("agentperf_router_backend_in_flight", "gauge", "", [](const BackendStats& b) { return b.in_flight; });
  per_backend("agentperf_router_backend_requests_total", "counter", "",
              [](const BackendStats& b) { return b.requests; });
  per_backend("agentperf_router_backend_errors_total", "counter", "", [](const BackendStats& b) { return b.errors; });
  per_backend("agentperf_router_backend_ejections_total", "counter", "",
              [](const BackendStats& b) { return b.ejections; });
  w.family("agentperf_router_decisions_total", "counter");
  for (const auto& [reason, n] : s.decisions)
    w.sample("agentperf_router_decisions_total", {{"policy", policy_name(policy)}, {"reason", reason}}, double(n));
  w.counter("agentperf_router_rejected_total", "", {}, double(s.rejected));
  w.counter("agentperf_router_bad_requests_total", "", {}, double(s.bad_requests));
  w.counter("agentperf_router_backend_retries_total",
            "requests re-sent on a new connection after a pooled backend socket was found closed", {},
            double(s.backend_retries));
  w.summary("agentperf_router_route_seconds", "time from a request read to it written to a backend", {},
            s.route_seconds_sum, double(s.routed));
  return w.take();
}

std::string router_backends_json(const RouterStats& s, Policy policy, int dp_size) {
  nlohmann::json j = {{"policy", policy_name(policy)}, {"dp_size", dp_size}, {"backends", nlohmann::json::array()}};
  for (const auto& b : s.backends)
    j["backends"].push_back({{"url", b.url}, {"healthy", b.healthy}, {"in_flight", b.in_flight}, {"requests", b.requests},
                             {"errors", b.errors}, {"ejections", b.ejections}, {"readmissions", b.readmissions}});
  j["decisions"] = s.decisions;
  return j.dump(2);
}

}  // namespace agentperf::route
