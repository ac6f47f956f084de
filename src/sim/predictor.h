// `sim predict` on a synthetic workload: the engine in virtual time, driven
// by the synthetic stream of `profile` (closed or open loop) or by agentic
// lanes. The client side (network delay, chunking, the records) is
// sim::VirtualClient, the one the trace-driven prediction
// (replay/virtual_replay.h) uses, so the same RequestRecords a real
// benchmark would produce come out (TTFT at the first streamed chunk,
// stream_interval chunking, usage with cached tokens), thousands of times
// faster than real time.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "common/run_result.h"
#include "load/profile_config.h"
#include "metrics/progress.h"
#include "common/record.h"
#include "sim/engine.h"
#include "sim/workload.h"

namespace agentperf::sim {

struct PredictConfig {
  ProfileConfig load;     // synthetic stream and stop conditions (concurrency/rate, count, duration, grace, warmup)
  AgenticConfig agentic;  // sessions > 0: agentic lanes instead of the synthetic stream
  // One-way client<->server delay. A request reaches the engine this long
  // after it was sent, so a resend that follows a finish misses the step
  // that starts at once (as on a real server), and each streamed chunk
  // reaches the client this long after its step ends.
  double network_delay_s = 50e-6;
  // A client sends requests that become due at one instant one after
  // another, this far apart (the start burst, and resends after a step
  // that finished several requests). An idle engine starts on the first.
  double burst_spacing_s = 20e-6;
  // Progress of the profiling phase (optional, not owned): virtual seconds
  // of --duration played, or requests sent of --request-count; a final
  // line with the requests made.
  CountProgress* progress = nullptr;
};

struct PredictResult {
  RunResult run;              // records in virtual time, as LoadRunner gives them
  EngineStats engine;
  double virtual_seconds = 0;
  double cpu_seconds = 0;
};

PredictResult predict(Engine& engine, const PredictConfig& cfg);

// The "sim" section a prediction adds to profile_export_aiperf.json
// (`sim predict`, a sweep's dry-run points): virtual and CPU seconds, the
// pools, retractions, the cache hit rate and the busiest engine's busy share.
nlohmann::ordered_json prediction_json(const EngineStats& engine, const MemoryPlan& plan, double virtual_seconds,
                                       double cpu_seconds);

// That section's "per_engine" when several engines (replicas or DP ranks)
// served: each one's requests, cache hit rate, prefill tokens computed and
// busy seconds.
nlohmann::ordered_json per_engine_json(const std::vector<EngineStats>& engines);

}  // namespace agentperf::sim
