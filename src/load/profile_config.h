// The configuration of a measured run against an endpoint, in three parts:
// the client (who and how), the synthetic load (what is sent, when) and the
// run's output. `profile` takes all three (ProfileConfig); `replay` and
// `eval` take the client and output parts and bring their own load.
#pragma once
#include "common/defaults.h"
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "net/client_options.h"

namespace agentperf {

// The bounds of every numeric input of a measured run (docs/limits.md).
// Beyond them a value is refused rather than converted: a duration of 1e10 s
// overflowed the nanosecond deadline into the past (0 requests, exit 0), an
// ISL of 2^31 wrapped to 1, a timeout of 1e300 s became a negative one. The
// CLI checks them as it parses (cli/cli_numbers.h); validate() checks them
// again for library callers. Each bound is far above any real benchmark and
// far below where a conversion to int, int64 ns or std::chrono would wrap.
namespace limits {
inline constexpr double max_seconds = 30.0 * 86400;           // durations, timeouts, grace: 30 days
inline constexpr double max_interval_s = 86400;                // progress and scrape intervals: 1 day
inline constexpr int max_concurrency = 1'000'000;
inline constexpr double max_request_rate = 1'000'000;          // requests/s
inline constexpr std::int64_t max_request_count = 1'000'000'000;
inline constexpr int max_workers = 1024;
inline constexpr int max_tokens = 10'000'000;                  // --isl, --osl, their stddevs, --prefix-length
inline constexpr int max_prefix_groups = 1'000'000;
inline constexpr int max_connect_attempts = 100;
}  // namespace limits

enum class EndpointType { chat, completions };
enum class ArrivalPattern { poisson, constant };
enum class PromptFormat { auto_, token_ids, text };

struct LengthDistribution {
  double mean = 0;
  double stddev = 0;
  int min = 1;
};

// Who is benchmarked and how to talk to it: the endpoint and its API
// flavour, how prompts are encoded for it, and the connection settings.
// `profile`, `replay` and `eval` all take this part.
struct ClientConfig {
  // target
  std::string url = defaults::kServerUrl;
  std::string endpoint;  // empty = default path of endpoint_type
  EndpointType endpoint_type = EndpointType::chat;
  std::string model;     // empty = first model from /v1/models
  bool model_check = true;  // a --model that GET /v1/models does not list is an error (--no-model-check)
  double wait_for_server_s = 0;  // --wait-for-server: keep trying to reach the server this long
  bool streaming = true;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string api_key;
  std::vector<std::pair<std::string, std::string>> extra_inputs;  // key, JSON value text

  // prompt encoding
  PromptFormat prompt_format = PromptFormat::auto_;
  std::string tokenizer_path;  // HF tokenizer.json: exact text prompts, client output counts
  int token_id_min = 1000;
  int token_id_max = 30000;
  bool token_id_range_given = false;  // --token-id-range was passed (else it may be fitted to the vocabulary)

  // connections
  double connect_timeout_s = 10;
  double request_timeout_s = 21600;
  double keepalive_idle_s = 4;
  int connect_attempts = 3;
  bool tls_verify = false;

  std::string endpoint_path() const;
  bool uses_token_ids() const;  // completions endpoint with token-id prompts
  // Throws UserError naming the offending option.
  void validate() const;
};

// What a measured run writes and shows while it runs (`profile`, `run`,
// `replay`).
struct RunOutputConfig {
  // server metrics: scrape <url>/metrics (or server_metrics_url) while running
  bool server_metrics = false;
  std::string server_metrics_url;
  double server_metrics_interval_s = 1.0;
  // --slice-duration: time slices of this many seconds in
  // server_metrics_export.json (0: none; metrics/server_metrics_export.h).
  double slice_duration_s = 0;
  // --slo: service-level objectives (metrics/slo.h); the aggregate then has
  // goodput and slo_attainment.
  std::vector<std::string> slos;

  // The result folder. Unless -o names one (artifact_dir_given), a run
  // writes into a folder of its own under this base (common/output_folder.h).
  std::string artifact_dir = "artifacts";
  bool artifact_dir_given = false;
  bool overwrite = false;  // --overwrite: replace an earlier run's results in -o
  bool quiet = false;
  // The metric table and the Results line at the end (a caller that runs
  // many points, `capacity`, prints one line of its own per point instead).
  bool summary = true;
  double progress_interval_s = 1.0;

  void validate() const;
};

// The synthetic load of `profile` (and of `sim predict` in virtual time):
// how requests arrive, how many, for how long, and what their prompts look
// like.
struct LoadConfig {
  std::optional<int> concurrency;
  std::optional<double> request_rate;
  ArrivalPattern arrival = ArrivalPattern::poisson;
  std::optional<std::int64_t> request_count;
  std::optional<double> duration_s;
  double grace_period_s = 30.0;
  std::int64_t warmup_request_count = 0;
  int workers = 1;
  // --busy-poll: each worker spins on its event loop (a non-blocking epoll
  // per turn) instead of sleeping in epoll_wait, so an event is stamped
  // without the kernel's wake-up of a sleeping thread: tighter stamps for
  // one core per worker, always busy.
  bool busy_poll = false;
  // --poll-spin-us: after a worker last ran a handler it keeps polling its
  // event loop this long before it sleeps in epoll_wait. An event that
  // arrives inside the window is stamped without a thread wake-up; the CPU
  // spent is bounded by the window per burst of activity, so an idle or
  // slow stream costs almost nothing while a busy one is stamped as under
  // --busy-poll. 0 sleeps at once (as before this flag).
  int poll_spin_us = 200;
  std::uint64_t seed = 0;
  // --random-seed was given. Without it a measured run draws a fresh seed
  // (and records it), so back-to-back runs never send a server the prompts
  // its prefix cache still holds from the previous run.
  bool seed_given = false;
  double failed_request_threshold = 1.0;  // abort once the error ratio exceeds it (1 = never)
  double max_error_rate = 0.0;            // validity: failed/all profiling requests allowed (exit 1 above)

  LengthDistribution isl{defaults::kInputTokens, 0, 1};
  LengthDistribution osl{defaults::kOutputTokens, 0, 1};
  int prefix_length = 0;
  int num_prefix_groups = 0;

  void validate() const;
};

// Everything `agentperf profile` needs: the three parts above, as parsed
// from the command line, exported as `input_config` so a result file says
// how it was produced.
struct ProfileConfig : ClientConfig, LoadConfig, RunOutputConfig {
  // --repeat N: the same point N times, each with its own prompts, each in
  // its own folder, and the spread across the runs (cli run_profile_repeated).
  int repeat = 1;
  void validate() const;
};

const char* endpoint_type_name(EndpointType t) noexcept;
const char* arrival_pattern_name(ArrivalPattern a) noexcept;
const char* prompt_format_name(PromptFormat f) noexcept;
// input_config sections: "endpoint", "prompt" (encoding), "client" from the
// client part; "output" from the output part; "load" and the prompt lengths
// from the load part.
void to_json(nlohmann::json& j, const ClientConfig& c);
void to_json(nlohmann::json& j, const ProfileConfig& c);
// The connection-pool settings of a client configuration.
net::ClientOptions client_options(const ClientConfig& c);

}  // namespace agentperf
