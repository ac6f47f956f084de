// Prometheus text exposition of the engine's state, with SGLang's metric
// names (serving-side.md §5.2-5.3): both the v0.5 gauge names and the old
// num_requests_running/waiting aliases, so scrapers of either find them.
#pragma once
#include <string>

#include "sim/engine.h"

namespace agentperf::sim {

std::string prometheus_text(const EngineStats& s, const std::string& model_name, bool hicache);

}  // namespace agentperf::sim
