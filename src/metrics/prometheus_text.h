// Prometheus text exposition format: "name{label="v",...} value [ts]" per
// line, "#" lines are comments. Histogram buckets are dropped (the report
// and summaries use gauges and counters).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace agentperf {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Lines that do not parse are skipped (counted in *bad_lines).
std::vector<PromSample> parse_prometheus_text(std::string_view text, std::size_t* bad_lines = nullptr);

// Sum of a metric over all its label sets; the second name is tried when
// the first is absent (SGLang renamed num_requests_running to num_running_reqs).
std::map<std::string, double> sum_by_name(const std::vector<PromSample>& samples);

}  // namespace agentperf
