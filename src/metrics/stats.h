// Distribution statistics with AIPerf's conventions: percentiles by linear
// interpolation between closest ranks (numpy's default "linear" method),
// std as the population standard deviation (np.std).
#pragma once
#include <array>
#include <cstddef>
#include <vector>

namespace agentperf {

inline constexpr std::array<int, 9> kPercentiles = {1, 5, 10, 25, 50, 75, 90, 95, 99};

struct Summary {
  std::size_t count = 0;
  double sum = 0, avg = 0, min = 0, max = 0, std = 0;
  std::array<double, kPercentiles.size()> p{};  // in kPercentiles order
  double percentile(int q) const;               // one of kPercentiles
};

// Percentile q in [0, 100] of already sorted values (linear interpolation).
double percentile_sorted(const std::vector<double>& sorted, double q);

// Sorts `values` in place.
Summary summarize(std::vector<double>& values);

}  // namespace agentperf
