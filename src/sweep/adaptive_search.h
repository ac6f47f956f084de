// Adaptive concurrency search over one search-space row: find where
// throughput per GPU stops rising or latency jumps (the KV-cache cliff)
// with fewer points than the recipe's whole conc-list.
//
// 1. Coarse pass, ascending: every other conc of the list (the first and
//    the last always). After each point, the pair (previous, this) is a
//    limit of one of two kinds:
//    - the KV-cache cliff: the point failed, or the observed prefix-cache
//      hit rate fell by more than hit_drop (absolute), or TTFT p50 rose by
//      more than latency_jump x (queueing behind recomputed prefills);
//    - compute saturation: none of that, but throughput per GPU rose by
//      less than min_gain (relative): the engine is busy, the cache holds.
//    Either ends the ascent (past it, more lanes only cost interactivity);
//    they are reported apart because only the first is the cliff the
//    KV-offload points are there to move.
//    A change inside the points' 95 % intervals is no limit: the TTFT jump
//    must also clear the intervals (the higher point's lower bound above the
//    lower point's upper bound), and saturation is called only when even the
//    most favourable ends of the two throughput intervals gain less than
//    min_gain (a "flat" or "falling" pair whose intervals overlap could be
//    rising: the ascent goes on).
// 2. At the first cliff the coarse pass stops: higher conc values are pruned
//    (past the cliff they only lose interactivity for no throughput).
// 3. Refinement bisects the bracket [last good, first bad]: list values in
//    the gap first, then integer midpoints, until the bracket is no wider
//    than max(resolution, last good / 4) (resolution default: the smallest
//    step of the list). If the
//    bracket dissolves (the slope was smooth), the ascent resumes.
// Without a cliff every coarse point is measured and the skipped list
// values stay unmeasured (pruned): they lie on a smooth slope.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace agentperf::sweep {

struct PointMetrics {
  double tput_per_gpu = 0;  // total tokens/s per GPU
  double intvty_p50 = 0;    // tokens/s per user
  double ttft_p50_ms = 0;
  bool ok = true;           // a failed or short-circuited point counts as past the cliff
  std::optional<double> cache_hit;  // observed prefix-cache hit rate; unknown when the server reports none
  // 95 % intervals (metrics/confidence.h), when the point has them.
  std::optional<std::pair<double, double>> tput_interval, ttft_p50_interval;
};

struct SearchOptions {
  double min_gain = 0.05;
  double latency_jump = 3.0;
  double hit_drop = 0.05;  // absolute fall of the observed hit rate that marks the cache collapsing
  int resolution = 0;      // 0 = the smallest step of the conc-list
};

enum class LimitKind { none, cache_cliff, compute_saturation };
const char* limit_kind_name(LimitKind k) noexcept;  // "cache cliff", "compute saturation"

// Why a pair of neighbouring points is a limit (kind none: it is not).
struct LimitVerdict {
  LimitKind kind = LimitKind::none;
  std::string why;  // "hit rate 88% -> 71%", "TTFT p50 x4.2", "throughput +2.1%", "the point failed"
};
LimitVerdict classify_limit(const PointMetrics& lo, const PointMetrics& hi, const SearchOptions& opts);

class AdaptiveSearch {
 public:
  AdaptiveSearch(std::vector<int> conc_list, SearchOptions opts);
  // The next conc to measure, or nullopt when the search is done.
  std::optional<int> next();
  void report(int conc, const PointMetrics& m);
  // (last good, first bad) once a limit is bracketed, and what kind it is.
  std::optional<std::pair<int, int>> cliff() const;
  const LimitVerdict& limit() const { return limit_; }
  // List values the search decided not to measure.
  std::vector<int> pruned() const;
  bool in_list(int conc) const { return list_.count(conc) > 0; }

 private:
  bool is_cliff(const PointMetrics& lo, const PointMetrics& hi) const;
  void update_bracket();
  std::set<int> list_;
  std::vector<int> coarse_;
  std::size_t coarse_next_ = 0;
  SearchOptions opts_;
  std::vector<std::pair<int, PointMetrics>> measured_;  // sorted by conc
  std::optional<std::pair<int, int>> bracket_;
  LimitVerdict limit_;
};

// Indices of the points on the Pareto frontier of (x, y), both larger-is-better.
std::vector<std::size_t> pareto_frontier(const std::vector<std::pair<double, double>>& points);

}  // namespace agentperf::sweep
