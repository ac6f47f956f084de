// Routing decisions without the network: each policy's rule, worked on
// small target sets.
#include "route/routing_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "common/error.h"
#include "route/prefix_index.h"

using namespace agentperf;
using namespace agentperf::route;

namespace {
std::vector<std::uint64_t> blocks_of(const std::string& text, std::size_t block = 4) {
  PrefixHasher h(block);
  h.feed(text);
  return h.blocks();
}
RouteRequest keyed(const std::string& key) {
  RouteRequest r;
  r.key = key;
  return r;
}
}  // namespace

TEST(PrefixHasher, ChainsBlocksSoEqualPrefixesShareHashes) {
  const auto a = blocks_of("abcdefghijkl"), b = blocks_of("abcdefghXXXX"), c = blocks_of("XXXXefghijkl");
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_NE(a[2], b[2]);
  EXPECT_NE(a[1], c[1]);  // same block text after a different prefix is a different block
  // Pieces fed separately hash as their concatenation; a partial block is dropped.
  PrefixHasher h(4);
  h.feed("abcde");
  h.feed("fghijklmn");
  EXPECT_EQ(h.blocks(), a);
}

TEST(PrefixIndex, MatchesLeadingBlocksAndEvictsOldest) {
  PrefixIndex idx(6);
  idx.insert(blocks_of("aaaabbbbcccc"));
  EXPECT_EQ(idx.match(blocks_of("aaaabbbbdddd")), 2u);
  EXPECT_EQ(idx.match(blocks_of("bbbbaaaa")), 0u);
  idx.insert(blocks_of("xxxxyyyyzzzzwwww"));  // 7 blocks > 6: the oldest ("aaaa") goes
  EXPECT_EQ(idx.size(), 6u);
  EXPECT_EQ(idx.match(blocks_of("aaaabbbb")), 0u);
  EXPECT_EQ(idx.match(blocks_of("xxxxyyyyzzzz")), 3u);
}

TEST(RoutingPolicy, RoundRobinSkipsUnhealthyAndFull) {
  PolicyOptions o;
  o.max_outstanding = 2;
  auto p = make_policy(Policy::round_robin, 3, o);
  std::vector<TargetState> t(3);
  t[1].healthy = false;
  std::vector<int> got;
  for (int i = 0; i < 4; ++i) got.push_back(p->choose({}, t).target);
  EXPECT_EQ(got, (std::vector<int>{0, 2, 0, 2}));
  t[0].outstanding = 2;
  t[2].outstanding = 2;
  const auto full = p->choose({}, t);
  EXPECT_EQ(full.target, -1);
  EXPECT_EQ(full.reason, "overloaded");
  t[0].healthy = t[2].healthy = false;
  EXPECT_EQ(p->choose({}, t).reason, "no_healthy");
}

TEST(RoutingPolicy, LeastOutstandingPicksTheIdlest) {
  auto p = make_policy(Policy::least_outstanding, 3, {});
  std::vector<TargetState> t(3);
  t[0].outstanding = 5;
  t[1].outstanding = 1;
  t[2].outstanding = 3;
  EXPECT_EQ(p->choose({}, t).target, 1);
}

TEST(RoutingPolicy, SessionStickyKeepsAKeyWhereItStarted) {
  auto p = make_policy(Policy::session_sticky, 4, {});
  std::vector<TargetState> t(4);
  auto first = p->choose(keyed("tree-1"), t);
  ASSERT_GE(first.target, 0);
  EXPECT_EQ(first.reason, "ring");
  p->routed(first.target, keyed("tree-1"));
  // Heavier load on its target does not move a live session.
  t[first.target].outstanding = 50;
  const auto again = p->choose(keyed("tree-1"), t);
  EXPECT_EQ(again.target, first.target);
  EXPECT_EQ(again.reason, "sticky");
  // Its target fails: the key moves, and stays at the new place.
  t[first.target].healthy = false;
  p->target_lost(first.target);
  const auto moved = p->choose(keyed("tree-1"), t);
  ASSERT_GE(moved.target, 0);
  EXPECT_NE(moved.target, first.target);
  p->routed(moved.target, keyed("tree-1"));
  t[first.target].healthy = true;
  EXPECT_EQ(p->choose(keyed("tree-1"), t).target, moved.target);
  // No key: least outstanding.
  EXPECT_EQ(p->choose({}, t).reason, "no_key");
}

TEST(RoutingPolicy, SessionStickyBoundsTheLoadOfNewKeys) {
  PolicyOptions o;
  o.bounded_load_epsilon = 0.25;
  auto p = make_policy(Policy::session_sticky, 4, o);
  std::vector<TargetState> t(4);
  // 200 new sessions, each staying in flight: no target may exceed
  // ceil(1.25 x (total + 1) / 4) at the moment it takes a new key.
  for (int i = 0; i < 200; ++i) {
    const std::string key = std::string("s") += std::to_string(i);
    const auto d = p->choose(keyed(key), t);
    ASSERT_GE(d.target, 0);
    int total = 0;
    for (const auto& s : t) total += s.outstanding;
    EXPECT_LT(t[d.target].outstanding, std::ceil(1.25 * (total + 1) / 4.0)) << i;
    ++t[d.target].outstanding;
    p->routed(d.target, keyed(key));
  }
  for (const auto& s : t) EXPECT_LE(s.outstanding, 63);  // 1.25 x 200 / 4 = 62.5
  for (const auto& s : t) EXPECT_GE(s.outstanding, 25);
}

