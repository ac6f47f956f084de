#include "sweep/capacity_search.h"

#include <gtest/gtest.h>

#include <set>

#include "common/error.h"
#include "metrics/slo.h"

using namespace agentperf;
using namespace agentperf::sweep;

namespace {
// A server whose SLO edge is `edge`: every c <= edge meets.
struct Edge {
  int edge;
  std::vector<int> calls;
  std::optional<CapacityPoint> operator()(int c) {
    calls.push_back(c);
    CapacityPoint p;
    p.met = c <= edge;
    if (!p.met) p.limiting = "ttft_p90<=2s";
    return p;
  }
};
}  // namespace

// With the simulator's edge close to the true one, a handful of points find
// the exact edge; each concurrency is measured at most once.
TEST(CapacitySearch, FromAGoodPredictionFewPointsFindTheExactEdge) {
  for (int truth : {1, 7, 20, 37, 100}) {
    for (int guess : {truth, std::max(1, truth - 3), truth + 4}) {
      Edge server{truth, {}};
      CapacityOptions o;
      o.max_concurrency = 256;
      o.resolution = 0;
      o.predicted_edge = guess;
      auto r = search_capacity(o, [&](int c) { return server(c); });
      EXPECT_EQ(r.capacity, truth) << "guess " << guess;
      ASSERT_TRUE(r.lowest_missing);
      EXPECT_EQ(*r.lowest_missing, truth + 1);
      EXPECT_EQ(r.limiting, "ttft_p90<=2s");
      EXPECT_EQ(std::set<int>(server.calls.begin(), server.calls.end()).size(), server.calls.size());
      // A dense sweep 1..truth+1 measures truth + 1 points; at most half
      // of that once the edge is past a handful.
      EXPECT_LE(server.calls.size(), std::max<std::size_t>(5, (truth + 1) / 2)) << "truth " << truth << " guess " << guess;
    }
  }
}

// Without a prediction the search doubles from 1 and then bisects; a
// resolution stops it early; the top and the bottom are reported as such.
TEST(CapacitySearch, DoublingResolutionAndBounds) {
  Edge server{45, {}};
  CapacityOptions o;
  o.max_concurrency = 256;
  o.resolution = 0;
  auto exact = search_capacity(o, [&](int c) { return server(c); });
  EXPECT_EQ(exact.capacity, 45);
  EXPECT_EQ(server.calls.front(), 1);
  const auto exact_points = server.calls.size();
  Edge coarse{45, {}};
  o.resolution = 0.1;
  auto r = search_capacity(o, [&](int c) { return coarse(c); });
  EXPECT_LE(r.capacity, 45);
  EXPECT_GE(r.capacity, 41);  // within 10 % below the edge
  EXPECT_LE(*r.lowest_missing - r.capacity, std::max(1, r.capacity / 10));
  EXPECT_LT(coarse.calls.size(), exact_points);

  Edge always{1000, {}};
  o.max_concurrency = 64;
  o.predicted_edge = 64;
  auto top = search_capacity(o, [&](int c) { return always(c); });
  EXPECT_EQ(top.capacity, 64);
  EXPECT_TRUE(top.at_max);
  EXPECT_FALSE(top.lowest_missing);

  Edge never{0, {}};
  o.predicted_edge = 8;
  auto none = search_capacity(o, [&](int c) { return never(c); });
  EXPECT_EQ(none.capacity, 0);
  EXPECT_EQ(*none.lowest_missing, 1);
}

TEST(CapacitySearch, AStoppedMeasurementEndsTheSearchWithWhatItHas) {
  int n = 0;
  CapacityOptions o;
  o.predicted_edge = 10;
  auto r = search_capacity(o, [&](int c) -> std::optional<CapacityPoint> {
    if (++n > 2) return std::nullopt;
    CapacityPoint p;
    p.met = c <= 12;
    return p;
  });
  EXPECT_EQ(r.measured.size(), 2u);
  // 10 met, 13 (x1.25) missed; the third measurement stopped the search.
  EXPECT_EQ(r.capacity, 10);
  EXPECT_EQ(*r.lowest_missing, 13);
}

TEST(CapacitySearch, PredictedEdgeIsTheLargestMeetingConcurrency) {
  for (int truth : {0, 1, 2, 3, 17, 64, 100}) {
    std::set<int> asked;
    const int e = predicted_edge(100, [&](int c) {
      asked.insert(c);
      return c <= truth;
    });
    EXPECT_EQ(e, std::min(truth, 100)) << truth;
    EXPECT_LE(asked.size(), 16u);
  }
}

TEST(Slo, ParsesUnitsAndRefusesWhatItCannotMean) {
  auto s = parse_slo("ttft_p90<=2s");
  EXPECT_EQ(s.quantity, "ttft");
  EXPECT_EQ(s.percentile, 90);
  EXPECT_TRUE(s.at_most);
  EXPECT_DOUBLE_EQ(s.threshold, 2000);
  EXPECT_DOUBLE_EQ(parse_slo("itl_p99<=50ms").threshold, 50);
  EXPECT_DOUBLE_EQ(parse_slo("latency_avg<=1500").threshold, 1500);
  auto i = parse_slo("interactivity_p90>=40");
  EXPECT_FALSE(i.at_most);
  for (const char* bad : {"ttft_p90>=2s", "interactivity_p90<=40", "ttft_p42<=1s", "speed_p90<=1", "ttft<=1s",
                          "e2e_interactivity_p50>=10", "interactivity_p90>=40ms", "ttft_p90<=0"}) {
    try {
      parse_slo(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--slo '") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

// An aggregate meets an SLO on the right side of its value; interactivity
// is 1000 / the ITL percentile; an interval across the threshold is
// uncertain; the first missed SLO limits.
TEST(Slo, JudgesAnAggregate) {
  nlohmann::json agg = {
      {"time_to_first_token", {{"p90", 1800.0}}},
      {"inter_token_latency", {{"p90", 25.0}}},
      {"e2e_normalized_interactivity_p90", {{"avg", 30.0}}},
      {"confidence_intervals", {{"metrics", {{"time_to_first_token", {{"p90", {1500.0, 2100.0}}}}}}}}};
  auto v = judge_slos(parse_slos({"ttft_p90<=2s", "interactivity_p90>=40", "e2e_interactivity_p90>=50"}), agg);
  EXPECT_FALSE(v.met);
  EXPECT_TRUE(v.uncertain);
  EXPECT_EQ(v.limiting, "e2e_interactivity_p90>=50");
  EXPECT_DOUBLE_EQ(v.detail[1]["value"].get<double>(), 40.0);  // 1000 / 25 ms: exactly on the line, met
  EXPECT_TRUE(v.detail[1]["met"].get<bool>());
  EXPECT_FALSE(v.detail[2]["met"].get<bool>());

}
