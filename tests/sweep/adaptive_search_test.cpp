// The adaptive cliff search on known throughput curves, the frontier, the
// short-circuit detector and the results store: no servers involved.
#include "sweep/adaptive_search.h"

#include <gtest/gtest.h>

#include <map>

#include <cmath>
#include <filesystem>
#include <functional>
#include <unistd.h>

#include <sqlite3.h>

#include "sweep/results_store.h"
#include "sweep/short_circuit.h"

using namespace agentperf::sweep;

namespace {
// A point's metrics (the intervals left out: these tests are about the values).
PointMetrics pm(double tput, double intvty, double ttft_ms, bool ok, std::optional<double> hit = std::nullopt) {
  PointMetrics m;
  m.tput_per_gpu = tput;
  m.intvty_p50 = intvty;
  m.ttft_p50_ms = ttft_ms;
  m.ok = ok;
  m.cache_hit = hit;
  return m;
}
// Throughput rises linearly until `cliff`, then collapses (KV thrash); TTFT explodes past it.
PointMetrics curve(int conc, int cliff) {
  PointMetrics m;
  if (conc <= cliff) {
    m.tput_per_gpu = 1000.0 * conc;
    m.ttft_p50_ms = 100;
  } else {
    m.tput_per_gpu = 1000.0 * cliff * 0.6;
    m.ttft_p50_ms = 5000;
  }
  m.intvty_p50 = m.tput_per_gpu / conc;
  return m;
}

struct Run {
  std::vector<int> measured;
  std::optional<std::pair<int, int>> cliff;
  std::vector<int> pruned;
};
Run search(const std::vector<int>& list, const std::function<PointMetrics(int)>& f, SearchOptions o = {}) {
  AdaptiveSearch s(list, o);
  Run r;
  while (auto c = s.next()) {
    r.measured.push_back(*c);
    s.report(*c, f(*c));
    if (r.measured.size() > 100) break;
  }
  r.cliff = s.cliff();
  r.pruned = s.pruned();
  return r;
}
}  // namespace

TEST(AdaptiveSearch, BracketsACliffWithFewerPointsThanTheList) {
  const std::vector<int> list = {1, 2, 4, 8, 16, 24, 32, 48, 64};
  const auto r = search(list, [](int c) { return curve(c, 39); });
  ASSERT_TRUE(r.cliff);
  EXPECT_LE(r.cliff->first, 39);
  EXPECT_GT(r.cliff->second, 39);
  EXPECT_LE(r.cliff->second - r.cliff->first, std::max(1, r.cliff->first / 4));
  // Coarse 1, 4, 16, 32, 64; then 48, 40 inside [32, 64]: 7 points locate it
  // within 32..40, where the full list of 9 says only 32..48.
  EXPECT_EQ(r.measured, (std::vector<int>{1, 4, 16, 32, 64, 48, 40}));
  EXPECT_LT(r.measured.size(), list.size());
}

TEST(AdaptiveSearch, ASmoothCurveIsMeasuredOnlyAtCoarsePoints) {
  const std::vector<int> list = {2, 4, 8, 16, 32, 64};
  const auto r = search(list, [](int c) { return curve(c, 1000); });
  EXPECT_FALSE(r.cliff);
  EXPECT_EQ(r.measured, (std::vector<int>{2, 8, 32, 64}));
  EXPECT_EQ(r.pruned, (std::vector<int>{4, 16}));
}

TEST(AdaptiveSearch, AFailedPointCountsAsPastTheCliff) {
  const auto r = search({1, 2, 4, 8}, [](int c) {
    PointMetrics m = curve(c, 1000);
    m.ok = c < 4;
    return m;
  });
  ASSERT_TRUE(r.cliff);
  EXPECT_EQ(*r.cliff, std::make_pair(3, 4));  // 2 measured, then the midpoint 3
  const auto first = search({4, 8}, [](int) { return pm(0, 0, 0, false); });
  ASSERT_TRUE(first.cliff);
  EXPECT_EQ(first.cliff->first, 0);
}

TEST(ParetoFrontier, KeepsOnlyUndominatedPoints) {
  // (interactivity, throughput): (10, 100) dominates (9, 90); (5, 200) and (20, 50) trade off.
  const auto f = pareto_frontier({{10, 100}, {9, 90}, {5, 200}, {20, 50}, {5, 150}});
  EXPECT_EQ(f, (std::vector<std::size_t>{2, 0, 3}));
}

