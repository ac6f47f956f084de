#include "metrics/confidence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/rng.h"

namespace agentperf {

namespace {

// numpy's default percentile (linear interpolation), as the aggregate's.
double percentile_of(std::vector<double>& v, double p) {
  if (v.empty()) return std::nan("");
  const double pos = (static_cast<double>(v.size()) - 1) * p / 100.0;
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
  const double a = v[lo];
  if (hi == lo) return a;
  const double b = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end());
  return a + (b - a) * (pos - static_cast<double>(lo));
}

struct Stat {
  const char* metric;  // aggregate tag
  const char* key;     // avg, p50, ...
  std::optional<double> CiObservation::*field;
  double p;  // percentile, or -1 for the mean
};

constexpr Stat kStats[] = {
    {"time_to_first_token", "avg", &CiObservation::ttft_ms, -1},
    {"time_to_first_token", "p50", &CiObservation::ttft_ms, 50},
    {"time_to_first_token", "p90", &CiObservation::ttft_ms, 90},
    {"time_to_first_token", "p99", &CiObservation::ttft_ms, 99},
    {"inter_token_latency", "avg", &CiObservation::itl_ms, -1},
    {"inter_token_latency", "p50", &CiObservation::itl_ms, 50},
    {"inter_token_latency", "p90", &CiObservation::itl_ms, 90},
    {"inter_token_latency", "p99", &CiObservation::itl_ms, 99},
    {"request_latency", "avg", &CiObservation::latency_ms, -1},
    {"request_latency", "p50", &CiObservation::latency_ms, 50},
    {"request_latency", "p90", &CiObservation::latency_ms, 90},
    {"request_latency", "p99", &CiObservation::latency_ms, 99},
};

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

  constexpr std::size_t kStatCount = sizeof kStats / sizeof kStats[0];
  std::vector<std::vector<double>> draws(kStatCount + 4);
  Rng rng(opts.seed ^ 0xC1C1C1C1ULL);
  std::vector<double> values;
  std::vector<std::size_t> picked;
  for (int b = 0; b < opts.resamples; ++b) {
    picked.clear();
    for (std::size_t k = 0; k < n; ++k) picked.push_back(static_cast<std::size_t>(rng.next_u64() % n));
    for (std::size_t s = 0; s < kStatCount; ++s) {
      values.clear();
      for (std::size_t u : picked)
        for (std::size_t i : members[u])
          if (const auto& v = obs[i].*kStats[s].field) values.push_back(*v);
      if (values.empty()) continue;
      double stat;
      if (kStats[s].p < 0) {
        double sum = 0;
        for (double v : values) sum += v;
        stat = sum / static_cast<double>(values.size());
      } else {
        stat = percentile_of(values, kStats[s].p);
      }
      draws[s].push_back(stat);
    }
    if (opts.duration_s > 0) {
      // Token throughput = the run's request rate x tokens per request. The
      // rate is set by the load (lanes or concurrency through the latency,
      // or the arrival rate) and measured over the whole run; the tokens
      // per request are the sample. Resampling whole sums over a fixed
      // duration instead would let the request count vary, which a closed
      // loop does not: intervals 50x the run-to-run spread.
      double osl = 0, isl = 0, req = 0;
      for (std::size_t u : picked)
        for (std::size_t i : members[u]) {
          osl += obs[i].osl;
          isl += obs[i].isl;
          req += 1;
        }
      const double rate = static_cast<double>(obs.size()) / opts.duration_s;
      draws[kStatCount + 0].push_back(rate * osl / req);
      draws[kStatCount + 1].push_back(rate * (isl + osl) / req);
    }
  }
  const double tail = 100 * (1 - opts.level) / 2;
  auto interval = [&](std::vector<double>& d) -> nlohmann::json {
    if (d.size() < 2) return nullptr;
    const double lo = percentile_of(d, tail), hi = percentile_of(d, 100 - tail);
    return nlohmann::json::array({lo, hi});
  };
  nlohmann::json metrics = nlohmann::json::object();
  for (std::size_t s = 0; s < kStatCount; ++s)
    if (auto iv = interval(draws[s]); !iv.is_null()) metrics[kStats[s].metric][kStats[s].key] = iv;
  if (opts.duration_s > 0) {
    metrics["output_token_throughput"] = interval(draws[kStatCount + 0]);
    metrics["total_token_throughput"] = interval(draws[kStatCount + 1]);
  }
  const std::size_t min_units = opts.min_units ? opts.min_units : opts.trees ? 10 : 30;
  nlohmann::json out = {
      {"level", opts.level},
      {"method", std::string("percentile bootstrap over ") +
                     (opts.trees ? "session trees (a tree's requests are resampled together)" : "requests")},
      {"resamples", opts.resamples},
      {"unit", opts.trees ? "session tree" : "request"},
      {"units", n},
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
                    section["unit"].get<std::string>() + "s): " + line + "\n";
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