// SGLang Model Gateway's consistent_hashing: the key decides, whatever the
// loads; a failed target's keys move to the next one clockwise and come
// back when it recovers.
TEST(RoutingPolicy, ConsistentHashIgnoresLoadAndFollowsTheKey) {
  auto p = make_policy(Policy::consistent_hash, 8, {});
  std::vector<TargetState> t(8);
  const auto first = p->choose(keyed("conv-7"), t);
  ASSERT_GE(first.target, 0);
  EXPECT_EQ(first.reason, "ring");
  t[first.target].outstanding = 1000;  // no load bound: it stays
  EXPECT_EQ(p->choose(keyed("conv-7"), t).target, first.target);
  t[first.target].healthy = false;
  const auto moved = p->choose(keyed("conv-7"), t);
  ASSERT_GE(moved.target, 0);
  EXPECT_NE(moved.target, first.target);
  EXPECT_EQ(moved.reason, "ring_next_healthy");
  t[first.target].healthy = true;
  EXPECT_EQ(p->choose(keyed("conv-7"), t).target, first.target);
  EXPECT_EQ(p->choose({}, t).reason, "no_key");
}

// 64 sessions over 8 targets land as their hashes fall, unbalanced as
// independent draws are; session_sticky's load bound keeps the same keys
// within ceil(1.25 x 64 / 8) = 10 a target.
TEST(RoutingPolicy, ConsistentHashSpreadsSessionsAsTheirHashesFall) {
  PolicyOptions o;
  auto hashed = make_policy(Policy::consistent_hash, 8, o);
  auto bounded = make_policy(Policy::session_sticky, 8, o);
  std::vector<TargetState> th(8), tb(8);
  for (int i = 0; i < 64; ++i) {
    const std::string key = "session-" + std::to_string(i);
    const int a = hashed->choose(keyed(key), th).target;
    ++th[a].outstanding;
    const int b = bounded->choose(keyed(key), tb).target;
    ++tb[b].outstanding;
    bounded->routed(b, keyed(key));
  }
  int hashed_max = 0, bounded_max = 0, hashed_used = 0;
  for (int k = 0; k < 8; ++k) {
    hashed_max = std::max(hashed_max, th[k].outstanding);
    bounded_max = std::max(bounded_max, tb[k].outstanding);
    hashed_used += th[k].outstanding > 0;
  }
  EXPECT_LE(bounded_max, 10);
  EXPECT_GT(hashed_max, bounded_max);  // these 64 keys pile up somewhere
  EXPECT_EQ(hashed_used, 8);           // but the ring's 160 points a target reach all of them
}

TEST(RoutingPolicy, CacheAwareFollowsThePrefixUnlessImbalanced) {
  PolicyOptions o;
  o.block_bytes = 4;
  o.balance_abs_threshold = 4;
  o.balance_rel_threshold = 1.5;
  auto p = make_policy(Policy::cache_aware, 3, o);
  std::vector<TargetState> t(3);
  RouteRequest a;
  a.prefix = blocks_of("system prompt of session A, turn 1");
  // New prefix: the target with the smallest index (all empty: the least loaded, target 0).
  auto d = p->choose(a, t);
  EXPECT_EQ(d.reason, "new_prefix");
  p->routed(d.target, a);
  const int home = d.target;
  // The next turn extends the prompt: prefix hit on the same target.
  RouteRequest a2;
  a2.prefix = blocks_of("system prompt of session A, turn 1 + answer + turn 2");
  d = p->choose(a2, t);
  EXPECT_EQ(d.target, home);
  EXPECT_EQ(d.reason, "prefix_hit");
  EXPECT_GT(d.prefix_match, 0.5);
  // Another session goes to an empty target (smallest index).
  RouteRequest b;
  b.prefix = blocks_of("a completely different conversation");
  d = p->choose(b, t);
  EXPECT_NE(d.target, home);
  // Imbalance overrides the prefix: max - min > 4 and max > 1.5 x min.
  t[home].outstanding = 10;
  d = p->choose(a2, t);
  EXPECT_EQ(d.reason, "load_balance");
  EXPECT_NE(d.target, home);
}

TEST(RoutingPolicy, NamesParse) {
  EXPECT_EQ(parse_policy("cache_aware"), Policy::cache_aware);
  EXPECT_EQ(parse_policy("consistent_hash"), Policy::consistent_hash);
  EXPECT_STREQ(policy_name(Policy::consistent_hash), "consistent_hash");
  EXPECT_THROW(parse_policy("random"), UserError);
}
