#include "metrics/inferencex_aggregate.h"

#include <cmath>
#include <map>

#include "metrics/metric_table.h"
#include "metrics/record_metrics.h"
#include "metrics/stats.h"

namespace agentperf {
namespace {
using json = nlohmann::ordered_json;

json stat_block(std::vector<double> v) {
  if (v.empty()) return nullptr;
  Summary s = summarize(v);
  return json{{"mean", s.avg}, {"p50", s.percentile(50)}, {"p75", s.percentile(75)}, {"p90", s.percentile(90)},
              {"p95", s.percentile(95)}, {"std", s.std}};
}

// 1 / percentile (the slow-tail convention); std is that of the per-request inverses.
json inverse_block(std::vector<double> v) {
  std::vector<double> inv;
  for (double x : v)
    if (x > 0) inv.push_back(1.0 / x);
  if (v.empty()) return nullptr;
  Summary s = summarize(v);
  Summary si = summarize(inv);
  return json{{"mean", interactivity(s.avg)},           {"p50", interactivity(s.percentile(50))},
              {"p75", interactivity(s.percentile(75))}, {"p90", interactivity(s.percentile(90))},
              {"p95", interactivity(s.percentile(95))}, {"std", si.std}};
}
}  // namespace

InferenceXAggregate inferencex_aggregate(const std::vector<RequestRecord>& records, const InferenceXInputs& in) {
  std::vector<double> ttft, e2el, itl, full_itl, e2el_per_token, isl, osl;
  std::int64_t ok = 0, errors = 0, warmup = 0;
  std::int64_t first_start = INT64_MAX, last_end = 0;
  double sum_isl = 0, sum_osl = 0, sum_cached = 0;
  bool any_cached = false;
  std::map<std::string, std::int64_t> categories;
  std::vector<std::int64_t> ends;
  for (const auto& r : records) {
    if (r.phase != Phase::profiling) {
      ++warmup;
      continue;
    }
    if (!r.ok()) {
      ++errors;
      ++categories[r.error->type.empty() ? "unknown" : r.error->type];
      continue;
    }
    ++ok;
    const auto m = compute_metrics(r);
    auto pos = [](const std::optional<double>& x) { return x && std::isfinite(*x) && *x > 0; };
    if (pos(m.ttft_ms)) ttft.push_back(*m.ttft_ms / 1000);
    if (pos(m.request_latency_ms)) e2el.push_back(*m.request_latency_ms / 1000);
    if (pos(m.itl_ms)) itl.push_back(*m.itl_ms / 1000);
    if (pos(m.full_itl_ms)) full_itl.push_back(*m.full_itl_ms / 1000);
    if (pos(m.request_latency_ms) && m.osl && *m.osl > 0)
      e2el_per_token.push_back(*m.request_latency_ms / 1000 / static_cast<double>(*m.osl));
    if (m.isl) {
      isl.push_back(static_cast<double>(*m.isl));
      sum_isl += static_cast<double>(*m.isl);
    }
    if (m.osl) {
      osl.push_back(static_cast<double>(*m.osl));
      sum_osl += static_cast<double>(*m.osl);
    }
    if (r.usage_cached_tokens) any_cached = true;
    sum_cached += static_cast<double>(r.usage_cached_tokens.value_or(0));
    first_start = std::min(first_start, r.start_wall_ns);
    const std::int64_t end_wall = r.start_wall_ns + (r.end_ns - r.start_ns);
    last_end = std::max(last_end, end_wall);
    ends.push_back(end_wall);
  }
  const double duration = ok > 0 ? static_cast<double>(last_end - first_start) / 1e9 : 0.0;
  std::vector<double> qps;
  if (!ends.empty()) {
    std::sort(ends.begin(), ends.end());
    const std::int64_t w0 = ends.front();
    const auto windows = static_cast<std::size_t>((ends.back() - w0) / 1'000'000'000) + 1;
    qps.assign(windows, 0.0);
    for (auto e : ends) qps[static_cast<std::size_t>((e - w0) / 1'000'000'000)] += 1;
  }
  auto per = [&](double total) { return duration > 0 ? total / duration : 0.0; };
  const int gpus = std::max(1, in.gpus);
  json j;
  j["request_accounting"] = {{"records_total", static_cast<std::int64_t>(records.size())},
                             {"records_profiled", ok},
                             {"records_warmup_dropped", warmup},
                             {"records_error_dropped", errors},
                             {"error_categories", categories}};
  j["qps"] = {{"window_seconds", 1}, {"samples", qps.size()}, {"stats", stat_block(qps)}};
  j["latency"] = {{"ttft", stat_block(ttft)},
                  {"e2el", stat_block(e2el)},
                  {"itl", stat_block(itl)},
                  {"tpot", stat_block(itl)},
                  {"intvty", inverse_block(itl)},
                  {"e2e_norm_intvty", inverse_block(e2el_per_token)},
                  {"full_response_itl", stat_block(full_itl)},
                  {"full_response_intvty", inverse_block(full_itl)}};
  j["tokens"] = {{"input", stat_block(isl)}, {"output_actual", stat_block(osl)}};
  j["throughput"] = {{"duration_s", duration},
                     {"input", {{"tokens_per_second", per(sum_isl)}}},
                     {"output", {{"tokens_per_second", per(sum_osl)}}},
                     {"total", {{"tokens_per_second", per(sum_isl + sum_osl)}}},
                     {"num_gpus", gpus},
                     {"per_gpu",
                      {{"total_tput_tps", per(sum_isl + sum_osl) / gpus},
                       {"output_tput_tps", per(sum_osl) / gpus},
                       {"input_tput_tps", per(sum_isl) / gpus}}}};
  j["cache"] = {{"theoretical_cache_hit_rate",
                 in.theoretical_total_blocks ? static_cast<double>(in.theoretical_hit_blocks) /
                                                   static_cast<double>(in.theoretical_total_blocks)
                                             : 0.0},
                // null (n/a), never 0, when the server reports no cached tokens
                // (llama.cpp's server reuses prompts but reports none).
                {"observed_cache_hit_rate", any_cached && sum_isl > 0 ? json(sum_cached / sum_isl) : json(nullptr)}};
  const double error_rate = ok + errors > 0 ? static_cast<double>(errors) / static_cast<double>(ok + errors) : 0.0;
  const bool valid = ok > 0 && error_rate <= in.max_error_rate;
  j["validity"] = {{"error_rate", error_rate}, {"max_error_rate", in.max_error_rate}, {"valid", valid}};

  InferenceXHeadline h;
  h.total_tput_per_gpu = per(sum_isl + sum_osl) / gpus;
  h.output_tput_per_gpu = per(sum_osl) / gpus;
  auto p50 = [](std::vector<double> v) { return v.empty() ? 0.0 : summarize(v).percentile(50); };
  h.intvty_p50 = itl.empty() ? 0.0 : interactivity(p50(itl));
  h.e2e_norm_intvty_p50 = e2el_per_token.empty() ? 0.0 : interactivity(p50(e2el_per_token));
  h.ttft_p50_s = p50(ttft);
  h.e2el_p50_s = p50(e2el);
  if (any_cached && sum_isl > 0) h.observed_cache_hit = sum_cached / sum_isl;
  h.theoretical_cache_hit = j["cache"]["theoretical_cache_hit_rate"].get<double>();
  h.records_profiled = ok;
  h.records_error = errors;
  h.valid = valid;
  return {h, std::move(j)};
}

}  // namespace agentperf
