#include "metrics/slo.h"

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "common/error.h"
#include "metrics/confidence.h"
#include "metrics/stats.h"

namespace agentperf {
namespace {

bool is_latency(const std::string& q) { return q == "ttft" || q == "itl" || q == "latency"; }

const char* aggregate_tag(const std::string& q) {
  if (q == "ttft") return "time_to_first_token";
  if (q == "itl" || q == "interactivity") return "inter_token_latency";
  return "request_latency";
}

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw UserError("--slo '" + text + "': " + why +
                  " (expected NAME_pNN<=VALUE or >=VALUE, e.g. ttft_p90<=2s, itl_p99<=50ms, interactivity_p90>=40, "
                  "e2e_interactivity_p90>=50; NAME one of ttft, itl, latency, interactivity, e2e_interactivity)");
}

std::string stat_key(int percentile) {
  if (percentile == 0) return "avg";
  std::string key = "p";
  key += std::to_string(percentile);
  return key;
}

}  // namespace

Slo parse_slo(const std::string& text) {
  static const std::regex re(R"(^\s*([a-z_0-9]+)_(p[0-9]+|avg)\s*(<=|>=)\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|s)?\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, re)) bad(text, "not an SLO");
  Slo slo;
  slo.text = text;
  slo.quantity = m[1];
  const std::string stat = m[2];
  slo.at_most = m[3] == "<=";
  slo.threshold = std::strtod(m[4].str().c_str(), nullptr);
  const std::string unit = m[5];
  const bool latency = is_latency(slo.quantity);
  if (!latency && slo.quantity != "interactivity" && slo.quantity != "e2e_interactivity")
    bad(text, "unknown name '" + slo.quantity + "'");
  if (stat == "avg") {
    if (!latency) bad(text, "avg is for ttft, itl and latency");
    slo.percentile = 0;
  } else {
    slo.percentile = std::atoi(stat.c_str() + 1);
    if (std::find(kPercentiles.begin(), kPercentiles.end(), slo.percentile) == kPercentiles.end())
      bad(text, "percentile " + stat + " is not one of p1, p5, p10, p25, p50, p75, p90, p95, p99");
    if (slo.quantity == "e2e_interactivity" && slo.percentile != 75 && slo.percentile != 90)
      bad(text, "e2e_interactivity has p75 and p90 (AIPerf's two aggregates)");
  }
  if (latency && !slo.at_most) bad(text, slo.quantity + " is a latency: use <=");
  if (!latency && slo.at_most) bad(text, slo.quantity + " is a speed: use >=");
  if (!unit.empty() && !latency) bad(text, slo.quantity + " is in tokens/s: no unit");
  if (unit == "s") slo.threshold *= 1000;
  if (!(slo.threshold > 0)) bad(text, "the value must be above 0");
  return slo;
}

std::vector<Slo> parse_slos(const std::vector<std::string>& texts) {
  std::vector<Slo> out;
  for (const auto& t : texts) out.push_back(parse_slo(t));
  return out;
}

std::optional<double> slo_value(const Slo& slo, const nlohmann::json& agg) {
  if (slo.quantity == "e2e_interactivity") {
    const std::string key = "e2e_normalized_interactivity_p" + std::to_string(slo.percentile);
    if (!agg.contains(key) || !agg[key].contains("avg")) return std::nullopt;
    return agg[key]["avg"].get<double>();
  }
  const char* tag = aggregate_tag(slo.quantity);
  const std::string key = stat_key(slo.percentile);
  if (!agg.contains(tag) || !agg[tag].contains(key)) return std::nullopt;
  const double v = agg[tag][key].get<double>();
  if (slo.quantity == "interactivity") return v > 0 ? std::optional<double>(1000.0 / v) : std::nullopt;
  return v;
}

bool slo_met(const Slo& slo, double value) { return slo.at_most ? value <= slo.threshold : value >= slo.threshold; }

SloVerdict judge_slos(const std::vector<Slo>& slos, const nlohmann::json& agg) {
  SloVerdict v;
  v.met = true;
  v.detail = nlohmann::ordered_json::array();
  for (const auto& slo : slos) {
    nlohmann::ordered_json d = {{"slo", slo.text}};
    const auto value = slo_value(slo, agg);
    const bool met = value && slo_met(slo, *value);
    d["value"] = value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
    d["met"] = met;
    // The interval of the statistic, where the aggregate has one (latency
    // statistics; interactivity is the inverted ITL interval).
    const auto iv = slo.quantity == "e2e_interactivity"
                        ? std::nullopt
                        : aggregate_interval(agg, aggregate_tag(slo.quantity), stat_key(slo.percentile));
    if (iv) {
      double lo = iv->first, hi = iv->second;
      if (slo.quantity == "interactivity") {
        const double a = hi > 0 ? 1000.0 / hi : 0.0, b = lo > 0 ? 1000.0 / lo : 0.0;
        lo = a;
        hi = b;
      }
      d["interval"] = {lo, hi};
      if (lo <= slo.threshold && slo.threshold <= hi) v.uncertain = true;
    }
    if (!met) {
      v.met = false;
      if (v.limiting.empty()) v.limiting = slo.text;
    }
    v.detail.push_back(std::move(d));
  }
  return v;
}

bool request_meets_slos(const std::vector<Slo>& slos, const RequestRecord& r, const RecordMetrics& m) {
  if (!r.ok()) return false;
  for (const auto& slo : slos) {
    std::optional<double> v;
    if (slo.quantity == "ttft") v = m.ttft_ms;
    else if (slo.quantity == "itl") v = m.itl_ms;
    else if (slo.quantity == "latency") v = m.request_latency_ms;
    else if (slo.quantity == "interactivity") v = m.itl_ms && *m.itl_ms > 0 ? std::optional<double>(1000.0 / *m.itl_ms) : std::nullopt;
    else if (m.request_latency_ms && *m.request_latency_ms > 0 && m.osl)
      v = static_cast<double>(*m.osl) / (*m.request_latency_ms / 1000.0);
    // A request without the value (one output token has no ITL) is not
    // held to that SLO.
    if (v && !slo_met(slo, *v)) return false;
  }
  return true;
}

}  // namespace agentperf
