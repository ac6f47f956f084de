#include "metrics/stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace agentperf {

double percentile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double rank = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = static_cast<std::size_t>(std::ceil(rank));
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

Summary summarize(std::vector<double>& values) {
  Summary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.min = values.front();
  s.max = values.back();
  for (double v : values) s.sum += v;
  s.avg = s.sum / static_cast<double>(s.count);
  double sq = 0;
  for (double v : values) sq += (v - s.avg) * (v - s.avg);
  s.std = std::sqrt(sq / static_cast<double>(s.count));
  for (std::size_t i = 0; i < kPercentiles.size(); ++i) s.p[i] = percentile_sorted(values, kPercentiles[i]);
  return s;
}

double Summary::percentile(int q) const {
  for (std::size_t i = 0; i < kPercentiles.size(); ++i)
    if (kPercentiles[i] == q) return p[i];
  throw std::invalid_argument("percentile p" + std::to_string(q) + " is not computed");
}

}  // namespace agentperf
