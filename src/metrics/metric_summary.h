// One request's metric values and a metric's distribution summary, as the
// aggregate (metrics/export.h) and its time slices
// (metrics/timeslice_export.h) both write them.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "common/record.h"
#include "metrics/metric_table.h"
#include "metrics/record_metrics.h"

namespace agentperf {

// Every per-record metric with a value, from the metric table
// (metrics/metric_table.h): the aggregate summarises the rows the JSONL
// line (metrics/record_json.cpp) writes, so the two can never disagree.
struct MetricRow {
  const MetricDef* def;
  double value;
};
std::vector<MetricRow> metric_rows(const RequestRecord& r, const RecordMetrics& m);

// {unit, avg, min, max, p1..p99, std, count, sum} of the values (sorted in place).
nlohmann::ordered_json summary_json(std::vector<double>& values, const char* unit);

}  // namespace agentperf
