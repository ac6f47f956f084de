// A store row's metrics from a `profile` aggregate (profile_export_aiperf.json),
// for points that are plain profile runs (capacity searches), where sweep
// points take theirs from a replay aggregate's InferenceX headline
// (sweep_runner.cpp): throughput per GPU over the run description's GPUs
// (1 when it names none), the ITL p50 inverted as interactivity, the TTFT
// and request-latency p50, the server's cached share of prompt tokens, and
// the 95 % intervals of throughput and TTFT p50 (metrics/confidence.h).
#pragma once
#include <nlohmann/json.hpp>

#include "sweep/results_store.h"

namespace agentperf::sweep {

void take_profile_metrics(PointRow& row, const nlohmann::json& aggregate);

}  // namespace agentperf::sweep
