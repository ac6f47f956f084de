#include "metrics/stats.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace agentperf;

// Expected values worked by hand with numpy's linear method:
// rank = q/100 * (n-1), value = a[floor] + frac * (a[ceil] - a[floor]).
TEST(Stats, PercentilesMatchNumpyLinear) {
  std::vector<double> v = {10, 1, 4, 2, 3};
  Summary s = summarize(v);
  EXPECT_DOUBLE_EQ(s.percentile(1), 1.04);
  EXPECT_DOUBLE_EQ(s.percentile(5), 1.2);
  EXPECT_DOUBLE_EQ(s.percentile(10), 1.4);
  EXPECT_DOUBLE_EQ(s.percentile(25), 2.0);
  EXPECT_DOUBLE_EQ(s.percentile(50), 3.0);
  EXPECT_DOUBLE_EQ(s.percentile(75), 4.0);
  EXPECT_NEAR(s.percentile(90), 7.6, 1e-12);
  EXPECT_NEAR(s.percentile(95), 8.8, 1e-12);
  EXPECT_NEAR(s.percentile(99), 9.76, 1e-12);
  EXPECT_DOUBLE_EQ(s.avg, 4.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 10.0);
  EXPECT_DOUBLE_EQ(s.sum, 20.0);
  EXPECT_NEAR(s.std, std::sqrt(10.0), 1e-12);  // population std, as np.std
  EXPECT_EQ(s.count, 5u);
}

TEST(Stats, SingleValueAndEmpty) {
  std::vector<double> one = {7};
  Summary s = summarize(one);
  EXPECT_DOUBLE_EQ(s.percentile(99), 7);
  EXPECT_DOUBLE_EQ(s.std, 0);
  std::vector<double> none;
  EXPECT_EQ(summarize(none).count, 0u);
}
