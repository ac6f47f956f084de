// The bootstrap intervals: they cover the truth at about their nominal rate,
// and a replay's correlated requests widen them as they should.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "metrics/confidence.h"

using agentperf::CiObservation;
using agentperf::CiOptions;
using agentperf::confidence_intervals;

namespace {
// `units` units of `per_unit` requests; a unit's requests share a random
// offset (sd `between`) on top of their own noise (sd 10), around 100 ms.
std::vector<CiObservation> draw(std::mt19937_64& g, int units, int per_unit, double between) {
  std::normal_distribution<double> own(0, 10), shared(0, between);
  std::vector<CiObservation> obs;
  for (int u = 0; u < units; ++u) {
    const double offset = shared(g);
    for (int k = 0; k < per_unit; ++k) {
      CiObservation o;
      o.unit = static_cast<std::size_t>(u);
      o.ttft_ms = 100 + offset + own(g);
      o.osl = 100;
      obs.push_back(o);
    }
  }
  return obs;
}
}  // namespace

TEST(ConfidenceIntervals, CoverTheTrueMeanAtAboutTheirNominalRate) {
  std::mt19937_64 g(7);
  int covered = 0;
  const int trials = 200;
  for (int t = 0; t < trials; ++t) {
    const auto obs = draw(g, 40, 1, 0);
    CiOptions o;
    o.seed = static_cast<std::uint64_t>(t);
    const auto ci = confidence_intervals(obs, 40, o);
    const auto iv = ci["metrics"]["time_to_first_token"]["avg"];
    if (iv[0].get<double>() <= 100 && 100 <= iv[1].get<double>()) ++covered;
  }
  // 95 % nominal; a percentile bootstrap of 40 runs a little under it.
  EXPECT_GE(covered, static_cast<int>(0.87 * trials)) << covered;
  EXPECT_LE(covered, static_cast<int>(0.99 * trials)) << covered;
}

TEST(ConfidenceIntervals, SessionTreesAreResampledWholeSoCorrelatedRequestsWidenTheInterval) {
  std::mt19937_64 g(11);
  // 8 trees of 20 turns whose turns share much of their latency.
  const auto obs = draw(g, 8, 20, 30);
  CiOptions trees;
  trees.trees = true;
  const auto by_tree = confidence_intervals(obs, 8, trees);
  // The same requests taken as independent: one unit each.
  auto flat = obs;
  for (std::size_t i = 0; i < flat.size(); ++i) flat[i].unit = i;
  const auto by_request = confidence_intervals(flat, flat.size(), CiOptions{});
  auto width = [](const nlohmann::json& ci) {
    const auto iv = ci["metrics"]["time_to_first_token"]["avg"];
    return iv[1].get<double>() - iv[0].get<double>();
  };
  EXPECT_GT(width(by_tree), 2.0 * width(by_request));
  EXPECT_EQ(by_tree["unit"], "session tree");
  EXPECT_EQ(by_tree["units"], 8);
  EXPECT_TRUE(by_tree["small_sample"].get<bool>());  // fewer than 10 trees
  EXPECT_FALSE(by_request["small_sample"].get<bool>());
}

TEST(ConfidenceIntervals, ThroughputIntervalsHoldTheRequestRateFixedAndAreReproducible) {
  std::mt19937_64 g(3);
  auto obs = draw(g, 50, 1, 0);
  for (std::size_t i = 0; i < obs.size(); ++i) obs[i].osl = 50 + static_cast<double>(i % 100);
  CiOptions o;
  o.duration_s = 10;
  o.seed = 42;
  const auto a = confidence_intervals(obs, 50, o);
  const auto b = confidence_intervals(obs, 50, o);
  EXPECT_EQ(a, b);  // seeded: the same records give the same aggregate
  double sum = 0;
  for (const auto& x : obs) sum += x.osl;
  const auto iv = a["metrics"]["output_token_throughput"];
  EXPECT_LT(iv[0].get<double>(), sum / 10);
  EXPECT_GT(iv[1].get<double>(), sum / 10);
  EXPECT_TRUE(confidence_intervals(std::vector<CiObservation>(1), 1, o).is_null());  // one unit: no interval
}
