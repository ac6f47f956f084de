// One request as measured: identity, schedule, stamps, tokens, error.
// Filled by the HTTP client and the OpenAI response parser; metrics and
// exports are computed from it afterwards, off the hot path.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace agentperf {

enum class Phase { warmup, profiling };
const char* phase_name(Phase p) noexcept;

struct ErrorInfo {
  std::optional<int> code;  // HTTP status, 499 for cancellations, 502 for SSE errors
  std::string type;         // short class: "Bad Request", "ConnectionError", "TruncatedStream", ...
  std::string message;
};

// Where a token count came from, recorded next to every ISL/OSL so a user
// can tell server-reported numbers from client estimates.
enum class TokenSource { server_usage, client_exact, client_tokenizer, client_chunks, client_unverified, none };
const char* token_source_name(TokenSource s) noexcept;

// The server's own per-request timings where it reports them (llama.cpp's
// server sends a `timings` object with its last event or body: prompt_n,
// prompt_ms, predicted_n, predicted_ms, cache_n). Kept beside our stamps so a
// user can compare client-side latency with the engine's own accounting.
struct ServerTimings {
  std::optional<std::int64_t> prompt_n, predicted_n, cache_n;
  std::optional<double> prompt_ms, predicted_ms;
};

// This many content events or more, each within 100 us of the last, are a burst.
inline constexpr int kBurstRead = 4;
// The warning of a request whose content events arrived mostly in bursts
// (at least half of 8 or more).
inline constexpr const char* kBurstyWarning = "bursty_delivery";
// A 200 stream that ended (the server closed it cleanly) with neither a
// `data: [DONE]` nor a finish_reason: the answer may be cut short, and its
// latency and OSL are those of what arrived.
inline constexpr const char* kNoDoneWarning = "stream_ended_without_done";
// The server's usage.completion_tokens cannot be true: more than the
// request's max_tokens, or far more than the stream carried (over 1,000
// tokens per content event; engines stream at most tens per event). OSL
// and throughputs built on it are then wrong.
inline constexpr const char* kUsageOverMaxTokensWarning = "usage_over_max_tokens";
inline constexpr const char* kUsageOverStreamWarning = "usage_over_streamed_content";

struct RequestRecord {
  // identity
  std::uint64_t request_index = 0;
  std::string x_request_id;
  std::string x_correlation_id;
  std::int64_t session_num = 0;
  std::string conversation_id;
  std::string root_correlation_id;  // replay: shared by a session tree's requests
  // replay (AIPerf MetricRecordMetadata): 0 for a root session, 1 for its
  // subagents and flattened agents; the spawning session's x_correlation_id
  // (empty for a root).
  int agent_depth = 0;
  std::string parent_correlation_id;
  int turn_index = 0;
  int worker_id = 0;
  Phase phase = Phase::profiling;

  // schedule and stamps: monotonic ns
  std::int64_t credit_issued_ns = 0;  // when the load generator decided to send it
  std::int64_t scheduled_ns = 0;      // the target send time (open loop), else = credit_issued
  std::int64_t start_ns = 0;          // just before the first request byte was written
  std::int64_t ack_ns = 0;            // response headers parsed
  std::int64_t end_ns = 0;            // stream end (last byte of the response)
  std::int64_t start_wall_ns = 0;     // wall clock paired with start_ns
  std::vector<std::int64_t> content_ns;  // one stamp per SSE event that carried content
  std::int64_t cancellation_ns = 0;
  bool was_cancelled = false;
  int retries = 0;  // re-sent after a reused keep-alive socket failed before any response byte
  // The retry's send (monotonic); start_ns stays the first send, so the
  // request's latency includes the failed attempt. 0 when not retried.
  std::int64_t retry_start_ns = 0;

  // request shape
  int requested_isl = 0;
  int requested_osl = 0;
  bool prompt_exact = false;  // prompt sent as token ids: its length is known exactly

  // response
  int http_status = 0;
  bool streamed = false;
  bool saw_done = false;
  bool saw_finish_reason = false;  // a choice carried a non-null finish_reason
  int content_events = 0;    // events with non-empty visible content
  // Content events that arrived in bursts (kBurstRead or more within 100 us
  // of each other): a proxy or a server that holds the stream and releases
  // it in bursts (HAProxy without http-no-delay). The timings are then
  // those of the bursts, not of the tokens; see kBurstyWarning.
  int burst_events = 0;
  int reasoning_events = 0;  // events with non-empty reasoning content
  std::size_t content_bytes = 0;
  std::size_t reasoning_bytes = 0;
  std::optional<std::int64_t> usage_prompt_tokens;
  std::optional<std::int64_t> usage_completion_tokens;
  std::optional<std::int64_t> usage_total_tokens;
  std::optional<std::int64_t> usage_cached_tokens;
  std::optional<std::int64_t> usage_reasoning_tokens;
  std::optional<ServerTimings> server_timings;

  // Streamed text, kept only when the client counts output tokens itself.
  bool capture_text = false;
  std::string output_text;
  std::optional<std::int64_t> client_output_tokens;

  std::optional<ErrorInfo> error;
  // Set on a successful record that is suspicious though not an error: e.g.
  // "zero_output_tokens" when max_tokens > 0 was asked with ignore_eos.
  std::string warning;

  bool ok() const noexcept { return !error.has_value(); }
};

// Records are moved, never copied, as vectors of them grow and sort: a
// throwing move would make std::vector copy every record (content_ns and all).
static_assert(std::is_nothrow_move_constructible_v<RequestRecord>);

// Receives each record as soon as its request ends (from any worker thread),
// so results reach disk while the run goes (RecordStreamWriter).
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void on_record(const RequestRecord& r) = 0;
};

}  // namespace agentperf
