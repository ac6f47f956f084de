// The report's section for a capacity search (`agentperf capacity`,
// capacity.json): the answer and, per SLO, each measured point's value with
// its 95 % interval against the threshold, beside the simulator's predicted
// value of the same point (report.h, capacity_section).
#include <algorithm>
#include <string>

#include "common/error.h"
#include "metrics/slo.h"
#include "report/report.h"

namespace agentperf::report {
using json = nlohmann::json;

namespace {

// capacity.json's value, or null.
json field(const json& j, const char* key) { return j.is_object() && j.contains(key) ? j[key] : json(nullptr); }

// The value of `slo` in a point's per-SLO detail ([{slo, value, interval?}]).
const json* detail_of(const json& point, const std::string& slo) {
  if (!point.contains("slos") || !point["slos"].is_array()) return nullptr;
  for (const auto& d : point["slos"])
    if (d.is_object() && d.value("slo", std::string()) == slo) return &d;
  return nullptr;
}

}  // namespace

json capacity_section(const std::string& dir, const json& cap) {
  json out = {{"dir", dir},
              {"capacity", field(cap, "capacity")},
              {"at_max_concurrency", field(cap, "at_max_concurrency")},
              {"lowest_missing", field(cap, "lowest_missing")},
              {"limiting_slo", field(cap, "limiting_slo")},
              {"predicted_edge", field(cap, "predicted_edge")},
              {"max_concurrency", field(cap, "max_concurrency")},
              {"complete", cap.value("complete", true)},
              {"time_scale", cap.value("time_scale", 1.0)},
              {"slos", json::array()},
              {"measured", json::array()}};
  const double scale = out["time_scale"].get<double>() > 0 ? out["time_scale"].get<double>() : 1.0;
  // Measured points in concurrency order, with the order they were measured in.
  std::vector<json> measured;
  for (std::size_t i = 0; i < cap["measured"].size(); ++i) {
    json m = cap["measured"][i];
    m["order"] = i + 1;
    measured.push_back(std::move(m));
  }
  std::sort(measured.begin(), measured.end(),
            [](const json& a, const json& b) { return a["concurrency"].get<int>() < b["concurrency"].get<int>(); });
  for (const auto& m : measured)
    out["measured"].push_back({{"concurrency", m["concurrency"]},
                               {"order", m["order"]},
                               {"met", m.value("met", false)},
                               {"uncertain", m.value("uncertain", false)},
                               {"limiting", field(m, "limiting")},
                               {"goodput", field(m, "goodput")},
                               {"point", field(m, "point")}});
  // Per SLO: its threshold and the series of the chart (x: concurrency).
  if (!cap.contains("slos") || !cap["slos"].is_array())
    throw UserError(dir + "/capacity.json: no \"slos\" (expected the search's --slo texts)");
  for (const auto& text : cap["slos"]) {
    if (!text.is_string()) throw UserError(dir + "/capacity.json: an SLO that is not a string");
    const Slo slo = parse_slo(text.get<std::string>());
    json series = {{"slo", slo.text},
                   {"at_most", slo.at_most},
                   {"threshold", slo.threshold},
                   {"unit", slo.quantity == "interactivity" || slo.quantity == "e2e_interactivity" ? "tokens/s" : "ms"},
                   {"measured", json::array()},
                   {"predicted", json::array()}};
    for (const auto& m : measured) {
      const json* d = detail_of(m, slo.text);
      if (!d || !(*d)["value"].is_number()) continue;
      json p = {{"concurrency", m["concurrency"]}, {"value", (*d)["value"]}, {"met", d->value("met", false)}};
      if (d->contains("interval")) p["interval"] = (*d)["interval"];
      series["measured"].push_back(std::move(p));
    }
    // The prediction judged the SLOs in the simulator's virtual time; on
    // the server's clock (time scale N) a latency is N times shorter and a
    // speed N times higher.
    if (cap.contains("predicted") && cap["predicted"].is_array()) {
      std::vector<json> predicted;
      for (const auto& p : cap["predicted"]) {
        const json* d = detail_of(p, slo.text);
        if (!d || !(*d)["value"].is_number() || !p.contains("concurrency")) continue;
        const double v = (*d)["value"].get<double>();
        predicted.push_back({{"concurrency", p["concurrency"]}, {"value", slo.at_most ? v / scale : v * scale}});
      }
      std::sort(predicted.begin(), predicted.end(), [](const json& a, const json& b) {
        return a["concurrency"].get<int>() < b["concurrency"].get<int>();
      });
      series["predicted"] = predicted;
    }
    out["slos"].push_back(std::move(series));
  }
  return out;
}

}  // namespace agentperf::report
