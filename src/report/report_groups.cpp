// Comparable groups, configurations, frontiers and prediction pairs over
// the report's points (report.h, group_points).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "report/report.h"

namespace agentperf::report {
using json = nlohmann::json;

namespace {

std::string text(const json& d, const char* key) {
  if (!d.contains(key)) return "";
  const auto& v = d[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return json(v).dump();
  return "";
}

double time_scale(const json& d) {
  return d.contains("time_scale") && d["time_scale"].is_number() ? d["time_scale"].get<double>() : 1.0;
}

std::string scale_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

// Runs that may share a frontier: one model on one GPU, one workload, one
// time scale (a simulator served 4x faster than real time shows 4x the
// throughput of the engine it models: it never sits beside real runs).
std::string base_key(const json& d) {
  return text(d, "model") + "\x1f" + text(d, "hardware") + "\x1f" + text(d, "workload");
}
std::string group_key(const json& d) { return base_key(d) + "\x1f" + scale_text(time_scale(d)); }

std::string group_label(const json& d) {
  std::string s = (d.contains("model") ? text(d, "model") : "unknown model") + " on " +
                  (d.contains("hardware") ? text(d, "hardware") : "unknown hardware");
  if (d.contains("workload")) s += " · " + text(d, "workload");
  if (time_scale(d) != 1.0) s += " · sim x" + scale_text(time_scale(d)) + " time scale";
  return s;
}

// How well a prediction describes the deployment a measurement ran,
// concurrency aside: the count of deployment fields both name with one
// value, or -1 when one field differs. A field only one side names is left
// open: a replay of a live server knows its TP only when told
// (--inferencex-env TP=...), and a standalone `sim predict` has no recipe.
// The engine is left out: a prediction of an SGLang deployment is made by
// agentperf-sim.
constexpr const char* kDeploymentFields[] = {"recipe", "tp", "ep", "dp", "kv_offload", "spec_decoding"};

int deployment_agreement(const json& predicted, const json& measured) {
  int agree = 0;
  for (const char* key : kDeploymentFields) {
    const std::string a = text(predicted, key), b = text(measured, key);
    if (a.empty() || b.empty()) continue;
    if (a != b) return -1;
    ++agree;
  }
  return agree;
}

// Whether two predictions describe one deployment (the same point predicted
// twice): every deployment field the same, named or not.
bool same_deployment(const json& a, const json& b) {
  for (const char* key : kDeploymentFields)
    if (text(a, key) != text(b, key)) return false;
  return true;
}

// One series per configuration: the deployment, its engine and the kind.
std::string series_label(const json& p) {
  const json& d = p["description"];
  std::string s = d.contains("engine") ? text(d, "engine") : "unknown engine";
  if (d.contains("engine_version") && text(d, "engine") != "agentperf-sim") s += " " + text(d, "engine_version");
  if (d.contains("tp")) s += " TP" + text(d, "tp");
  if (d.contains("ep") && text(d, "ep") != "1") s += " EP" + text(d, "ep");
  if (d.contains("dp") && text(d, "dp") != "1") s += " DP" + text(d, "dp");
  const std::string off = text(d, "kv_offload");
  if (!off.empty() && off != "none") s += " offload " + off;
  const std::string spec = text(d, "spec_decoding");
  if (!spec.empty() && spec != "none") s += " " + spec;
  if (d.contains("recipe")) s += " (" + text(d, "recipe") + ")";
  // A run nothing is known of stands alone.
  if (!d.contains("engine") && !d.contains("tp") && !d.contains("concurrency")) s = p["name"].get<std::string>();
  return s + " · " + p["kind"].get<std::string>();
}

double x_of(const json& p) { return p["intvty"].value("p50", 0.0); }

// Signed error of a prediction against its measurement, in percent.
json error_pct(double predicted, double measured) {
  if (!(measured > 0) || !std::isfinite(predicted)) return nullptr;
  return 100.0 * (predicted - measured) / measured;
}

}  // namespace

void group_points(json& data) {
  auto& points = data["points"];
  json groups = json::array();
  std::map<std::string, std::size_t> group_of;
  for (std::size_t i = 0; i < points.size(); ++i) {
    auto& p = points[i];
    const json& d = p["description"];
    const std::string key = group_key(d);
    auto [it, fresh] = group_of.emplace(key, groups.size());
    if (fresh)
      groups.push_back({{"label", group_label(d)}, {"time_scale", time_scale(d)}, {"series", json::array()},
                        {"points", json::array()}, {"frontier", {{"measured", json::array()}, {"predicted", json::array()}}}});
    auto& g = groups[it->second];
    p["group"] = it->second;
    p["series"] = series_label(p);
    p["label"] = p["concurrency"].is_number() ? "c" + text(p, "concurrency") : p["name"].get<std::string>();
    g["points"].push_back(i);
    bool found = false;
    for (auto& s : g["series"])
      if (s["label"] == p["series"]) {
        s["points"].push_back(i);
        found = true;
      }
    if (!found) g["series"].push_back({{"label", p["series"]}, {"kind", p["kind"]}, {"points", {i}}});
  }
  // Each series in concurrency order, so its line reads left to right.
  for (auto& g : groups)
    for (auto& s : g["series"]) {
      std::vector<std::size_t> idx = s["points"].get<std::vector<std::size_t>>();
      auto conc = [&](std::size_t i) {
        const json& c = points[i]["concurrency"];
        return c.is_number() ? c.get<double>() : 0.0;
      };
      std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return conc(a) < conc(b); });
      s["points"] = idx;
    }
  // Frontier per group and kind at p50 interactivity (the page recomputes it
  // for the axis and percentile chosen there): the points no other point of
  // the same group and kind beats on both throughput per GPU and interactivity.
  for (auto& g : groups)
    for (const char* kind : {"measured", "predicted"}) {
      json f = json::array();
      for (std::size_t i : g["points"].get<std::vector<std::size_t>>()) {
        const auto& p = points[i];
        if (p["kind"] != kind || x_of(p) <= 0) continue;
        bool beaten = false;
        for (std::size_t j : g["points"].get<std::vector<std::size_t>>()) {
          const auto& q = points[j];
          if (j == i || q["kind"] != kind || x_of(q) <= 0) continue;
          const double qx = x_of(q), px = x_of(p), qy = q["tput_per_gpu"].get<double>(), py = p["tput_per_gpu"].get<double>();
          if (qx >= px && qy >= py && (qx > px || qy > py)) beaten = true;
        }
        if (!beaten) f.push_back(i);
        points[i]["on_frontier"] = !beaten;
      }
      g["frontier"][kind] = f;
    }
  // Prediction against measurement: same model, GPU, workload and
  // concurrency, and the prediction that agrees with the most deployment
  // fields the two both name (at equal agreement, one of the measurement's
  // own time scale first). A tie between different deployments leaves the
  // measurement unpaired: two predictions it cannot tell apart (with and
  // without offload, say) would each claim it. One deployment predicted
  // twice pairs its first prediction.
  //
  // Across time scales: a measurement of the simulator served N times
  // faster than real time (`sim serve --time-scale N`, a sweep at
  // --time-scale N) pairs with the virtual-time prediction of its point,
  // the prediction moved onto the measurement's clock (throughput x N,
  // latencies / N), so a time-scaled sweep is checked against its dry run.
  json pairs = json::array();
  for (std::size_t m = 0; m < points.size(); ++m) {
    const auto& pm = points[m];
    if (pm["kind"] != "measured" || !pm["concurrency"].is_number()) continue;
    const std::string base = base_key(pm["description"]);
    const double m_scale = time_scale(pm["description"]);
    int best = -1;
    bool best_same_scale = false;
    std::vector<std::size_t> best_of;
    for (std::size_t q = 0; q < points.size(); ++q) {
      const auto& pp = points[q];
      if (pp["kind"] != "predicted" || base_key(pp["description"]) != base || pp["concurrency"] != pm["concurrency"])
        continue;
      const int agree = deployment_agreement(pp["description"], pm["description"]);
      const bool same_scale = time_scale(pp["description"]) == m_scale;
      if (agree < 0 || agree < best || (agree == best && best_same_scale && !same_scale)) continue;
      if (agree > best || (same_scale && !best_same_scale)) best_of.clear();
      best = agree;
      best_same_scale = same_scale;
      best_of.push_back(q);
    }
    bool one_deployment = !best_of.empty();
    for (std::size_t q : best_of)
      one_deployment = one_deployment && same_deployment(points[q]["description"], points[best_of.front()]["description"]);
    if (one_deployment) {
      const std::size_t q = best_of.front();
      const auto& pp = points[q];
      // The prediction on the measurement's clock.
      const double factor = m_scale / time_scale(pp["description"]);
      const json predicted = {{"tput_per_gpu", pp["tput_per_gpu"].get<double>() * factor},
                              {"ttft_p50", pp["ttft_p50"].get<double>() / factor},
                              {"itl_p50", pp["itl_p50"].get<double>() / factor}};
      json pair = {{"measured", m},
                   {"predicted", q},
                   {"group", pm["group"]},
                   {"concurrency", pm["concurrency"]},
                   {"time_scale_factor", factor},
                   {"predicted_values", predicted},
                   {"error_pct",
                    {{"tput_per_gpu", error_pct(predicted["tput_per_gpu"].get<double>(), pm["tput_per_gpu"].get<double>())},
                     {"ttft_p50", error_pct(predicted["ttft_p50"].get<double>(), pm["ttft_p50"].get<double>())},
                     {"itl_p50", error_pct(predicted["itl_p50"].get<double>(), pm["itl_p50"].get<double>())}}}};
      // Against the measurement's own 95 % interval: a prediction inside it
      // is as good as the measurement can tell (its error is noise, not a
      // miss); the interval is given as percentages of the measured value,
      // on the error's scale.
      if (pm.contains("interval"))
        for (const char* key : {"tput_per_gpu", "ttft_p50", "itl_p50"}) {
          if (!pm["interval"].contains(key)) continue;
          const double lo = pm["interval"][key][0].get<double>(), hi = pm["interval"][key][1].get<double>();
          const double mv = pm[key].get<double>(), pv = predicted[key].get<double>();
          pair["inside"][key] = pv >= lo && pv <= hi;
          if (mv > 0) pair["interval_pct"][key] = {100 * (lo - mv) / mv, 100 * (hi - mv) / mv};
        }
      pairs.push_back(std::move(pair));
    }
  }
  // Group by group, in concurrency order.
  std::vector<json> sorted(pairs.begin(), pairs.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const json& a, const json& b) {
    return std::make_pair(a["group"].get<std::size_t>(), a["concurrency"].get<double>()) <
           std::make_pair(b["group"].get<std::size_t>(), b["concurrency"].get<double>());
  });
  data["groups"] = groups;
  data["pairs"] = sorted;
}

}  // namespace agentperf::report
