// The virtual-time driver of the replay schedule: the same ReplayScheduler
// that `agentperf replay` drives over HTTP, driven here over the simulated
// engine (sim::VirtualClient), so `sim predict --traces` and a sweep's dry
// run play the recipe's traces exactly as a measured run would: the same
// plays, turns, t* cuts, primers, pressure requests, idle caps, deadlines
// and gates, and the same prompts (the token ids a completions request would
// carry, cache-bust marker included). Records, exports and the InferenceX
// aggregate then come out of the same code as a measured replay's.
//
// What the virtual client adds is only what a real client adds: a one-way
// network delay on every request and every chunk, and sends that fall due
// at one instant go out one after another (burst spacing).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "metrics/progress.h"
#include "replay/replay_runner.h"
#include "route/routing_policy.h"
#include "sim/engine.h"
#include "sim/virtual_client.h"
#include "trace/weka_trace.h"

namespace agentperf::replay {

struct VirtualReplayOptions {
  double network_delay_s = 50e-6;
  double burst_spacing_s = 20e-6;
  // Several engines (data parallelism: replicas, each with its own KV pool
  // and radix cache): each request goes where the router's own policy code
  // (route/routing_policy.h) sends it. The routing key is the session
  // tree's root when cfg.routing_headers is set (as `agentperf replay
  // --routing-headers` sends X-SMG-Routing-Key), else the conversation;
  // cache_aware hashes the prompt's token ids.
  route::Policy policy = route::Policy::round_robin;
  route::PolicyOptions policy_opts;
  // DP attention: every `lockstep_ranks` consecutive engines are the DP
  // ranks of one engine and step together, each step as long as the
  // slowest rank's (sim/lockstep_group.h); 1: every engine on its own
  // (replicas). The engine count must be a multiple of it.
  int lockstep_ranks = 1;
  // Disaggregated prefill and decode (SGLang --disaggregation-mode, Dynamo,
  // vLLM's KV connectors): the engines given to predict_replay are the
  // prefill pool, routed by `policy` as above; each request's prompt is
  // prefilled there (with the prefill engine's radix cache), its first
  // token sampled, and its KV sent to a decode engine of this pool, chosen
  // by least outstanding requests, which decodes the rest
  // (sim::SimRequestSpec::kv_transferred). The transfer of a prompt of n
  // tokens takes latency + n x (KV bytes per token per rank + the hybrid
  // state's bytes / n) / bandwidth: every prefill rank sends its own shard
  // over its own link at once, so one rank's bytes over one GPU's link.
  // The record is the request as the client sees it: its start at the
  // prefill send, its first token when the decode engine streams it, and
  // the usage's cached tokens from the prefill engine. Not modelled: link
  // contention between transfers, the prefill engine holding the KV until
  // the transfer ends, and the decode engines' front ends.
  struct DecodePool {
    std::vector<sim::Engine*> engines;
    int lockstep_ranks = 1;
    double transfer_bytes_per_s = 0;
    // A request's fixed cost of its transfer (the transfer engine's setup
    // and completion polling) on top of its bytes. EST: not measured.
    double transfer_latency_s = 1e-3;
  };
  std::optional<DecodePool> decode;
  // Progress (optional, not owned): virtual seconds of the profiling phase
  // played of --duration (0 during the warmup), and a final line with the
  // requests made.
  CountProgress* progress = nullptr;
};

struct VirtualReplayResult {
  ReplayResult replay;     // records in virtual time, as run_replay gives them
  sim::EngineStats engine;  // summed over the engines
  std::vector<sim::EngineStats> per_engine;
  sim::VirtualClient::TtftBreakdown ttft_breakdown;  // profiling requests, over every engine
  // Disaggregated: the profiling requests' time from the prefill engine's
  // first token to the decode engine's (the KV transfer, the wait for room
  // and the decode's first iteration), summed, and the transfers' own part.
  double handoff_s = 0, transfer_s = 0;
  long long handoffs = 0;
  double virtual_seconds = 0;
  double cpu_seconds = 0;
};

VirtualReplayResult predict_replay(sim::Engine& engine, const ReplayConfig& cfg,
                                   const std::vector<trace::WekaTrace>& traces, const VirtualReplayOptions& opts = {});
// Data parallelism: one engine per rank or replica.
VirtualReplayResult predict_replay(const std::vector<sim::Engine*>& engines, const ReplayConfig& cfg,
                                   const std::vector<trace::WekaTrace>& traces, const VirtualReplayOptions& opts = {});

// Engine counters summed over engines (busy time: the busiest engine's).
sim::EngineStats sum_engine_stats(const std::vector<sim::EngineStats>& per_engine);

// A disaggregated prediction's "handoff" for the "sim" section: the
// profiling requests handed over, the mean time from the prefill engine's
// first token to the decode engine's, and the KV transfer's part of it;
// null when nothing was handed over.
nlohmann::ordered_json handoff_json(const VirtualReplayResult& r);

}  // namespace agentperf::replay
