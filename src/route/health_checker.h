// Backend health for the router: the eject/readmit state machine (fed by
// probes and by request outcomes) and the GET /health probe loop. Split out
// of the router so the health rules read on their own; only the probing
// half needs Asio/Beast.
#pragma once
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>

#include "net/url.h"

namespace agentperf::route {

struct HealthState {
  bool healthy = true;
  int failures = 0, passes = 0;  // consecutive, while healthy / while ejected
};

enum class HealthChange { none, ejected, readmitted };

// One result (a probe, or a request's outcome): eject_after consecutive
// failures eject a healthy backend, readmit_after passes re-admit an ejected one.
HealthChange record_health(HealthState& h, bool ok, int eject_after, int readmit_after);

// GET /health on the backend once: true for a 200 within timeout.
boost::asio::awaitable<bool> probe_health(net::Url url, std::chrono::milliseconds timeout);

// Probes every interval until `stopping`; each result goes to on_result.
boost::asio::awaitable<void> health_loop(net::Url url, std::chrono::milliseconds interval,
                                         std::chrono::milliseconds timeout, const std::atomic<bool>& stopping,
                                         std::function<void(bool)> on_result);

}  // namespace agentperf::route
