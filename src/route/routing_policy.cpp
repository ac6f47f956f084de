#include "route/routing_policy.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/error.h"

namespace agentperf::route {
namespace {

std::uint64_t hash64(std::string_view s, std::uint64_t seed = 0xcbf29ce484222325ULL) {
  std::uint64_t h = seed;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ULL;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

RouteDecision unavailable(const std::vector<TargetState>& targets) {
  const bool any_healthy = std::any_of(targets.begin(), targets.end(), [](const TargetState& t) { return t.healthy; });
  return {-1, any_healthy ? "overloaded" : "no_healthy", 0};
}

// A hash ring of `virtual_nodes` points per target, the ring both hashing
// policies walk from a key's hash.
using HashRing = std::multimap<std::uint64_t, int>;
HashRing make_ring(int targets, int virtual_nodes) {
  HashRing ring;
  for (int t = 0; t < targets; ++t)
    for (int v = 0; v < virtual_nodes; ++v) ring.emplace(hash64("target-" + std::to_string(t) + "#" + std::to_string(v)), t);
  return ring;
}

// A request without a routing key: the least-loaded target.
RouteDecision no_key(const std::vector<TargetState>& targets, const PolicyOptions& o) {
  const int t = least_outstanding(targets, o);
  return t < 0 ? unavailable(targets) : RouteDecision{t, "no_key", 0};
}

class RoundRobin final : public RoutingPolicy {
 public:
  explicit RoundRobin(PolicyOptions o) : o_(o) {}
  RouteDecision choose(const RouteRequest&, const std::vector<TargetState>& targets) override {
    const int n = static_cast<int>(targets.size());
    for (int i = 0; i < n; ++i) {
      const int t = static_cast<int>((next_ + i) % n);
      if (targets[t].healthy && has_room(targets[t], o_)) {
        next_ = t + 1;
        return {t, "round_robin", 0};
      }
    }
    return unavailable(targets);
  }

 private:
  PolicyOptions o_;
  std::size_t next_ = 0;
};

class LeastOutstanding final : public RoutingPolicy {
 public:
  explicit LeastOutstanding(PolicyOptions o) : o_(o) {}
  RouteDecision choose(const RouteRequest&, const std::vector<TargetState>& targets) override {
    const int t = least_outstanding(targets, o_);
    return t < 0 ? unavailable(targets) : RouteDecision{t, "least_outstanding", 0};
  }

 private:
  PolicyOptions o_;
};

class SessionSticky final : public RoutingPolicy {
 public:
  SessionSticky(int targets, PolicyOptions o) : o_(o), ring_(make_ring(targets, o.virtual_nodes)) {}

  RouteDecision choose(const RouteRequest& req, const std::vector<TargetState>& targets) override {
    if (req.key.empty()) return no_key(targets, o_);
    expire(req.now_s);
    if (auto it = sticky_.find(req.key); it != sticky_.end()) {
      const int t = it->second.target;
      if (targets[t].healthy && has_room(targets[t], o_)) return {t, "sticky", 0};
    }
    // Bounded-load consistent hashing for a new (or displaced) key.
    int healthy = 0, total = 0;
    for (const auto& t : targets)
      if (t.healthy) {
        ++healthy;
        total += t.outstanding;
      }
    if (healthy == 0) return unavailable(targets);
    const int cap = static_cast<int>(std::ceil((1.0 + o_.bounded_load_epsilon) * (total + 1) / healthy));
    auto it = ring_.lower_bound(hash64(req.key));
    bool first = true;
    for (std::size_t step = 0; step < ring_.size(); ++step, ++it) {
      if (it == ring_.end()) it = ring_.begin();
      const int t = it->second;
      const auto& s = targets[t];
      if (s.healthy && has_room(s, o_) && s.outstanding < cap) return {t, first ? "ring" : "ring_overflow", 0};
      if (s.healthy) first = false;
    }
    const int t = least_outstanding(targets, o_);
    return t < 0 ? unavailable(targets) : RouteDecision{t, "ring_overflow", 0};
  }

  void routed(int target, const RouteRequest& req) override {
    if (!req.key.empty()) sticky_[req.key] = {target, req.now_s};
  }

  void target_lost(int target) override {
    for (auto it = sticky_.begin(); it != sticky_.end();)
      it = it->second.target == target ? sticky_.erase(it) : std::next(it);
  }

 private:
  struct Entry {
    int target;
    double last_s;
  };
  void expire(double now) {
    // Sweep at most once a minute: the table is small next to the requests.
    if (now - last_sweep_ < 60) return;
    last_sweep_ = now;
    for (auto it = sticky_.begin(); it != sticky_.end();)
      it = now - it->second.last_s > o_.session_ttl_s ? sticky_.erase(it) : std::next(it);
  }
  PolicyOptions o_;
  HashRing ring_;
  std::unordered_map<std::string, Entry> sticky_;
  double last_sweep_ = 0;
};

// SGLang Model Gateway's and vllm-router's consistent hashing: the key's
// point on a ring of virtual_nodes points per target, then clockwise to the
// first healthy target. No load enters the choice, so how many sessions a
// target holds is the luck of the keys' hashes (the ring's own hash differs
// from the routers'; only its statistics matter here).
class ConsistentHash final : public RoutingPolicy {
 public:
  ConsistentHash(int targets, PolicyOptions o) : o_(o), ring_(make_ring(targets, o.virtual_nodes)) {}

  RouteDecision choose(const RouteRequest& req, const std::vector<TargetState>& targets) override {
    if (req.key.empty()) return no_key(targets, o_);
    auto it = ring_.lower_bound(hash64(req.key));
    bool first = true;
    for (std::size_t step = 0; step < ring_.size(); ++step, ++it) {
      if (it == ring_.end()) it = ring_.begin();
      const auto& s = targets[static_cast<std::size_t>(it->second)];
      if (s.healthy && has_room(s, o_)) return {it->second, first ? "ring" : "ring_next_healthy", 0};
      first = false;
    }
    return unavailable(targets);
  }

 private:
  PolicyOptions o_;
  HashRing ring_;
};

class CacheAware final : public RoutingPolicy {
 public:
  CacheAware(int targets, PolicyOptions o) : o_(o) {
    for (int t = 0; t < targets; ++t) index_.emplace_back(o_.max_blocks_per_target);
  }

  RouteDecision choose(const RouteRequest& req, const std::vector<TargetState>& targets) override {
    int lo = -1, hi = -1;
    for (int t = 0; t < static_cast<int>(targets.size()); ++t) {
      if (!targets[t].healthy) continue;
      if (lo < 0 || targets[t].outstanding < targets[lo].outstanding) lo = t;
      if (hi < 0 || targets[t].outstanding > targets[hi].outstanding) hi = t;
    }
    if (lo < 0) return unavailable(targets);
    const int max_load = targets[hi].outstanding, min_load = targets[lo].outstanding;
    if (max_load - min_load > o_.balance_abs_threshold && max_load > o_.balance_rel_threshold * min_load) {
      const int t = least_outstanding(targets, o_);
      return t < 0 ? unavailable(targets) : RouteDecision{t, "load_balance", 0};
    }
    int best = -1;
    std::size_t best_match = 0;
    for (int t = 0; t < static_cast<int>(targets.size()); ++t) {
      if (!targets[t].healthy || !has_room(targets[t], o_)) continue;
      const std::size_t m = index_[t].match(req.prefix);
      if (best < 0 || m > best_match || (m == best_match && targets[t].outstanding < targets[best].outstanding)) {
        best = t;
        best_match = m;
      }
    }
    if (best < 0) return unavailable(targets);
    const double share = req.prefix.empty() ? 0.0 : static_cast<double>(best_match) / req.prefix.size();
    if (share > o_.cache_threshold) return {best, "prefix_hit", share};
    int smallest = -1;
    for (int t = 0; t < static_cast<int>(targets.size()); ++t) {
      if (!targets[t].healthy || !has_room(targets[t], o_)) continue;
      if (smallest < 0 || index_[t].size() < index_[smallest].size() ||
          (index_[t].size() == index_[smallest].size() && targets[t].outstanding < targets[smallest].outstanding))
        smallest = t;
    }
    return {smallest, "new_prefix", share};
  }

  void routed(int target, const RouteRequest& req) override { index_[target].insert(req.prefix); }
  void target_lost(int target) override { index_[target].clear(); }

 private:
  PolicyOptions o_;
  std::vector<PrefixIndex> index_;
};

}  // namespace

Policy parse_policy(const std::string& name) {
  if (name == "round_robin") return Policy::round_robin;
  if (name == "least_outstanding") return Policy::least_outstanding;
  if (name == "session_sticky") return Policy::session_sticky;
  if (name == "cache_aware") return Policy::cache_aware;
  if (name == "consistent_hash") return Policy::consistent_hash;
  throw UserError("unknown routing policy '" + name +
                  "' (round_robin, least_outstanding, session_sticky, cache_aware, consistent_hash)");
}

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::round_robin: return "round_robin";
    case Policy::least_outstanding: return "least_outstanding";
    case Policy::session_sticky: return "session_sticky";
    case Policy::cache_aware: return "cache_aware";
    case Policy::consistent_hash: return "consistent_hash";
  }
  return "?";
}

bool has_room(const TargetState& t, const PolicyOptions& o) { return o.max_outstanding <= 0 || t.outstanding < o.max_outstanding; }

int least_outstanding(const std::vector<TargetState>& targets, const PolicyOptions& o) {
  int best = -1;
  for (int t = 0; t < static_cast<int>(targets.size()); ++t)
    if (targets[t].healthy && has_room(targets[t], o) && (best < 0 || targets[t].outstanding < targets[best].outstanding))
      best = t;
  return best;
}

std::unique_ptr<RoutingPolicy> make_policy(Policy p, int targets, const PolicyOptions& opts) {
  switch (p) {
    case Policy::round_robin: return std::make_unique<RoundRobin>(opts);
    case Policy::least_outstanding: return std::make_unique<LeastOutstanding>(opts);
    case Policy::session_sticky: return std::make_unique<SessionSticky>(targets, opts);
    case Policy::cache_aware: return std::make_unique<CacheAware>(targets, opts);
    case Policy::consistent_hash: return std::make_unique<ConsistentHash>(targets, opts);
  }
  return nullptr;
}

}  // namespace agentperf::route
