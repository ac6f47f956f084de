// Prometheus text exposition of the engine's state, with SGLang's metric
// names (github.com/sgl-project/sglang,
// python/sglang/srt/observability/metrics_collector.py @ 44cedc2b9c7d): both
// the v0.5 gauge names (num_running_reqs, num_queue_reqs) and the old
// num_requests_running/waiting aliases (very old SGLang, vLLM-style scrapers),
// so scrapers of either find them.
#pragma once
#include <string>

#include "sim/engine.h"

namespace agentperf::sim {

// With the vLLM scheduler the names are vLLM's instead (prometheus.cpp says
// which), so scrapers and plot scripts written for vLLM find them.
std::string prometheus_text(const EngineStats& s, const std::string& model_name, bool hicache,
                            SchedulerKind scheduler = SchedulerKind::sglang);

}  // namespace agentperf::sim
