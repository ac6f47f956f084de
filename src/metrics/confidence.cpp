#include "metrics/confidence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/rng.h"
#include "metrics/stats.h"

namespace agentperf {

namespace {

// The per-request metrics with intervals, and the statistics of each: the
// mean (-1) and percentiles, over one resample's values of the metric.
struct Metric {
  const char* tag;  // aggregate tag
  std::optional<double> CiObservation::*field;
};
constexpr Metric kMetrics[] = {
    {"time_to_first_token", &CiObservation::ttft_ms},
    {"inter_token_latency", &CiObservation::itl_ms},
    {"request_latency", &CiObservation::latency_ms},
};
struct Stat {
  const char* key;  // avg, p50, ...
  double p;         // percentile, or -1 for the mean
};
constexpr Stat kStats[] = {{"avg", -1}, {"p50", 50}, {"p90", 90}, {"p99", 99}};
constexpr std::size_t kMetricCount = sizeof kMetrics / sizeof kMetrics[0];
constexpr std::size_t kStatCount = sizeof kStats / sizeof kStats[0];

}  // namespace

nlohmann::json confidence_intervals(const std::vector<CiObservation>& obs, std::size_t units, const CiOptions& opts) {
  if (units < 2 || obs.empty()) return nullptr;
  // Requests grouped by unit, so that a draw of a unit brings all of its requests.
  std::vector<std::vector<std::size_t>> members(units);
  for (std::size_t i = 0; i < obs.size(); ++i)
    if (obs[i].unit < units) members[obs[i].unit].push_back(i);
  std::erase_if(members, [](const auto& m) { return m.empty(); });
  const std::size_t n = members.size();
  if (n < 2) return nullptr;
  // A synthetic load's requests in blocks contiguous in start time.
  std::size_t blocks = 0;
  if (!opts.trees && opts.time_blocks > 0 && n >= 2 * opts.time_blocks) {
    std::vector<std::size_t> order;
    for (const auto& m : members) order.insert(order.end(), m.begin(), m.end());
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return obs[a].start_ns < obs[b].start_ns; });
    blocks = opts.time_blocks;
    members.assign(blocks, {});
    for (std::size_t k = 0; k < order.size(); ++k) members[k * blocks / order.size()].push_back(order[k]);
  }
  const std::size_t draw_units = members.size();

  // draws[m * kStatCount + k]: metric m's statistic k over the resamples;
  // then the two token throughputs.
  constexpr std::size_t kThroughput = kMetricCount * kStatCount;
  std::vector<std::vector<double>> draws(kThroughput + 2);
  double run_mean_latency = 0;
  {
    double sum = 0, count = 0;
    for (const auto& o : obs)
      if (o.latency_ms) {
        sum += *o.latency_ms;
        count += 1;
      }
    if (count > 0) run_mean_latency = sum / count;
  }
  Rng rng(opts.seed ^ 0xC1C1C1C1ULL);
  std::vector<double> values;
  std::vector<std::size_t> picked;
  for (int b = 0; b < opts.resamples; ++b) {
    picked.clear();
    for (std::size_t k = 0; k < draw_units; ++k)
      picked.push_back(static_cast<std::size_t>(rng.next_u64() % draw_units));
    for (std::size_t m = 0; m < kMetricCount; ++m) {
      // One gather and one sort per metric serve its mean and percentiles.
      values.clear();
      for (std::size_t u : picked)
        for (std::size_t i : members[u])
          if (const auto& v = obs[i].*kMetrics[m].field) values.push_back(*v);
      if (values.empty()) continue;
      std::sort(values.begin(), values.end());
      double sum = 0;
      for (double v : values) sum += v;
      for (std::size_t k = 0; k < kStatCount; ++k)
        draws[m * kStatCount + k].push_back(kStats[k].p < 0 ? sum / static_cast<double>(values.size())
                                                            : percentile_sorted(values, kStats[k].p));
    }
    if (opts.duration_s > 0) {
      // Token throughput = the run's request rate x tokens per request. The
      // rate is set by the load (lanes or concurrency through the latency,
      // or the arrival rate) and measured over the whole run; the tokens
      // per request are the sample. Resampling whole sums over a fixed
      // duration instead would let the request count vary, which a closed
      // loop does not: intervals 50x the run-to-run spread.
      //
      // A closed loop at fixed concurrency sets its rate through the
      // latency (Little's law: rate = concurrency / mean latency), so there
      // the rate is a sample too: the resample's rate is the run's rate x
      // the run's mean latency / the resample's. Without it a load of fixed
      // prompt and output lengths got a zero-width throughput interval.
      double osl = 0, isl = 0, req = 0, lat = 0, lat_n = 0;
      for (std::size_t u : picked)
        for (std::size_t i : members[u]) {
          osl += obs[i].osl;
          isl += obs[i].isl;
          req += 1;
          if (obs[i].latency_ms) {
            lat += *obs[i].latency_ms;
            lat_n += 1;
          }
        }
      double rate = static_cast<double>(obs.size()) / opts.duration_s;
      if (opts.closed_loop && run_mean_latency > 0 && lat > 0) rate *= run_mean_latency / (lat / lat_n);
      draws[kThroughput + 0].push_back(rate * osl / req);
      draws[kThroughput + 1].push_back(rate * (isl + osl) / req);
    }
  }
  const double tail = 100 * (1 - opts.level) / 2;
  auto interval = [&](std::vector<double>& d) -> nlohmann::json {
    if (d.size() < 2) return nullptr;
    std::sort(d.begin(), d.end());
    const double lo = percentile_sorted(d, tail), hi = percentile_sorted(d, 100 - tail);
    return nlohmann::json::array({lo, hi});
  };
  nlohmann::json metrics = nlohmann::json::object();
  for (std::size_t m = 0; m < kMetricCount; ++m)
    for (std::size_t k = 0; k < kStatCount; ++k)
      if (auto iv = interval(draws[m * kStatCount + k]); !iv.is_null()) metrics[kMetrics[m].tag][kStats[k].key] = iv;
  if (opts.duration_s > 0) {
    metrics["output_token_throughput"] = interval(draws[kThroughput + 0]);
    metrics["total_token_throughput"] = interval(draws[kThroughput + 1]);
  }
  const std::size_t min_units = opts.min_units ? opts.min_units : opts.trees ? 10 : 30;
  nlohmann::json out = {
      {"level", opts.level},
      {"method", std::string("percentile bootstrap over ") +
                     (opts.trees ? "session trees (a tree's requests are resampled together)"
                      : blocks   ? std::to_string(blocks) + " blocks of requests contiguous in start time"
                                 : "requests") +
                     (opts.closed_loop ? "; throughput rate from the mean latency (closed loop)" : "")},
      {"resamples", opts.resamples},
      {"unit", opts.trees ? "session tree" : "request"},
      {"units", n},
      {"blocks", blocks ? nlohmann::json(blocks) : nlohmann::json(nullptr)},
      {"small_sample", n < min_units},
      {"min_units", min_units},
      {"metrics", metrics},
  };
  return out;
}

