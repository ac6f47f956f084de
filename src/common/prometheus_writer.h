// Prometheus text exposition (format 0.0.4) writer shared by everything that
// serves /metrics (the engine simulator, the router), so the "# HELP / # TYPE
// / name{labels} value" layout and label escaping live in one place. Label
// values escape backslash, double quote and newline; HELP text escapes
// backslash and newline. Values print with %.17g (integers up to 1e17 as is).
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentperf {

using PromLabels = std::vector<std::pair<std::string, std::string>>;

class PrometheusWriter {
 public:
  // Starts a metric family: "# HELP" (only when help is non-empty), then "# TYPE".
  void family(std::string_view name, std::string_view type, std::string_view help = {});
  // One sample line: `name value`, or `name{k="v",...} value` when labels are given.
  void sample(std::string_view name, const PromLabels& labels, double value);

  // A family holding one sample.
  void gauge(std::string_view name, std::string_view help, const PromLabels& labels, double value) {
    single(name, "gauge", help, labels, value);
  }
  void counter(std::string_view name, std::string_view help, const PromLabels& labels, double value) {
    single(name, "counter", help, labels, value);
  }
  // A summary without quantiles: name_sum and name_count.
  void summary(std::string_view name, std::string_view help, const PromLabels& labels, double sum, double count);

  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void single(std::string_view name, std::string_view type, std::string_view help, const PromLabels& labels,
              double value);
  std::string out_;
};

// A label value escaped for the text format (backslash, double quote, newline).
std::string prometheus_escape_label(std::string_view value);

}  // namespace agentperf
