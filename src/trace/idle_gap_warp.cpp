#include "trace/idle_gap_warp.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace agentperf::trace {

IdleGapWarp::IdleGapWarp(std::vector<double> starts, double cap_s) : cap_s_(cap_s) {
  if (!(cap_s > 0) || !std::isfinite(cap_s) || starts.size() < 2) return;
  std::sort(starts.begin(), starts.end());
  double shift = 0;
  for (std::size_t i = 1; i < starts.size(); ++i) {
    const double gap = starts[i] - starts[i - 1];
    if (gap > cap_s) {  // strictly longer than the cap, as AIPerf's
      gaps_.push_back({starts[i - 1], starts[i], shift, gap - cap_s});
      shift += gap - cap_s;
    }
  }
  compressed_s_ = shift;
}

double IdleGapWarp::map(double t) const {
  // The last gap that starts at or before t (gaps are in time order).
  auto it = std::upper_bound(gaps_.begin(), gaps_.end(), t, [](double v, const Gap& g) { return v < g.raw_start; });
  if (it == gaps_.begin()) return t;
  const Gap& g = *std::prev(it);
  if (t >= g.raw_end) return t - (g.shift_before + g.excess);
  if (t - g.raw_start <= cap_s_) return t - g.shift_before;
  return g.raw_start - g.shift_before + cap_s_;  // the lost tail: the cap boundary
}

}  // namespace agentperf::trace
