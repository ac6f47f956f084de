#include "sweep/capacity_search.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace agentperf::sweep {

CapacityResult search_capacity(const CapacityOptions& opts,
                               const std::function<std::optional<CapacityPoint>(int)>& measure) {
  CapacityResult res;
  const int top = std::max(1, opts.max_concurrency);
  std::map<int, CapacityPoint> seen;
  int best = 0;          // highest meeting
  int worst = top + 1;   // lowest missing
  bool stopped = false;
  auto run = [&](int c) -> bool {
    if (stopped) return false;
    if (seen.count(c)) return true;
    auto p = measure(c);
    if (!p) {
      stopped = true;
      return false;
    }
    p->concurrency = c;
    seen[c] = *p;
    res.measured.push_back(*p);
    if (p->met) best = std::max(best, c);
    else worst = std::min(worst, c);
    return true;
  };

  // The three steps; a stopped measurement ends them early.
  [&] {
    const int start = std::clamp(opts.predicted_edge.value_or(1), 1, top);
    if (!run(start)) return;
    if (seen[start].met) {
      // Up until a point misses or the top is met.
      double step = opts.first_step;
      int c = start;
      while (worst > top && c < top) {
        c = std::min(top, std::max(c + 1, static_cast<int>(std::ceil(c * step))));
        if (!run(c)) return;
        step = 2;
      }
    } else {
      // Down until a point meets or 1 misses.
      double step = opts.first_step;
      int c = start;
      while (best == 0 && c > 1) {
        c = std::max(1, std::min(c - 1, static_cast<int>(std::floor(c / step))));
        if (!run(c)) return;
        step = 2;
      }
    }
    // Bisect [best, worst].
    while (best >= 1 && worst <= top) {
      const int gap_allowed = std::max(1, static_cast<int>(std::floor(opts.resolution * best)));
      if (worst - best <= gap_allowed) break;
      if (!run(best + (worst - best) / 2)) break;
    }
  }();
  res.capacity = best;
  res.at_max = best == top;
  if (worst <= top) {
    res.lowest_missing = worst;
    res.limiting = seen[worst].limiting;
  }
  return res;
}

int predicted_edge(int max_concurrency, const std::function<bool(int)>& meets) {
  const int top = std::max(1, max_concurrency);
  if (!meets(1)) return 0;
  int lo = 1, hi = 2;
  while (hi <= top && meets(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > top) {
    if (lo == top || meets(top)) return top;
    hi = top;
  }
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (meets(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace agentperf::sweep
