// Routing decisions of `agentperf route`, without any networking: which
// target (a backend, or one DP rank of it) serves a request. The proxy calls
// choose() and then routed() under one lock, with the targets' live state.
//
// Policies (cache_aware and the X-SMG-Routing-Key header follow SGLang Model
// Gateway: github.com/lightseekorg/smg, docs/configuration/routing.md
// @ 6fcadf99f5e1; github.com/sgl-project/sglang,
// docs/advanced_features/sgl_model_gateway.md @ 5a0cb04656da):
// - round_robin: the next healthy target in turn.
// - least_outstanding: fewest requests in flight.
// - session_sticky: a routing key (X-SMG-Routing-Key > X-Session-ID >
//   X-Correlation-ID) stays on the target it was first given while that target
//   is healthy and below its outstanding cap; new keys are placed by
//   consistent hashing with bounded loads (a target takes a new key only
//   while its load is under ceil((1 + epsilon) x (total + 1) / healthy)).
//   Moving a live session would cost its whole prefix, so load only shapes
//   where new sessions go. Clients send the session tree's root as the key so
//   subagents follow their root (agentperf replay --routing-headers does).
// - cache_aware: SGLang Model Gateway's rule over an approximate per-target
//   prefix index: when loads are imbalanced (max - min > balance_abs and
//   max > balance_rel x min) the least-loaded target; else the best prefix
//   match if it covers more than cache_threshold of the prompt; else the
//   target holding the smallest index (spreads new prefixes).
// - consistent_hash: the key alone picks the target, on a ring of
//   virtual_nodes points per target (the first healthy one clockwise of the
//   key's hash), with no load bound: SGLang Model Gateway's
//   `consistent_hashing` (github.com/sgl-project/sglang,
//   sgl-model-gateway/src/policies/consistent_hashing.rs @ 11658624ba63) and
//   vllm-router's `consistent_hash` (github.com/vllm-project/router,
//   src/policies/consistent_hash.rs @ 080589a0b729, 160 virtual nodes a
//   worker), which InferenceX's DP-attention launchers put in front of their
//   DP ranks. Sessions land where their keys hash, so at a few dozen
//   sessions over 8 ranks one rank may hold twice the mean.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "route/prefix_index.h"

namespace agentperf::route {

enum class Policy { round_robin, least_outstanding, session_sticky, cache_aware, consistent_hash };
Policy parse_policy(const std::string& name);  // throws UserError listing the names
const char* policy_name(Policy p);

struct PolicyOptions {
  double bounded_load_epsilon = 0.25;  // session_sticky: capacity factor for new keys
  int virtual_nodes = 160;             // session_sticky, consistent_hash: ring points per target
  double session_ttl_s = 14400;        // session_sticky: forget keys idle this long (SMG manual policy)
  double cache_threshold = 0.3;        // cache_aware (SMG defaults)
  int balance_abs_threshold = 64;
  double balance_rel_threshold = 1.5;
  std::size_t block_bytes = 64;         // cache_aware: prefix block size in bytes of prompt text
  std::size_t max_blocks_per_target = 1u << 21;  // cache_aware: index capacity (about 128 MiB of prompt text)
  int max_outstanding = 0;             // per target; 0 = unlimited
};

struct TargetState {
  bool healthy = true;
  int outstanding = 0;
};

struct RouteRequest {
  std::string key;                       // routing key; empty if the client sent none
  std::vector<std::uint64_t> prefix;     // prompt block hashes (cache_aware)
  double now_s = 0;                      // monotonic seconds
};

struct RouteDecision {
  int target = -1;      // -1: none available (see reason)
  std::string reason;   // e.g. sticky, ring, ring_overflow, prefix_hit, new_prefix, load_balance, no_key, no_healthy, overloaded
  double prefix_match = 0;  // matched share of the prompt's blocks (cache_aware)
};

class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  virtual RouteDecision choose(const RouteRequest& req, const std::vector<TargetState>& targets) = 0;
  // The request was sent to `target` (cache_aware records its prefix).
  virtual void routed(int target, const RouteRequest& req) {}
  // A target left service: forget what it held.
  virtual void target_lost(int target) {}
};

std::unique_ptr<RoutingPolicy> make_policy(Policy p, int targets, const PolicyOptions& opts);

// Helpers shared by the policies (exposed for tests).
bool has_room(const TargetState& t, const PolicyOptions& o);
int least_outstanding(const std::vector<TargetState>& targets, const PolicyOptions& o);  // -1 if none

}  // namespace agentperf::route
