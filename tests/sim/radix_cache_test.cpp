// Radix cache mechanisms with hand-computed expectations.
#include "sim/radix_cache.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace agentperf::sim;

namespace {
std::vector<Token> seq(Token start, int n) {
  std::vector<Token> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}
std::vector<Token> concat(std::vector<Token> a, const std::vector<Token>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
RadixCache plain(int page = 1) { return RadixCache(page, false, 0, 0, WritePolicy::write_through, 100, 0); }
}  // namespace

TEST(RadixCache, NextTurnReusesThePreviousTurnsPrompt) {
  auto c = plain();
  const auto turn1 = seq(1, 100);
  c.insert(turn1, 100, false, 1);
  const auto turn2 = concat(concat(turn1, seq(5000, 30)), seq(9000, 20));  // + assistant + user
  auto m = c.match(turn2, 2);
  EXPECT_EQ(m.device_usable, 100);
  EXPECT_EQ(m.matched, 100);
  auto ins = c.insert(turn2, 150, false, 3);
  EXPECT_EQ(ins.new_device_tokens, 50);
  EXPECT_EQ(c.counters().device_tokens, 150);
}

TEST(RadixCache, MatchingIsPageGranular) {
  auto c = plain(64);
  const auto p = seq(1, 150);
  auto ins = c.insert(p, 150, false, 1);
  EXPECT_EQ(ins.new_device_tokens, 128);  // 150 cut to 2 pages
  auto m = c.match(p, 2);
  EXPECT_EQ(m.device_usable, 128);
  // A query that diverges inside the second page matches only the first.
  auto q = p;
  q[100] = -7;
  EXPECT_EQ(c.match(q, 3).device_usable, 64);
  EXPECT_EQ(c.node_count(), 2u);  // the match split the 128-token edge at 64
}

TEST(RadixCache, EvictsLeastRecentlyUsedLeavesFirst) {
  auto c = plain();
  const auto x = seq(1, 100), y = seq(1000, 100), z = seq(2000, 100);
  c.insert(x, 100, false, 1);
  c.insert(y, 100, false, 2);
  c.insert(z, 100, false, 3);
  c.match(x, 4);  // x is now the most recent
  EXPECT_EQ(c.evict_device(150), 200);  // y (t=2) then z (t=3)
  EXPECT_EQ(c.match(x, 5).device_usable, 100);
  EXPECT_EQ(c.match(y, 5).device_usable, 0);
  EXPECT_EQ(c.match(z, 5).device_usable, 0);
}

TEST(RadixCache, LockedPathsAreNotEvicted) {
  auto c = plain();
  const auto x = seq(1, 100), y = seq(1000, 100);
  c.insert(x, 100, false, 1);
  c.insert(y, 100, false, 2);
  auto m = c.match(x, 3);
  c.lock(m.device_node);
  EXPECT_EQ(c.evictable_device_tokens(), 100);
  EXPECT_EQ(c.evict_device(1000), 100);  // only y
  EXPECT_EQ(c.match(x, 4).device_usable, 100);
  c.unlock(m.device_node);
  EXPECT_EQ(c.evictable_device_tokens(), 100);
}

TEST(RadixCache, WriteThroughSelectiveBacksUpOnTheSecondTouch) {
  RadixCache c(1, false, 1000, 0, WritePolicy::write_through_selective, 100, 0);
  const auto a = seq(1, 100);
  c.insert(a, 100, false, 1);
  EXPECT_EQ(c.counters().host_tokens, 0);  // touched once: stays device-only
  const auto a2 = concat(a, seq(500, 50));
  c.insert(a2, 150, false, 2);
  EXPECT_EQ(c.counters().host_tokens, 100);  // a's node touched twice; the new 50 once
  EXPECT_DOUBLE_EQ(c.counters().d2h_bytes, 100 * 100.0);
  // Device eviction: the backed-up prefix is demoted, the one-touch tail lost.
  c.evict_device(1000);
  EXPECT_EQ(c.counters().device_tokens, 0);
  auto m = c.match(a2, 3);
  EXPECT_EQ(m.device_usable, 0);
  EXPECT_EQ(m.host_usable, 100);
  EXPECT_EQ(c.load_back(m.host_node, 4), 100);
  EXPECT_EQ(c.match(a2, 5).device_usable, 100);
}

TEST(RadixCache, WriteThroughBacksUpAtOnceAndWriteBackOnEviction) {
  RadixCache wt(1, false, 1000, 0, WritePolicy::write_through, 100, 0);
  wt.insert(seq(1, 100), 100, false, 1);
  EXPECT_EQ(wt.counters().host_tokens, 100);

  RadixCache wb(1, false, 1000, 0, WritePolicy::write_back, 100, 0);
  const auto a = seq(1, 100);
  wb.insert(a, 100, false, 1);
  wb.insert(a, 100, false, 2);
  EXPECT_EQ(wb.counters().host_tokens, 0);  // never on hits
  wb.evict_device(100);
  EXPECT_EQ(wb.counters().host_tokens, 100);  // written when evicted
  EXPECT_EQ(wb.match(a, 3).host_usable, 100);
}

TEST(RadixCache, HostPoolEvictsLeastRecentlyUsedHostOnlyLeaves) {
  RadixCache c(1, false, 150, 0, WritePolicy::write_through, 1, 0);
  const auto a = seq(1, 100), b = seq(1000, 100);
  c.insert(a, 100, false, 1);
  c.evict_device(100);  // a is now host-only
  c.insert(b, 100, false, 2);  // backing b up needs a's host space
  EXPECT_EQ(c.counters().host_tokens, 100);
  EXPECT_EQ(c.match(a, 3).host_usable, 0);
  EXPECT_EQ(c.counters().host_evicted_tokens, 100);
}

TEST(RadixCache, HybridHitsStopAtTheDeepestStateCheckpoint) {
  RadixCache c(1, true, 0, 0, WritePolicy::write_through, 100, 1e6);
  const auto p1 = seq(1, 200);
  c.insert(p1, 200, true, 1);                  // prompt end checkpoint
  const auto p2 = concat(p1, seq(7000, 100));  // extended without a checkpoint
  c.insert(p2, 300, false, 2);
  auto m = c.match(concat(p2, seq(9000, 10)), 3);
  EXPECT_EQ(m.matched, 300);
  EXPECT_EQ(m.device_usable, 200);  // KV up to 300 exists but state only at 200
  EXPECT_EQ(c.counters().device_states, 1);
  // Evicting the state leaves a tombstone: KV stays, the hit is gone.
  EXPECT_EQ(c.evict_device_states(1), 1);
  EXPECT_EQ(c.counters().device_tokens, 300);
  EXPECT_EQ(c.match(p2, 4).device_usable, 0);
}

// SGLang's SWA lock pins the window where a request's path ends, not the
// tails of earlier chunks above it (swa_component.py's window-bounded lock).
TEST(RadixCache, WithLockEndsOnlyAnAncestorsTailIsEvictableButTheLockedEndIsNot) {
  RadixCache c(1, true, 0, 0, WritePolicy::write_through, 100, 0);
  c.protect_lock_ends_only();
  const auto chunk1 = seq(1, 100);
  const auto chunk2 = concat(chunk1, seq(500, 100));
  c.insert(chunk1, 100, true, 1);                     // the first chunk's tail
  auto end = c.insert(chunk2, 200, true, 2).node;     // the second's
  c.lock(end);
  EXPECT_EQ(c.evict_device_states(2), 1);             // only the ancestor's tail goes
  EXPECT_EQ(c.match(chunk2, 3).device_usable, 200);   // the locked end still serves
  EXPECT_EQ(c.match(chunk1, 4).device_usable, 0);     // the first chunk's end does not
  c.unlock(end);
  EXPECT_EQ(c.evict_device_states(1), 1);
  EXPECT_EQ(c.counters().device_tokens, 200);         // tombstones: the KV stays
  // Without the option a locked path keeps every tail on it.
  RadixCache whole(1, true, 0, 0, WritePolicy::write_through, 100, 0);
  whole.insert(chunk1, 100, true, 1);
  auto end2 = whole.insert(chunk2, 200, true, 2).node;
  whole.lock(end2);
  EXPECT_EQ(whole.evict_device_states(2), 0);
}
