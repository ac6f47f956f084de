// AIPerf's server_metrics_export.json and server_metrics_export.csv from the
// Prometheus scrapes of a run (github.com/ai-dynamo/aiperf,
// docs/server_metrics/server_metrics_json_schema.md and
// src/aiperf/server_metrics/csv_exporter.py ServerMetricsCsvExporter):
//   {"schema_version", "aiperf_version", "benchmark_id",
//    "summary": {endpoints_configured, endpoints_successful, start_time, end_time, endpoint_info},
//    "metrics": {<family>: {"type", "description", "unit", "series": [
//        {"endpoint_url", "labels", "stats": {...}}]}}}
// keyed by the metric *family* of the `# TYPE` line (a counter's samples
// `x_total` are family `x`, also when the TYPE line names `x_total`, as
// prometheus_client's parser does and InferenceX's adapters look them up), one
// series per endpoint + label set, over the profiling window only:
//   counter    stats {total, rate}: the increase over the window (resets
//              counted as restarts from 0), rate = total / window seconds
//   gauge      stats {avg, min, max, std, p1..p99} of the samples in the window
//   histogram  stats {count, sum, avg, count_rate, sum_rate} from _count/_sum
//              (summaries alike); buckets are not kept
// The window's counter baseline is the last scrape at or before its start
// (else the first), its end the first scrape at or after its end (else the
// last): the scraper takes one more scrape when it stops, as AIPerf does.
// Time slices (AIPerf's --slice-duration; server_metrics/accumulator.py
// @ 0313c6d7bf62, _timeslice_boundaries.py @ 6a5359abf717 and
// export_stats.py @ 19e4b776998f in github.com/ai-dynamo/aiperf): with a
// slice length d, every series also gets "timeslices", a list over
// [profiling start, max(profiling end, last scrape)) in steps of d, the
// last one cut at the range's end and marked "is_complete": false:
//   gauge      {start_ns, end_ns, avg, min, max} of the scrapes in
//              [start, end); slices without a scrape are left out
//   counter    {start_ns, end_ns, total, rate}: total = max(0, value at the
//              last scrape <= end - value at the last scrape <= start),
//              rate = total / the slice's seconds; every slice is written.
//              The counter's stats gain rate_avg/min/max/std over the
//              complete slices' rates
//   histogram  {start_ns, end_ns, count, sum, avg} from _count/_sum deltas
//              (left out where a counter went back); buckets are not kept
// InferenceX's plot script (utils/generate_aiperf_plots.py @ 843c6254ff69)
// draws its server panels from these slices, on an axis from
// summary.endpoint_info[url].first_update_ns.
// Not written: histogram buckets and percentile estimates, unit inference
// ("unit" is null).
//
// The CSV: `#` comment lines, then one section per type (gauge, counter,
// histogram) separated by an empty row, header
// Endpoint,Type,Metric,Unit,<stats>,<label keys, sorted>,Description; numbers
// as AIPerf's _format_number (floats with 4 decimals).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace agentperf {

class ServerMetricsLog {
 public:
  // endpoint_url: the scraped URL (http://host:port/metrics).
  explicit ServerMetricsLog(std::string endpoint_url);
  // One successful scrape: its wall-clock time and the exposition text.
  void add_scrape(std::int64_t t_ns, std::string_view text);
  void add_failure() { ++failures_; }
  std::size_t scrapes() const { return times_.size(); }

  // Window [start_ns, end_ns] in wall-clock ns; 0 = open on that side.
  // slice_ns > 0: each series also carries its time slices of that length.
  nlohmann::ordered_json export_json(std::int64_t start_ns, std::int64_t end_ns, const std::string& benchmark_id,
                                     std::int64_t slice_ns = 0) const;
  std::string export_csv(std::int64_t start_ns, std::int64_t end_ns, const std::string& benchmark_id,
                         std::int64_t slice_ns = 0) const;

 private:
  struct Family {
    std::string type = "gauge", help;
  };
  struct Series {
    std::string family, part;  // part: "" or "count"/"sum" of a histogram/summary
    std::map<std::string, std::string> labels;
    std::vector<std::pair<std::int64_t, double>> points;
  };
  std::string url_;
  std::map<std::string, Family> families_;
  std::vector<Series> series_;
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<std::int64_t> times_;
  std::size_t failures_ = 0;
};

}  // namespace agentperf
