#include "sweep/adaptive_search.h"

#include <algorithm>
#include <cstdio>

namespace agentperf::sweep {

AdaptiveSearch::AdaptiveSearch(std::vector<int> conc_list, SearchOptions opts) : opts_(opts) {
  list_.insert(conc_list.begin(), conc_list.end());
  const std::vector<int> sorted(list_.begin(), list_.end());
  for (std::size_t i = 0; i < sorted.size(); i += 2) coarse_.push_back(sorted[i]);
  if (!sorted.empty() && coarse_.back() != sorted.back()) coarse_.push_back(sorted.back());
  if (opts_.resolution <= 0) {
    opts_.resolution = 1 << 30;
    for (std::size_t i = 1; i < sorted.size(); ++i) opts_.resolution = std::min(opts_.resolution, sorted[i] - sorted[i - 1]);
    if (sorted.size() < 2) opts_.resolution = 1;
  }
}

const char* limit_kind_name(LimitKind k) noexcept {
  switch (k) {
    case LimitKind::cache_cliff: return "cache cliff";
    case LimitKind::compute_saturation: return "compute saturation";
    case LimitKind::none: break;
  }
  return "none";
}

LimitVerdict classify_limit(const PointMetrics& lo, const PointMetrics& hi, const SearchOptions& opts) {
  char why[128];
  if (!hi.ok) return {LimitKind::cache_cliff, "the point failed"};
  if (!lo.ok) return {};
  if (lo.cache_hit && hi.cache_hit && *hi.cache_hit < *lo.cache_hit - opts.hit_drop) {
    std::snprintf(why, sizeof why, "observed hit rate %.0f%% -> %.0f%%", 100 * *lo.cache_hit, 100 * *hi.cache_hit);
    return {LimitKind::cache_cliff, why};
  }
  // Interactivity falls with concurrency anyway (about tput / conc); the
  // cliff's latency signature is TTFT exploding (queueing, recompute).
  const bool ttft_clear =
      !(lo.ttft_p50_interval && hi.ttft_p50_interval) || hi.ttft_p50_interval->first > lo.ttft_p50_interval->second;
  if (lo.ttft_p50_ms > 0 && hi.ttft_p50_ms > lo.ttft_p50_ms * opts.latency_jump && ttft_clear) {
    std::snprintf(why, sizeof why, "TTFT p50 x%.1f", hi.ttft_p50_ms / lo.ttft_p50_ms);
    return {LimitKind::cache_cliff, why};
  }
  // The most favourable gain the intervals allow: the higher point's upper
  // bound over the lower point's lower bound.
  const bool intervals = lo.tput_interval && hi.tput_interval;
  const double best_hi = intervals ? hi.tput_interval->second : hi.tput_per_gpu;
  const double worst_lo = intervals ? lo.tput_interval->first : lo.tput_per_gpu;
  if (hi.tput_per_gpu < lo.tput_per_gpu * (1.0 + opts.min_gain) && best_hi < worst_lo * (1.0 + opts.min_gain)) {
    std::snprintf(why, sizeof why, "throughput per GPU %+.1f%%%s",
                  lo.tput_per_gpu > 0 ? 100 * (hi.tput_per_gpu / lo.tput_per_gpu - 1) : 0.0,
                  intervals ? " (beyond the 95 % intervals)" : "");
    return {LimitKind::compute_saturation, why};
  }
  return {};
}

bool AdaptiveSearch::is_cliff(const PointMetrics& lo, const PointMetrics& hi) const {
  return classify_limit(lo, hi, opts_).kind != LimitKind::none;
}

void AdaptiveSearch::update_bracket() {
  bracket_.reset();
  limit_ = {};
  for (std::size_t i = 1; i < measured_.size(); ++i) {
    auto v = classify_limit(measured_[i - 1].second, measured_[i].second, opts_);
    if (v.kind != LimitKind::none) {
      bracket_ = std::make_pair(measured_[i - 1].first, measured_[i].first);
      limit_ = std::move(v);
      return;
    }
  }
}

void AdaptiveSearch::report(int conc, const PointMetrics& m) {
  auto it = std::lower_bound(measured_.begin(), measured_.end(), conc,
                             [](const std::pair<int, PointMetrics>& p, int c) { return p.first < c; });
  if (it != measured_.end() && it->first == conc) it->second = m;
  else measured_.insert(it, {conc, m});
  update_bracket();
  // The first measured point failing means nothing below it was measured: bracket from 0.
  if (!bracket_ && !measured_.empty() && !measured_.front().second.ok) {
    bracket_ = std::make_pair(0, measured_.front().first);
    limit_ = {LimitKind::cache_cliff, "the first point failed"};
  }
}

std::optional<int> AdaptiveSearch::next() {
  auto measured = [&](int c) {
    return std::any_of(measured_.begin(), measured_.end(), [&](const auto& p) { return p.first == c; });
  };
  // Ascend until a cliff is bracketed; refinement can dissolve a bracket
  // (the gap held a smooth slope), and then the ascent goes on.
  if (!bracket_) {
    while (coarse_next_ < coarse_.size() && measured(coarse_[coarse_next_])) ++coarse_next_;
    if (coarse_next_ < coarse_.size()) return coarse_[coarse_next_++];
    return std::nullopt;  // no cliff within the list: the coarse pass was the search
  }
  const auto [lo, hi] = *bracket_;
  // Narrow enough: within the resolution, or within a quarter of the conc
  // where it starts (a cliff's position is relative: 2 sessions matter at 8, not at 64).
  if (hi - lo <= std::max(opts_.resolution, lo / 4)) return std::nullopt;
  // List values inside the bracket first (nearest the middle), then the integer midpoint.
  const int mid = lo + (hi - lo) / 2;
  std::optional<int> best;
  for (int c : list_)
    if (c > lo && c < hi && !measured(c) && (!best || std::abs(c - mid) < std::abs(*best - mid))) best = c;
  if (best) return best;
  if (mid > lo && mid < hi && !measured(mid)) return mid;
  return std::nullopt;
}

std::optional<std::pair<int, int>> AdaptiveSearch::cliff() const { return bracket_; }

std::vector<int> AdaptiveSearch::pruned() const {
  std::vector<int> out;
  for (int c : list_)
    if (std::none_of(measured_.begin(), measured_.end(), [&](const auto& p) { return p.first == c; })) out.push_back(c);
  return out;
}

std::vector<std::size_t> pareto_frontier(const std::vector<std::pair<double, double>>& points) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    bool dominated = false;
    for (std::size_t j = 0; j < points.size() && !dominated; ++j) {
      if (i == j) continue;
      const bool ge = points[j].first >= points[i].first && points[j].second >= points[i].second;
      const bool gt = points[j].first > points[i].first || points[j].second > points[i].second;
      dominated = ge && gt;
    }
    if (!dominated) out.push_back(i);
  }
  std::sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) { return points[a].first < points[b].first; });
  return out;
}

}  // namespace agentperf::sweep
