#include "load/arrival_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

using namespace agentperf;

TEST(ArrivalSchedule, ConstantRateInterleavesWorkers) {
  std::vector<std::int64_t> all;
  for (int w = 0; w < 3; ++w) {
    ArrivalSchedule s(ArrivalPattern::constant, 100.0, w, 3, 1);
    for (int k = 0; k < 4; ++k) all.push_back(s.next_offset_ns());
  }
  std::sort(all.begin(), all.end());
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], static_cast<std::int64_t>(i) * 10'000'000);
}

TEST(ArrivalSchedule, PoissonHasTheRequestedRateAndExponentialGaps) {
  ArrivalSchedule s(ArrivalPattern::poisson, 200.0, 0, 1, 42);
  const int n = 20000;
  std::vector<double> gaps;
  // The first request goes at the start (as vLLM's and AIPerf's schedulers
  // send it); the gaps after it are exponential.
  std::int64_t prev = s.next_offset_ns();
  ASSERT_EQ(prev, 0);
  for (int i = 0; i < n; ++i) {
    const auto t = s.next_offset_ns();
    ASSERT_GT(t, prev);
    gaps.push_back(static_cast<double>(t - prev) / 1e9);
    prev = t;
  }
  double mean = 0;
  for (double g : gaps) mean += g;
  mean /= n;
  EXPECT_NEAR(mean, 1.0 / 200, 0.0001);
  // Exponential: the coefficient of variation is 1.
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  EXPECT_NEAR(std::sqrt(var / n) / mean, 1.0, 0.03);
}

TEST(ArrivalSchedule, SuperposedWorkersKeepTheTotalRate) {
  std::int64_t count = 0;
  for (int w = 0; w < 4; ++w) {
    ArrivalSchedule s(ArrivalPattern::poisson, 400.0, w, 4, 9);
    while (s.next_offset_ns() < 10'000'000'000) ++count;
  }
  EXPECT_NEAR(static_cast<double>(count), 4000.0, 200.0);  // ~3 sigma of sqrt(4000)
}
