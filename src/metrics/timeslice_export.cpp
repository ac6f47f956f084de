#include "metrics/timeslice_export.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "common/atomic_file.h"
#include "common/error.h"
#include "metrics/metric_summary.h"

namespace agentperf {

using ojson = nlohmann::ordered_json;

namespace {

struct Included {
  std::int64_t start_wall_ns = 0, end_wall_ns = 0;
  const RequestRecord* rec = nullptr;
};

}  // namespace

ojson client_timeslices(const std::vector<RequestRecord>& records, double slice_s, const nlohmann::json& input_config) {
  std::vector<Included> in;
  for (const auto& r : records) {
    if (r.phase != Phase::profiling || !r.ok()) continue;
    // Wall clock, as AIPerf stamps: the request's wall start plus its
    // monotonic length.
    in.push_back({r.start_wall_ns, r.start_wall_ns + std::max<std::int64_t>(0, r.end_ns - r.start_ns), &r});
  }
  ojson slices = ojson::array();
  if (!in.empty() && slice_s > 0) {
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& x : in) {
      lo = std::min(lo, x.start_wall_ns);
      hi = std::max({hi, x.start_wall_ns, x.end_wall_ns});
    }
    const auto width = std::max<std::int64_t>(1, static_cast<std::int64_t>(slice_s * 1e9));
    const auto n = static_cast<std::size_t>((hi - lo) / width) + 1;
    std::vector<std::vector<const Included*>> bins(n);
    for (const auto& x : in) bins[static_cast<std::size_t>((x.start_wall_ns - lo) / width)].push_back(&x);
    for (std::size_t i = 0; i < n; ++i) {
      if (bins[i].empty()) continue;
      const std::int64_t start = lo + static_cast<std::int64_t>(i) * width, raw_end = start + width;
      ojson s = {{"start_ns", start}, {"end_ns", std::min(raw_end, hi)}};
      if (raw_end > hi) s["is_complete"] = false;
      // Per metric, in the metric table's order.
      std::map<const MetricDef*, std::vector<double>> values;
      for (const auto* x : bins[i]) {
        const RecordMetrics m = compute_metrics(*x->rec);
        for (const auto& row : metric_rows(*x->rec, m)) values[row.def].push_back(row.value);
      }
      for (const auto& def : metric_table()) {
        auto it = values.find(&def);
        if (it != values.end()) s[def.tag] = summary_json(it->second, def.unit);
      }
      s["request_count"] = {{"unit", "requests"}, {"avg", static_cast<double>(bins[i].size())}};
      slices.push_back(std::move(s));
    }
  }
  return {{"timeslices", slices}, {"slice_duration_s", slice_s}, {"input_config", input_config}};
}

std::string client_timeslices_csv(const ojson& doc) {
  std::string out = "Timeslice,Metric,Unit,Stat,Value\n";
  const auto& slices = doc.at("timeslices");
  char line[256];
  for (std::size_t i = 0; i < slices.size(); ++i)
    for (const auto& [tag, block] : slices[i].items()) {
      if (!block.is_object() || !block.contains("unit")) continue;
      const std::string unit = block["unit"].get<std::string>();
      for (const auto& [stat, v] : block.items()) {
        if (stat == "unit" || !v.is_number()) continue;
        std::snprintf(line, sizeof line, "%zu,%s,%s,%s,%.2f\n", i, tag.c_str(), unit.c_str(), stat.c_str(),
                      v.get<double>());
        out += line;
      }
    }
  return out;
}

void write_client_timeslices(const std::filesystem::path& dir, const std::vector<RequestRecord>& records,
                             double slice_s, const nlohmann::json& input_config) {
  const ojson doc = client_timeslices(records, slice_s, input_config);
  write_file_atomically(dir / "profile_export_aiperf_timeslices.json", doc.dump(2) + "\n");
  write_file_atomically(dir / "profile_export_aiperf_timeslices.csv", client_timeslices_csv(doc));
}

}  // namespace agentperf
