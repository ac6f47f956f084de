// Per-request metrics with AIPerf's definitions (github.com/ai-dynamo/aiperf,
// docs/metrics-reference.md @ 0176f59496e0):
//   TTFT            = first content event - request start
//   request latency = last content event  - request start
//   ITL             = (request latency - TTFT) / (OSL - 1), OSL >= 2
//   full-response ITL = (stream end - first content) / (OSL - 1)
// TTFT, TTST, ITL and the other per-token metrics need a streamed answer:
// a non-streamed record has only request latency (they are n/a).
// OSL counts output plus reasoning tokens. Token counts come from the
// server's usage when it sends one; otherwise from the client (exact for
// token-id prompts, one token per content event for output), and the source
// is recorded next to the value.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "common/record.h"

namespace agentperf {

struct RecordMetrics {
  std::optional<double> ttft_ms;
  std::optional<double> ttst_ms;
  std::optional<double> request_latency_ms;
  std::optional<double> itl_ms;
  std::optional<double> full_itl_ms;
  std::optional<double> decode_ms;
  std::optional<double> full_decode_ms;
  std::optional<double> tokens_per_sec_per_user;  // 1 / ITL
  std::optional<double> http_req_waiting_ms;      // headers - start
  std::optional<double> http_req_duration_ms;     // stream end - start
  std::optional<double> send_lateness_ms;         // start - scheduled
  std::vector<double> inter_chunk_ms;

  std::optional<std::int64_t> isl;
  std::optional<std::int64_t> osl;
  std::optional<std::int64_t> output_token_count;
  std::optional<std::int64_t> reasoning_token_count;
  TokenSource isl_source = TokenSource::none;
  TokenSource osl_source = TokenSource::none;
};

RecordMetrics compute_metrics(const RequestRecord& r);

}  // namespace agentperf