TEST(ShortCircuit, StallAndThrashAreDiagnosed) {
  ShortCircuitOptions o;
  o.stall_s = 10;
  o.pinned_s = 5;
  ShortCircuitDetector stall(o);
  std::optional<std::string> why;
  for (int t = 0; t <= 12 && !why; ++t)
    why = stall.feed(t, {{"sglang:generation_tokens_total", 500}, {"sglang:num_running_reqs", 4}});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("stalled"), std::string::npos) << *why;
  // Progress resets the stall clock.
  ShortCircuitDetector moving(o);
  for (int t = 0; t <= 30; ++t)
    EXPECT_FALSE(moving.feed(t, {{"sglang:generation_tokens_total", 100.0 * t}, {"sglang:num_running_reqs", 4}}));
  // KV pinned at 100 % while the queue grows.
  ShortCircuitDetector thrash(o);
  why.reset();
  for (int t = 0; t <= 8 && !why; ++t)
    why = thrash.feed(t, {{"sglang:generation_tokens_total", 10.0 * t}, {"sglang:token_usage", 1.0},
                          {"sglang:num_queue_reqs", 3.0 + t}});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("thrashing"), std::string::npos) << *why;
  // Pinned but draining: not thrashing.
  ShortCircuitDetector draining(o);
  for (int t = 0; t <= 20; ++t)
    EXPECT_FALSE(draining.feed(t, {{"sglang:generation_tokens_total", 10.0 * t}, {"sglang:token_usage", 1.0},
                                   {"sglang:num_queue_reqs", 30.0 - t}}));
}

TEST(ResultsStore, RoundTripsRowsAndReplacesByPoint) {
  const auto path = std::filesystem::temp_directory_path() / ("agentperf_store_" + std::to_string(::getpid()) + ".sqlite");
  std::filesystem::remove(path);
  {
    ResultsStore s(path.string());
    PointRow r;
    r.sweep = "sw";
    r.exp_name = "p_conc8";
    r.conc = 8;
    r.status = "running";
    r.server_metrics = R"({"sglang:token_usage":{"mean":0.5}})";
    s.put(r);
    r.status = "done";
    r.total_tput_per_gpu = 1234.5;
    r.diagnosis = "it's fine";  // quotes survive binding
    s.put(r);
    PointRow other = r;
    other.exp_name = "p_conc2";
    other.conc = 2;
    s.put(other);
  }
  ResultsStore s(path.string());  // reopened: persisted
  const auto rows = s.list("sw");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].conc, 2);  // ordered by conc
  const auto got = s.get("sw", "p_conc8");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, "done");
  EXPECT_DOUBLE_EQ(got->total_tput_per_gpu, 1234.5);
  EXPECT_EQ(got->diagnosis, "it's fine");
  EXPECT_FALSE(s.get("sw", "missing"));
  EXPECT_TRUE(s.list("other").empty());
  std::filesystem::remove(path);
}

// A limit is named for what it is: the cache collapsing (hit rate falls, or
// TTFT jumps) is the cliff; throughput that stops rising while the cache
// holds is compute saturation.
TEST(AdaptiveSearch, CacheCliffAndComputeSaturationAreToldApart) {
  SearchOptions o;
  PointMetrics lo = pm(1000, 50, 100, true, 0.90);
  PointMetrics saturated = pm(1020, 40, 120, true, 0.89);  // +2 %, the cache holds
  auto v = classify_limit(lo, saturated, o);
  EXPECT_EQ(v.kind, LimitKind::compute_saturation);
  EXPECT_NE(v.why.find("+2.0%"), std::string::npos) << v.why;
  PointMetrics collapsed = pm(1100, 40, 150, true, 0.70);  // throughput still rose, but the hit rate fell 20 points
  v = classify_limit(lo, collapsed, o);
  EXPECT_EQ(v.kind, LimitKind::cache_cliff);
  EXPECT_NE(v.why.find("90% -> 70%"), std::string::npos) << v.why;
  PointMetrics queued = pm(1100, 40, 500, true, std::nullopt);  // no hit rate reported: TTFT x5 says it
  EXPECT_EQ(classify_limit(lo, queued, o).kind, LimitKind::cache_cliff);
  PointMetrics scaling = pm(1500, 45, 110, true, 0.89);
  EXPECT_EQ(classify_limit(lo, scaling, o).kind, LimitKind::none);

  // The search reports the kind of the bracket it found.
  AdaptiveSearch s({8, 16, 32, 64}, o);
  std::map<int, PointMetrics> at = {{8, pm(800, 60, 90, true, 0.9)}, {16, pm(1600, 55, 95, true, 0.9)},
                                    {32, pm(1640, 40, 100, true, 0.9)}, {64, pm(1700, 20, 400, true, 0.5)}};
  while (auto c = s.next()) {
    auto it = at.find(*c);
    s.report(*c, it != at.end() ? it->second : pm(1620, 50, 98, true, 0.9));
  }
  ASSERT_TRUE(s.cliff());
  EXPECT_EQ(s.limit().kind, LimitKind::compute_saturation);
  // Coarse 8, 32, 64 brackets (32, 64) as a cache cliff; its midpoints 48,
  // then 40 (throughput -1 %, cache holding) move the first limit down to
  // (32, 40), a bracket as narrow as the list's smallest step.
  EXPECT_EQ(*s.cliff(), std::make_pair(32, 40));
}

