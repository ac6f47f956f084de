#include "sweep/profile_point.h"

#include <algorithm>
#include <tuple>

#include "metrics/confidence.h"

namespace agentperf::sweep {
namespace {

using json = nlohmann::json;

// agg[tag][stat] when it is a number (a missing key of a const json is
// undefined behaviour, hence the checks), else 0.
double stat(const json& agg, const char* tag, const char* name) {
  if (!agg.contains(tag) || !agg[tag].is_object() || !agg[tag].contains(name) || !agg[tag][name].is_number()) return 0;
  return agg[tag][name].get<double>();
}

}  // namespace

void take_profile_metrics(PointRow& row, const json& agg) {
  int gpus = 1;
  if (agg.contains("run_description") && agg["run_description"].is_object() &&
      agg["run_description"].contains("gpus") && agg["run_description"]["gpus"].is_number_integer())
    gpus = std::max(1, agg["run_description"]["gpus"].get<int>());
  row.tp = gpus;
  row.total_tput_per_gpu = stat(agg, "total_token_throughput", "avg") / gpus;
  row.output_tput_per_gpu = stat(agg, "output_token_throughput", "avg") / gpus;
  const double itl_p50 = stat(agg, "inter_token_latency", "p50");
  row.intvty_p50 = itl_p50 > 0 ? 1000 / itl_p50 : 0;
  row.ttft_p50_ms = stat(agg, "time_to_first_token", "p50");
  row.e2el_p50_s = stat(agg, "request_latency", "p50") / 1000;
  const double prompt = stat(agg, "total_usage_prompt_tokens", "avg");
  row.cache_hit = prompt > 0 ? stat(agg, "total_usage_prompt_cache_read_tokens", "avg") / prompt : 0;
  row.requests = static_cast<long long>(stat(agg, "request_count", "avg"));
  row.errors = static_cast<long long>(stat(agg, "error_request_count", "avg"));
  row.valid = agg.value("valid", false);
  if (agg.contains("confidence_intervals") && agg["confidence_intervals"].is_object())
    row.small_sample = agg["confidence_intervals"].value("small_sample", false);
  if (const auto t = throughput_interval_on(agg, row.total_tput_per_gpu)) std::tie(row.tput_ci_lo, row.tput_ci_hi) = *t;
  if (const auto t = aggregate_interval(agg, "time_to_first_token", "p50"))
    std::tie(row.ttft_p50_ci_lo_ms, row.ttft_p50_ci_hi_ms) = *t;
}

}  // namespace agentperf::sweep
