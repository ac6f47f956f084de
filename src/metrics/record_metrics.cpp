#include "metrics/record_metrics.h"

namespace agentperf {

namespace {
double ms(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }
}  // namespace

RecordMetrics compute_metrics(const RequestRecord& r) {
  RecordMetrics m;
  if (r.usage_prompt_tokens) {
    m.isl = r.usage_prompt_tokens;
    m.isl_source = TokenSource::server_usage;
  } else if (r.requested_isl > 0) {
    m.isl = r.requested_isl;
    m.isl_source = r.prompt_exact ? TokenSource::client_exact : TokenSource::client_unverified;
  }
  if (r.scheduled_ns > 0 && r.start_ns > 0) m.send_lateness_ms = ms(r.start_ns - r.scheduled_ns);
  if (!r.ok()) return m;

  if (r.usage_completion_tokens) {
    const std::int64_t reasoning = r.usage_reasoning_tokens.value_or(0);
    m.osl = *r.usage_completion_tokens;
    m.reasoning_token_count = reasoning;
    m.output_token_count = *r.usage_completion_tokens - reasoning;
    m.osl_source = TokenSource::server_usage;
  } else if (r.client_output_tokens) {
    m.output_token_count = *r.client_output_tokens;
    m.reasoning_token_count = 0;
    m.osl = *r.client_output_tokens;
    m.osl_source = TokenSource::client_tokenizer;
  } else {
    m.output_token_count = r.content_events;
    m.reasoning_token_count = r.reasoning_events;
    m.osl = r.content_events + r.reasoning_events;
    m.osl_source = TokenSource::client_chunks;
  }

  if (r.ack_ns > 0) m.http_req_waiting_ms = ms(r.ack_ns - r.start_ns);
  if (r.end_ns > 0) m.http_req_duration_ms = ms(r.end_ns - r.start_ns);
  if (r.content_ns.empty() || !r.streamed) {
    // Without streaming there is one arrival, the whole answer: TTFT, ITL and
    // everything else per token are undefined (n/a), as in AIPerf, where
    // they are streaming-only metrics.
    if (r.end_ns > 0) m.request_latency_ms = ms(r.end_ns - r.start_ns);
    return m;
  }
  const std::int64_t first = r.content_ns.front();
  const std::int64_t last = r.content_ns.back();
  m.ttft_ms = ms(first - r.start_ns);
  m.request_latency_ms = ms(last - r.start_ns);
  if (r.content_ns.size() >= 2) m.ttst_ms = ms(r.content_ns[1] - first);
  m.decode_ms = ms(last - first);
  if (r.end_ns > 0) m.full_decode_ms = ms(r.end_ns - first);
  m.inter_chunk_ms.reserve(r.content_ns.size());
  for (std::size_t i = 1; i < r.content_ns.size(); ++i) m.inter_chunk_ms.push_back(ms(r.content_ns[i] - r.content_ns[i - 1]));
  if (m.osl && *m.osl >= 2) {
    const double denom = static_cast<double>(*m.osl - 1);
    m.itl_ms = *m.decode_ms / denom;
    if (m.full_decode_ms) m.full_itl_ms = *m.full_decode_ms / denom;
    if (*m.itl_ms > 0) m.tokens_per_sec_per_user = 1000.0 / *m.itl_ms;
  }
  return m;
}

}  // namespace agentperf
