// The simulated engines one serving engine of a recipe point runs as in a
// virtual-time replay (replay/virtual_replay.h): its DP-attention ranks
// (recipe::PointEngine::dp, each sized as the memory plan sizes one) times
// its identical workers, each engine's ranks stepping in lockstep
// (sim/lockstep_group.h); a point without DP attention and one worker is
// one engine. One engine's DP ranks sit behind the launchers' consistent
// hashing on each conversation's correlation id (no load bound); several
// workers behind a session-sticky router keyed on the session tree. One
// place for the dry run of a sweep and `sim validate --agentx`, so both run
// a DP-attention deployment the same way.
#pragma once
#include <memory>
#include <vector>

#include "recipe/point_engine_config.h"
#include "replay/virtual_replay.h"
#include "sim/engine.h"

namespace agentperf::sweep {

struct PointRanks {
  std::vector<std::unique_ptr<sim::Engine>> owned;
  std::vector<sim::Engine*> ranks;        // what predict_replay takes
  replay::VirtualReplayOptions options;   // the router's policy and the lockstep groups
  bool routing_headers = false;           // ReplayConfig::routing_headers: route by session tree (else by conversation)
};

// `model`: the point's spec (the rank's own, pe.model, when the plan made
// one); `cfg`: the engine flags every rank runs with (pe.config, or that
// with a caller's overrides).
PointRanks point_ranks(const recipe::PointEngine& pe, const sim::ModelSpec& model, const sim::HardwareSpec& hw,
                       const sim::EngineConfig& cfg);

// A multinode point (recipe::engines_for's prefill and decode pools): an
// aggregated entry (no decode workers) is its prefill pool's workers as
// replicas, each with its DP ranks, behind the session-sticky router; a
// disaggregated one adds the decode pool behind them
// (replay::VirtualReplayOptions::DecodePool), its KV sent over the
// hardware spec's kv_transfer_bandwidth_one_way at its NVLink efficiency.
// Throws UserError when a disaggregated point's hardware spec has no KV
// transfer bandwidth.
PointRanks multinode_ranks(const std::vector<recipe::PointEngine>& pools, const sim::ModelSpec& model,
                           const sim::HardwareSpec& hw);

}  // namespace agentperf::sweep
