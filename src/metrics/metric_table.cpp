#include "metrics/metric_table.h"

#include <array>

namespace agentperf {
namespace {

template <class T>
std::optional<double> as_double(const std::optional<T>& v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}
// Server usage fields are exported for successful records only.
template <class T>
std::optional<double> usage(const RequestRecord& r, const std::optional<T>& v) {
  return r.ok() ? as_double(v) : std::nullopt;
}

using R = const RequestRecord&;
using M = const RecordMetrics&;

const std::array kTable = {
    MetricDef{"time_to_first_token", "ms", "TTFT (ms)", "first content event - request start", false, true,
              [](R, M m) { return m.ttft_ms; }},
    MetricDef{"time_to_second_token", "ms", "TTST (ms)", "second content event - first content event", false, true,
              [](R, M m) { return m.ttst_ms; }},
    MetricDef{"request_latency", "ms", "Request latency (ms)", "last content event - request start", false, false,
              [](R, M m) { return m.request_latency_ms; }},
    MetricDef{"inter_token_latency", "ms", "ITL (ms)", "(request latency - TTFT) / (OSL - 1), OSL >= 2", false, true,
              [](R, M m) { return m.itl_ms; }},
    MetricDef{"full_response_inter_token_latency", "ms", "Full-response ITL (ms)",
              "(stream end - first content event) / (OSL - 1)", false, true, [](R, M m) { return m.full_itl_ms; }},
    MetricDef{"output_token_throughput_per_user", "tokens/sec/user", "Output tok/s/user", "1000 / ITL", false, true,
              [](R, M m) { return m.tokens_per_sec_per_user; }},
    MetricDef{"decode_duration", "ms", nullptr, "last content event - first content event", false, true,
              [](R, M m) { return m.decode_ms; }},
    MetricDef{"full_decode_duration", "ms", nullptr, "stream end - first content event", false, true,
              [](R, M m) { return m.full_decode_ms; }},
    MetricDef{"http_req_waiting", "ms", nullptr, "response headers - request start", false, false,
              [](R, M m) { return m.http_req_waiting_ms; }},
    MetricDef{"http_req_duration", "ms", nullptr, "stream end - request start", false, false,
              [](R, M m) { return m.http_req_duration_ms; }},
    MetricDef{"send_lateness", "ms", "Send lateness (ms)", "request start - scheduled send time", false, false,
              [](R, M m) { return m.send_lateness_ms; }},
    MetricDef{"input_sequence_length", "tokens", "ISL (tokens)", "server usage prompt_tokens, else the client's count",
              true, false, [](R, M m) { return as_double(m.isl); }},
    MetricDef{"output_sequence_length", "tokens", "OSL (tokens)", "output + reasoning tokens", true, false,
              [](R, M m) { return as_double(m.osl); }},
    MetricDef{"output_token_count", "tokens", nullptr, "output tokens without reasoning", true, false,
              [](R, M m) { return as_double(m.output_token_count); }},
    MetricDef{"reasoning_token_count", "tokens", nullptr, "reasoning tokens", true, false,
              [](R, M m) { return as_double(m.reasoning_token_count); }},
    MetricDef{"usage_prompt_tokens", "tokens", nullptr, "server usage.prompt_tokens", true, false,
              [](R r, M) { return usage(r, r.usage_prompt_tokens); }},
    MetricDef{"usage_completion_tokens", "tokens", nullptr, "server usage.completion_tokens", true, false,
              [](R r, M) { return usage(r, r.usage_completion_tokens); }},
    MetricDef{"usage_total_tokens", "tokens", nullptr, "server usage.total_tokens", true, false,
              [](R r, M) { return usage(r, r.usage_total_tokens); }},
    MetricDef{"usage_prompt_cache_read_tokens", "tokens", "Cached prompt tokens",
              "server usage.prompt_tokens_details.cached_tokens", true, false,
              [](R r, M) { return usage(r, r.usage_cached_tokens); }},
    MetricDef{"inter_chunk_latency", "ms", "Inter-chunk latency (ms)", "gaps between consecutive content events", false,
              true, nullptr},
};

}  // namespace

std::span<const MetricDef> metric_table() { return kTable; }

const MetricDef* find_metric(std::string_view tag) {
  for (const auto& m : kTable)
    if (tag == m.tag) return &m;
  return nullptr;
}

}  // namespace agentperf