std::string confidence_summary(const nlohmann::json& section, const nlohmann::json& agg) {
  if (!section.is_object() || !section.contains("metrics")) return "";
  const auto& m = section["metrics"];
  std::string line;
  char buf[160];
  auto add = [&](const char* label, const nlohmann::json& iv, const char* unit, int digits) {
    if (!iv.is_array() || iv.size() != 2) return;
    std::snprintf(buf, sizeof buf, "%s%s [%.*f, %.*f]%s", line.empty() ? "" : ", ", label, digits, iv[0].get<double>(),
                  digits, iv[1].get<double>(), unit);
    line += buf;
  };
  auto at = [&](const char* metric, const char* key) -> nlohmann::json {
    return m.contains(metric) && m[metric].contains(key) ? m[metric][key] : nlohmann::json();
  };
  add("TTFT p50", at("time_to_first_token", "p50"), " ms", 2);
  add("TTFT p90", at("time_to_first_token", "p90"), " ms", 2);
  add("ITL avg", at("inter_token_latency", "avg"), " ms", 2);
  if (m.contains("output_token_throughput")) add("output tok/s", m["output_token_throughput"], "", 1);
  std::string out = "95 % CI (bootstrap over " + std::to_string(section["units"].get<std::size_t>()) + " " +
                    section["unit"].get<std::string>() + "s" +
                    (section.contains("blocks") && section["blocks"].is_number()
                         ? " in " + std::to_string(section["blocks"].get<std::size_t>()) + " time blocks"
                         : std::string()) +
                    "): " + line + "\n";
  std::vector<std::string> wide;
  if (section.contains("wide"))
    for (const auto& w : section["wide"]) wide.push_back(w.get<std::string>());
  if (section.value("small_sample", false))
    out += "Warning: small sample: " + std::to_string(section["units"].get<std::size_t>()) + " " +
           section["unit"].get<std::string>() + "s (fewer than " + std::to_string(section.value("min_units", 0)) +
           "); read the intervals, not the point values\n";
  if (!wide.empty()) {
    std::string w;
    for (const auto& x : wide) w += (w.empty() ? "" : ", ") + x;
    out += "Warning: intervals wider than 20 % of the value: " + w + "\n";
  }
  (void)agg;
  return out;
}

}  // namespace agentperf