// A change inside the 95 % intervals is no limit (issue: a noisy point of
// 90 requests was labelled "compute saturation (-34.6 %)"). Throughput
// 1000 -> 900 per GPU: saturation without intervals; with intervals
// [800, 1200] and [700, 1150] the higher point could have gained 44 %, so no
// call; with tight ones [980, 1020] and [880, 920] it is saturation. A TTFT
// jump x4 whose intervals overlap is no cliff either.
TEST(AdaptiveSearch, NoLimitIsCalledOnAChangeInsideTheIntervals) {
  SearchOptions o;
  PointMetrics lo = pm(1000, 50, 100, true, std::nullopt), hi = pm(900, 40, 110, true, std::nullopt);
  EXPECT_EQ(classify_limit(lo, hi, o).kind, LimitKind::compute_saturation);
  lo.tput_interval = std::make_pair(800.0, 1200.0);
  hi.tput_interval = std::make_pair(700.0, 1150.0);
  EXPECT_EQ(classify_limit(lo, hi, o).kind, LimitKind::none);
  lo.tput_interval = std::make_pair(980.0, 1020.0);
  hi.tput_interval = std::make_pair(880.0, 920.0);
  const auto sat = classify_limit(lo, hi, o);
  EXPECT_EQ(sat.kind, LimitKind::compute_saturation);
  EXPECT_NE(sat.why.find("beyond the 95 % intervals"), std::string::npos) << sat.why;

  PointMetrics a = pm(1000, 50, 100, true, std::nullopt), b = pm(1200, 40, 400, true, std::nullopt);
  EXPECT_EQ(classify_limit(a, b, o).kind, LimitKind::cache_cliff);
  a.ttft_p50_interval = std::make_pair(60.0, 500.0);
  b.ttft_p50_interval = std::make_pair(150.0, 900.0);
  EXPECT_EQ(classify_limit(a, b, o).kind, LimitKind::none);
  b.ttft_p50_interval = std::make_pair(520.0, 900.0);
  EXPECT_EQ(classify_limit(a, b, o).kind, LimitKind::cache_cliff);
}

// The intervals reach the store, and a store written before they existed
// gains their columns when opened (its rows read back with none).
TEST(ResultsStore, KeepsIntervalsAndUpgradesAnOlderStore) {
  const auto path = std::filesystem::temp_directory_path() / ("agentperf_store_old_" + std::to_string(::getpid()) + ".sqlite");
  std::filesystem::remove(path);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "CREATE TABLE points (sweep TEXT NOT NULL, exp_name TEXT NOT NULL, row_index INTEGER, tp "
                           "INTEGER, conc INTEGER, kv_offloading TEXT, spec_decoding TEXT, status TEXT NOT NULL, mode "
                           "TEXT, adaptive_added INTEGER, total_tput_per_gpu REAL, output_tput_per_gpu REAL, intvty_p50 "
                           "REAL, e2e_norm_intvty_p50 REAL, ttft_p50_ms REAL, e2el_p50_s REAL, cache_hit REAL, requests "
                           "INTEGER, errors INTEGER, valid INTEGER, diagnosis TEXT, result_dir TEXT, server_command "
                           "TEXT, server_log TEXT, server_metrics TEXT, agentperf_version TEXT, started_at TEXT, "
                           "finished_at TEXT, PRIMARY KEY (sweep, exp_name));"
                           "INSERT INTO points (sweep, exp_name, conc, status, total_tput_per_gpu) VALUES "
                           "('sw', 'old_c4', 4, 'done', 500.0);",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  ResultsStore s(path.string());
  const auto old = s.get("sw", "old_c4");
  ASSERT_TRUE(old);
  EXPECT_DOUBLE_EQ(old->total_tput_per_gpu, 500.0);
  EXPECT_DOUBLE_EQ(old->tput_ci_hi, 0.0);
  PointRow r;
  r.sweep = "sw";
  r.exp_name = "new_c8";
  r.status = "done";
  r.tput_ci_lo = 900;
  r.tput_ci_hi = 1100;
  r.ttft_p50_ci_lo_ms = 40;
  r.ttft_p50_ci_hi_ms = 60;
  r.small_sample = true;
  s.put(r);
  const auto back = s.get("sw", "new_c8");
  ASSERT_TRUE(back);
  EXPECT_DOUBLE_EQ(back->tput_ci_lo, 900);
  EXPECT_DOUBLE_EQ(back->tput_ci_hi, 1100);
  EXPECT_DOUBLE_EQ(back->ttft_p50_ci_hi_ms, 60);
  EXPECT_TRUE(back->small_sample);
  std::filesystem::remove(path);
}
