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
  CiOptions one_by_one;
  one_by_one.time_blocks = 0;
  const auto by_request = confidence_intervals(flat, flat.size(), one_by_one);
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

// A closed loop at fixed concurrency C runs at C / mean latency requests per
// second (Little's law), so with fixed output lengths its token throughput
// moves only with the mean latency. Runs drawn that way: the throughput
// interval covers the true C x OSL / true mean latency at about its nominal
// rate (the interval with the rate held fixed has zero width: it never
// does), and the interval of a load that sets its own rate stays as before.
TEST(ConfidenceIntervals, AClosedLoopsThroughputIntervalMovesWithItsMeanLatency) {
  std::mt19937_64 g(5);
  std::normal_distribution<double> latency(1000, 300);  // ms
  const double concurrency = 8, osl = 100, n = 60;
  const double truth = concurrency * osl / 1.0;  // tokens/s at the true mean latency of 1 s
  int covered = 0, covered_fixed_rate = 0;
  const int trials = 200;
  for (int t = 0; t < trials; ++t) {
    std::vector<CiObservation> obs;
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      CiObservation o;
      o.unit = static_cast<std::size_t>(i);
      o.latency_ms = std::max(50.0, latency(g));
      o.osl = osl;
      sum += *o.latency_ms;
      obs.push_back(o);
    }
    CiOptions o;
    o.seed = static_cast<std::uint64_t>(t);
    // The run's duration: n requests at C in flight, each its latency.
    o.duration_s = sum / 1000 / concurrency;
    o.closed_loop = true;
    const auto iv = confidence_intervals(obs, obs.size(), o)["metrics"]["output_token_throughput"];
    if (iv[0].get<double>() <= truth && truth <= iv[1].get<double>()) ++covered;
    o.closed_loop = false;
    const auto fixed = confidence_intervals(obs, obs.size(), o)["metrics"]["output_token_throughput"];
    EXPECT_DOUBLE_EQ(fixed[0].get<double>(), fixed[1].get<double>());  // fixed lengths, fixed rate: no width
    if (fixed[0].get<double>() <= truth && truth <= fixed[1].get<double>()) ++covered_fixed_rate;
  }
  EXPECT_GE(covered, static_cast<int>(0.87 * trials)) << covered;
  EXPECT_LE(covered, static_cast<int>(0.99 * trials)) << covered;
  EXPECT_EQ(covered_fixed_rate, 0);
}

// Requests that run side by side share their batches: latencies that drift
// together over time. Resampled in blocks contiguous in start time, the
// interval keeps that sharing and comes out wider than resampling request
// by request, and it covers the true mean at about its nominal rate where
// request by request does not.
TEST(ConfidenceIntervals, ASyntheticLoadIsResampledInTimeBlocks) {
  std::mt19937_64 g(9);
  std::normal_distribution<double> own(0, 10), phase(0, 15);
  int covered_blocks = 0, covered_requests = 0;
  double width_blocks = 0, width_requests = 0;
  const int trials = 100;
  for (int t = 0; t < trials; ++t) {
    // 600 requests in start order; every 20 consecutive share an offset.
    std::vector<CiObservation> obs;
    double offset = 0;
    for (int i = 0; i < 600; ++i) {
      if (i % 20 == 0) offset = phase(g);
      CiObservation o;
      o.unit = static_cast<std::size_t>(i);
      o.start_ns = std::int64_t{i} * 1000000;
      o.ttft_ms = 100 + offset + own(g);
      obs.push_back(o);
    }
    CiOptions o;
    o.seed = static_cast<std::uint64_t>(t);
    const auto blocks = confidence_intervals(obs, obs.size(), o);
    o.time_blocks = 0;
    const auto requests = confidence_intervals(obs, obs.size(), o);
    const auto b = blocks["metrics"]["time_to_first_token"]["avg"], r = requests["metrics"]["time_to_first_token"]["avg"];
    covered_blocks += b[0].get<double>() <= 100 && 100 <= b[1].get<double>();
    covered_requests += r[0].get<double>() <= 100 && 100 <= r[1].get<double>();
    width_blocks += b[1].get<double>() - b[0].get<double>();
    width_requests += r[1].get<double>() - r[0].get<double>();
    if (t == 0) {
      EXPECT_EQ(blocks["blocks"], 30);
      EXPECT_NE(blocks["method"].get<std::string>().find("30 blocks of requests contiguous in start time"),
                std::string::npos);
      EXPECT_EQ(blocks["units"], 600);  // small_sample still counts requests
      EXPECT_TRUE(requests["blocks"].is_null());
    }
  }
  EXPECT_GT(width_blocks, 2.0 * width_requests);
  EXPECT_GE(covered_blocks, static_cast<int>(0.85 * trials)) << covered_blocks;
  EXPECT_LT(covered_requests, static_cast<int>(0.75 * trials)) << covered_requests;
}
