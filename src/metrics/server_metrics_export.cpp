#include "metrics/server_metrics_export.h"

#include "metrics/export.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>
#include <sstream>

#include "common/version.h"
#include "metrics/prometheus_text.h"
#include "metrics/stats.h"

namespace agentperf {
namespace {

using ojson = nlohmann::ordered_json;

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// AIPerf's normalize_endpoint_display: the URL without its scheme and /metrics.
std::string endpoint_display(std::string u) {
  if (auto p = u.find("://"); p != std::string::npos) u = u.substr(p + 3);
  if (ends_with(u, "/metrics")) u.resize(u.size() - 8);
  return u;
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string fmt(const ojson& v) {
  if (v.is_null()) return "";
  if (v.is_number_integer() || v.is_number_unsigned()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4f", v.get<double>());
    return buf;
  }
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// Index of the window's first (baseline) and last point of a cumulative series.
std::pair<std::size_t, std::size_t> window_bounds(const std::vector<std::pair<std::int64_t, double>>& pts,
                                                  std::int64_t start, std::int64_t end) {
  std::size_t lo = 0, hi = pts.size() - 1;
  if (start > 0)
    for (std::size_t i = 0; i < pts.size() && pts[i].first <= start; ++i) lo = i;
  if (end > 0) {
    hi = pts.size() - 1;
    for (std::size_t i = 0; i < pts.size(); ++i)
      if (pts[i].first >= end) {
        hi = i;
        break;
      }
  }
  return {lo, std::max(lo, hi)};
}

// Increase over [lo, hi], a drop counted as a restart from 0.
double increase(const std::vector<std::pair<std::int64_t, double>>& pts, std::size_t lo, std::size_t hi) {
  double total = 0;
  for (std::size_t i = lo + 1; i <= hi; ++i) {
    const double d = pts[i].second - pts[i - 1].second;
    total += d >= 0 ? d : pts[i].second;
  }
  return total;
}

using Points = std::vector<std::pair<std::int64_t, double>>;

// The value of the last scrape at or before t (the first scrape when none
// is that early: the series' reference).
double value_at(const Points& pts, std::int64_t t) {
  auto it = std::upper_bound(pts.begin(), pts.end(), t, [](std::int64_t x, const auto& p) { return x < p.first; });
  return it == pts.begin() ? pts.front().second : std::prev(it)->second;
}

struct Slice {
  std::int64_t start, end;
  bool complete;
};

// _compute_timeslice_boundaries: [from, to) in steps of d, the last one cut at `to`.
std::vector<Slice> slice_grid(std::int64_t from, std::int64_t to, std::int64_t d) {
  std::vector<Slice> out;
  for (std::int64_t s = from; s < to; s += d) out.push_back({s, std::min(s + d, to), s + d <= to});
  return out;
}

ojson slice_head(const Slice& s) {
  ojson j = {{"start_ns", s.start}, {"end_ns", s.end}};
  if (!s.complete) j["is_complete"] = false;
  return j;
}

// The scrapes are in time order and the slices too: one pass over both
// (an hour at 333 ms scrapes and 1 s slices would otherwise be 10^7 steps
// per series).
ojson gauge_slices(const Points& pts, const std::vector<Slice>& grid, std::int64_t last_scrape) {
  ojson out = ojson::array();
  std::size_t first = 0;
  for (const auto& sl : grid) {
    double sum = 0, lo = 0, hi = 0;
    std::size_t n = 0;
    while (first < pts.size() && pts[first].first < sl.start) ++first;
    for (std::size_t k = first; k < pts.size() && pts[k].first <= sl.end; ++k) {
      const auto& [t, v] = pts[k];
      // [start, end), the range's last slice also closed on the right.
      const bool in = t < sl.end || (!sl.complete && t == sl.end && t == last_scrape);
      if (!in) continue;
      lo = n ? std::min(lo, v) : v;
      hi = n ? std::max(hi, v) : v;
      sum += v;
      ++n;
    }
    if (n == 0) continue;
    ojson j = slice_head(sl);
    j["avg"] = sum / static_cast<double>(n);
    j["min"] = lo;
    j["max"] = hi;
    out.push_back(std::move(j));
  }
  return out;
}

// Counter slices, and the rate statistics over the complete ones.
ojson counter_slices(const Points& pts, const std::vector<Slice>& grid, ojson& stats) {
  ojson out = ojson::array();
  std::vector<double> rates;
  for (const auto& sl : grid) {
    const double total = std::max(0.0, value_at(pts, sl.end) - value_at(pts, sl.start));
    const double secs = static_cast<double>(sl.end - sl.start) / 1e9;
    const double rate = secs > 0 ? total / secs : 0.0;
    if (sl.complete) rates.push_back(rate);
    ojson j = slice_head(sl);
    j["total"] = total;
    j["rate"] = rate;
    out.push_back(std::move(j));
  }
  if (!rates.empty()) {
    const Summary s = summarize(rates);
    stats["rate_avg"] = s.avg;
    stats["rate_min"] = s.min;
    stats["rate_max"] = s.max;
    stats["rate_std"] = s.std;
  }
  return out;
}

ojson histogram_slices(const Points* count, const Points* sum, const std::vector<Slice>& grid) {
  ojson out = ojson::array();
  if (!count) return out;
  for (const auto& sl : grid) {
    const double c = value_at(*count, sl.end) - value_at(*count, sl.start);
    const double s = sum ? value_at(*sum, sl.end) - value_at(*sum, sl.start) : 0.0;
    if (c < 0 || s < 0) continue;  // a counter reset inside the slice
    ojson j = slice_head(sl);
    j["count"] = static_cast<std::int64_t>(std::llround(c));
    j["sum"] = s;
    j["avg"] = c > 0 ? s / c : 0.0;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

ServerMetricsLog::ServerMetricsLog(std::string endpoint_url) : url_(std::move(endpoint_url)) {}

void ServerMetricsLog::add_scrape(std::int64_t t_ns, std::string_view text) {
  times_.push_back(t_ns);
  // # TYPE / # HELP lines name the families.
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t e = text.find('\n', pos);
    if (e == std::string_view::npos) e = text.size();
    std::string_view line = text.substr(pos, e - pos);
    pos = e + 1;
    const bool type = line.rfind("# TYPE ", 0) == 0, help = line.rfind("# HELP ", 0) == 0;
    if (!type && !help) continue;
    line.remove_prefix(7);
    const auto sp = line.find(' ');
    if (sp == std::string_view::npos) continue;
    std::string name(line.substr(0, sp)), rest(line.substr(sp + 1));
    while (!rest.empty() && (rest.back() == '\r' || rest.back() == ' ')) rest.pop_back();
    if (type) families_[name].type = rest == "untyped" || rest == "unknown" ? std::string("gauge") : rest;
    else families_[name].help = rest;
    // A counter declared as `x_total` is family `x`, as prometheus_client's
    // parser (build_metric) names it and InferenceX looks it up.
    if (ends_with(name, "_total") && families_[name].type == "counter") {
      Family& base = families_[name.substr(0, name.size() - 6)];
      base.type = "counter";
      if (base.help.empty()) base.help = families_[name].help;
    }
  }
  for (auto& s : parse_prometheus_text(text)) {
    std::string family = s.name, part;
    auto base_of = [&](std::string_view suffix) { return s.name.substr(0, s.name.size() - suffix.size()); };
    auto typed = [&](const std::string& n, std::initializer_list<const char*> types) {
      auto it = families_.find(n);
      if (it == families_.end()) return false;
      for (const char* t : types)
        if (it->second.type == t) return true;
      return false;
    };
    if (ends_with(s.name, "_total") && typed(base_of("_total"), {"counter"})) {
      family = base_of("_total");
    } else if (typed(s.name, {"gauge", "counter"})) {
      // the family itself
    } else if (typed(s.name, {"histogram", "summary"})) {
      continue;  // a summary's quantile samples
    } else if (ends_with(s.name, "_created") && families_.count(base_of("_created"))) {
      continue;
    } else if (ends_with(s.name, "_count") && typed(base_of("_count"), {"histogram", "summary"})) {
      family = base_of("_count");
      part = "count";
    } else if (ends_with(s.name, "_sum") && typed(base_of("_sum"), {"histogram", "summary"})) {
      family = base_of("_sum");
      part = "sum";
    }
    if (!std::isfinite(s.value)) continue;
    std::string key = family + '\x1f' + part;
    for (const auto& [k, v] : s.labels) key += '\x1f' + k + '=' + v;
    auto [it, fresh] = index_.try_emplace(key, series_.size());
    if (fresh) series_.push_back(Series{family, part, std::move(s.labels), {}});
    series_[it->second].points.emplace_back(t_ns, s.value);
  }
}

ojson ServerMetricsLog::export_json(std::int64_t start, std::int64_t end, const std::string& benchmark_id,
                                    std::int64_t slice_ns) const {
  ojson j;
  j["schema_version"] = "1.0";
  j["aiperf_version"] = std::string("agentperf ") + std::string(version());
  j["benchmark_id"] = benchmark_id.empty() ? ojson(nullptr) : ojson(benchmark_id);
  std::int64_t first = 0, last = 0;
  for (auto t : times_)
    if ((start == 0 || t >= start) && (end == 0 || t <= end)) {
      if (first == 0) first = t;
      last = t;
    }
  ojson info = {{"total_fetches", times_.size() + failures_},
                {"first_fetch_ns", times_.empty() ? ojson(nullptr) : ojson(times_.front())},
                {"last_fetch_ns", times_.empty() ? ojson(nullptr) : ojson(times_.back())},
                {"unique_updates", times_.size()},
                {"first_update_ns", times_.empty() ? ojson(nullptr) : ojson(times_.front())},
                {"last_update_ns", times_.empty() ? ojson(nullptr) : ojson(times_.back())},
                {"duration_seconds", times_.size() >= 2 ? static_cast<double>(times_.back() - times_.front()) / 1e9 : 0.0}};
  j["summary"] = {{"endpoints_configured", ojson::array({url_})},
                  {"endpoints_successful", times_.empty() ? ojson::array() : ojson::array({url_})},
                  {"start_time", first ? ojson(iso_local(first)) : ojson(nullptr)},
                  {"end_time", last ? ojson(iso_local(last)) : ojson(nullptr)},
                  {"endpoint_info", {{url_, info}}}};
  // The slices run from the profiling start to the later of its end and
  // the last scrape (the final scrape after the run).
  std::vector<Slice> grid;
  const std::int64_t last_scrape = times_.empty() ? 0 : times_.back();
  if (slice_ns > 0 && !times_.empty()) {
    const std::int64_t from = start > 0 ? start : times_.front();
    grid = slice_grid(from, std::max(end > 0 ? end : last_scrape, last_scrape), slice_ns);
  }
  ojson metrics = ojson::object();
  // Histogram parts pair up by family + labels.
  std::map<std::pair<std::string, std::map<std::string, std::string>>, std::pair<const Series*, const Series*>> hist;
  std::vector<std::pair<std::string, const Series*>> plain;
  for (const auto& s : series_) {
    if (s.points.empty()) continue;
    if (s.part.empty()) plain.emplace_back(s.family, &s);
    else if (s.part == "count") hist[{s.family, s.labels}].first = &s;
    else hist[{s.family, s.labels}].second = &s;
  }
  auto entry = [&](const std::string& family, const std::string& type) -> ojson& {
    if (!metrics.contains(family)) {
      auto f = families_.find(family);
      metrics[family] = {{"type", type},
                         {"description", f != families_.end() ? f->second.help : std::string()},
                         {"unit", nullptr},
                         {"series", ojson::array()}};
    }
    return metrics[family]["series"];
  };
  auto labels_json = [](const std::map<std::string, std::string>& l) {
    return l.empty() ? ojson(nullptr) : ojson(l);
  };
  std::sort(plain.begin(), plain.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second->labels) < std::tie(b.first, b.second->labels);
  });
  for (const auto& [family, s] : plain) {
    auto f = families_.find(family);
    const std::string type = f != families_.end() ? f->second.type : "gauge";
    ojson stats, slices;
    if (type == "counter") {
      auto [lo, hi] = window_bounds(s->points, start, end);
      const double total = increase(s->points, lo, hi);
      const double secs = static_cast<double>(s->points[hi].first - s->points[lo].first) / 1e9;
      stats = {{"total", total}, {"rate", secs > 0 ? total / secs : 0.0}};
      if (!grid.empty()) slices = counter_slices(s->points, grid, stats);
    } else {
      std::vector<double> v;
      for (const auto& [t, x] : s->points)
        if ((start == 0 || t >= start) && (end == 0 || t <= end)) v.push_back(x);
      if (v.empty()) {
        auto [lo, hi] = window_bounds(s->points, start, end);
        v.push_back(s->points[lo].second);
        (void)hi;
      }
      Summary sm = summarize(v);
      stats = {{"avg", sm.avg}, {"min", sm.min}, {"max", sm.max}, {"std", sm.std}};
      for (std::size_t i = 0; i < kPercentiles.size(); ++i) stats["p" + std::to_string(kPercentiles[i])] = sm.p[i];
      if (!grid.empty()) slices = gauge_slices(s->points, grid, last_scrape);
    }
    ojson series = {{"endpoint_url", url_}, {"labels", labels_json(s->labels)}, {"stats", std::move(stats)}};
    if (!grid.empty()) series["timeslices"] = std::move(slices);
    entry(family, type == "counter" ? "counter" : "gauge").push_back(std::move(series));
  }
  for (const auto& [key, parts] : hist) {
    auto f = families_.find(key.first);
    const std::string type = f != families_.end() ? f->second.type : "histogram";
    double count = 0, sum = 0, secs = 0;
    if (parts.first) {
      auto [lo, hi] = window_bounds(parts.first->points, start, end);
      count = increase(parts.first->points, lo, hi);
      secs = static_cast<double>(parts.first->points[hi].first - parts.first->points[lo].first) / 1e9;
    }
    if (parts.second) {
      auto [lo, hi] = window_bounds(parts.second->points, start, end);
      sum = increase(parts.second->points, lo, hi);
    }
    ojson stats = {{"count", static_cast<std::int64_t>(std::llround(count))},
                   {"sum", sum},
                   {"avg", count > 0 ? ojson(sum / count) : ojson(nullptr)},
                   {"count_rate", secs > 0 ? count / secs : 0.0},
                   {"sum_rate", secs > 0 ? sum / secs : 0.0}};
    ojson series = {{"endpoint_url", url_}, {"labels", labels_json(key.second)}, {"stats", std::move(stats)}};
    if (!grid.empty())
      series["timeslices"] = histogram_slices(parts.first ? &parts.first->points : nullptr,
                                              parts.second ? &parts.second->points : nullptr, grid);
    entry(key.first, type).push_back(std::move(series));
  }
  j["metrics"] = std::move(metrics);
  return j;
}

std::string ServerMetricsLog::export_csv(std::int64_t start, std::int64_t end, const std::string& benchmark_id,
                                         std::int64_t slice_ns) const {
  const ojson j = export_json(start, end, benchmark_id, slice_ns);
  std::ostringstream out;
  out << "# AIPerf Server Metrics Export (CSV)\n"
      << "# aiperf_version: " << j["aiperf_version"].get<std::string>() << "\n"
      << "# schema_version: 1.0\n"
      << "# benchmark_id: " << (benchmark_id.empty() ? "None" : benchmark_id) << "\n"
      << "# Note: Same benchmark_id and version appear in JSON and Parquet exports\n"
      << "#\n";
  const std::vector<std::pair<std::string, std::vector<std::string>>> sections = {
      {"gauge", {"avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99"}},
      {"counter", {"total", "rate", "rate_avg", "rate_min", "rate_max", "rate_std"}},
      {"histogram", {"count", "count_rate", "sum", "sum_rate", "avg", "p1_estimate", "p5_estimate", "p10_estimate",
                     "p25_estimate", "p50_estimate", "p75_estimate", "p90_estimate", "p95_estimate", "p99_estimate"}}};
  bool first_section = true;
  const std::string endpoint = endpoint_display(url_);
  for (const auto& [type, keys] : sections) {
    struct Row {
      std::string metric, labels_key;
      const ojson* series;
      std::string description;
    };
    std::vector<Row> rows;
    std::set<std::string> label_keys;
    for (const auto& [name, m] : j["metrics"].items()) {
      const std::string t = m["type"].get<std::string>();
      if (!(t == type || (type == "histogram" && t == "summary"))) continue;
      for (const auto& s : m["series"]) {
        std::string lk;
        if (s["labels"].is_object())
          for (const auto& [k, v] : s["labels"].items()) {
            label_keys.insert(k);
            lk += k + "=" + v.get<std::string>() + ";";
          }
        rows.push_back({name, lk, &s, m["description"].get<std::string>()});
      }
    }
    if (rows.empty()) continue;
    std::sort(rows.begin(), rows.end(),
              [](const Row& a, const Row& b) { return std::tie(a.metric, a.labels_key) < std::tie(b.metric, b.labels_key); });
    if (!first_section) out << "\n";
    first_section = false;
    out << "Endpoint,Type,Metric,Unit";
    for (const auto& k : keys) out << "," << k;
    for (const auto& k : label_keys) out << "," << csv_cell(k);
    out << ",Description\n";
    for (const auto& r : rows) {
      out << csv_cell(endpoint) << "," << type << "," << csv_cell(r.metric) << ",";
      const auto& st = (*r.series)["stats"];
      for (const auto& k : keys) out << "," << (st.contains(k) ? fmt(st[k]) : std::string());
      for (const auto& k : label_keys) {
        const auto& l = (*r.series)["labels"];
        out << "," << (l.is_object() && l.contains(k) ? csv_cell(l[k].get<std::string>()) : std::string());
      }
      out << "," << csv_cell(r.description) << "\n";
    }
  }
  return out.str();
}

}  // namespace agentperf
