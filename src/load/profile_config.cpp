#include "load/profile_config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "metrics/slo.h"

namespace agentperf {

const char* endpoint_type_name(EndpointType t) noexcept { return t == EndpointType::chat ? "chat" : "completions"; }
const char* arrival_pattern_name(ArrivalPattern a) noexcept { return a == ArrivalPattern::poisson ? "poisson" : "constant"; }
const char* prompt_format_name(PromptFormat f) noexcept {
  switch (f) {
    case PromptFormat::auto_: return "auto";
    case PromptFormat::token_ids: return "token-ids";
    case PromptFormat::text: return "text";
  }
  return "auto";
}

std::string ClientConfig::endpoint_path() const {
  if (!endpoint.empty()) return endpoint;
  return endpoint_type == EndpointType::chat ? "/v1/chat/completions" : "/v1/completions";
}

bool ClientConfig::uses_token_ids() const {
  if (prompt_format == PromptFormat::token_ids) return true;
  if (prompt_format == PromptFormat::text) return false;
  return endpoint_type == EndpointType::completions;
}

namespace {
[[noreturn]] void bad(const std::string& msg) { throw UserError(msg); }

// A bound as the CLI prints it (cli/cli_numbers.cpp): 1000000, 0.5.
std::string num(double v) {
  char buf[64];
  if (std::fabs(v) < 1e15 && v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

// The same one-line refusals as the CLI's, for callers that fill the
// config themselves. `!(v >= lo)` also refuses NaN.
void check_whole(const char* flag, double v, double lo, double hi, const char* what = "a whole number") {
  if (!(v >= lo) || v > hi || v != std::floor(v))
    bad(std::string(flag) + ": " + num(v) + " is not " + what + " from " + num(lo) + " to " + num(hi));
}
void check_seconds(const char* flag, double v, bool zero_ok, double hi = limits::max_seconds) {
  const std::string note = hi == limits::max_seconds ? " (30 days)" : hi == 86400 ? " (1 day)" : "";
  const std::string range = (zero_ok ? "from 0 to " : "above 0 and up to ") + num(hi) + note;
  if (!(v >= 0) || (!zero_ok && v == 0) || v > hi)
    bad(std::string(flag) + ": " + num(v) + " is not a number of seconds " + range);
}
void check_real(const char* flag, double v, double lo, double hi, bool lo_open, const char* what = "a number") {
  const std::string range = lo_open ? "above " + num(lo) + " and up to " + num(hi) : "from " + num(lo) + " to " + num(hi);
  if (!(v >= lo) || (lo_open && v == lo) || v > hi) bad(std::string(flag) + ": " + num(v) + " is not " + what + " " + range);
}

// Seconds to milliseconds, saturating at the limit: validate() refuses
// more, and a caller that skipped it gets the longest allowed wait, never a
// wrapped (negative or instant) one.
std::chrono::milliseconds to_ms(double s) {
  if (!(s > 0)) return std::chrono::milliseconds(0);
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::min(s, limits::max_seconds) * 1000));
}
}  // namespace

void ClientConfig::validate() const {
  if (uses_token_ids() && endpoint_type == EndpointType::chat)
    bad("--prompt-format token-ids needs --endpoint-type completions (chat messages are text)");
  if (token_id_min < 0 || token_id_max <= token_id_min) bad("--token-id-range must be MIN:MAX with 0 <= MIN < MAX");
  check_seconds("--connect-timeout", connect_timeout_s, false);
  check_seconds("--request-timeout", request_timeout_s, false);
  check_seconds("--keepalive-idle", keepalive_idle_s, true);
  check_whole("--connect-attempts", connect_attempts, 1, limits::max_connect_attempts);
}

void RunOutputConfig::validate() const {
  check_seconds("--progress-interval", progress_interval_s, false, limits::max_interval_s);
  check_seconds("--server-metrics-interval", server_metrics_interval_s, false, limits::max_interval_s);
  if (slice_duration_s != 0) check_seconds("--slice-duration", slice_duration_s, false, limits::max_interval_s);
  parse_slos(slos);  // throws, naming the --slo
}

void LoadConfig::validate() const {
  if (concurrency) check_whole("--concurrency", *concurrency, 1, limits::max_concurrency);
  if (request_rate)
    check_real("--request-rate", *request_rate, 0, limits::max_request_rate, true, "a rate in requests/s");
  if (!concurrency && !request_rate) bad("give --concurrency N (closed loop) or --request-rate R (open loop)");
  if (request_count)
    check_whole("--request-count", static_cast<double>(*request_count), 1, static_cast<double>(limits::max_request_count));
  if (duration_s) check_seconds("--duration", *duration_s, false);
  check_seconds("--grace-period", grace_period_s, true);
  check_whole("--warmup-request-count", static_cast<double>(warmup_request_count), 0,
              static_cast<double>(limits::max_request_count));
  check_whole("--workers", workers, 1, limits::max_workers);
  check_whole("--isl", isl.mean, 1, limits::max_tokens, "a whole number of tokens");
  check_whole("--osl", osl.mean, 1, limits::max_tokens, "a whole number of tokens");
  check_real("--isl-stddev", isl.stddev, 0, limits::max_tokens, false);
  check_real("--osl-stddev", osl.stddev, 0, limits::max_tokens, false);
  check_whole("--prefix-length", prefix_length, 0, limits::max_tokens, "a whole number of tokens");
  check_whole("--num-prefix-groups", num_prefix_groups, 0, limits::max_prefix_groups);
  if (prefix_length > 0 && num_prefix_groups == 0) bad("--prefix-length needs --num-prefix-groups >= 1");
  if (num_prefix_groups > 0 && prefix_length == 0) bad("--num-prefix-groups needs --prefix-length >= 1");
  if (prefix_length > 0 && prefix_length >= isl.mean)
    bad("--prefix-length (" + std::to_string(prefix_length) + ") must be below --isl (" +
        std::to_string(static_cast<int>(isl.mean)) + "): --isl is the whole prompt, shared prefix included");
  check_real("--failed-request-threshold", failed_request_threshold, 0, 1, true);
  check_real("--max-error-rate", max_error_rate, 0, 1, false);
}

void ProfileConfig::validate() const {
  LoadConfig::validate();
  ClientConfig::validate();
  RunOutputConfig::validate();
}

net::ClientOptions client_options(const ClientConfig& c) {
  net::ClientOptions o;
  o.connect_timeout = to_ms(c.connect_timeout_s);
  o.request_timeout = to_ms(c.request_timeout_s);
  o.keepalive_idle_limit = to_ms(c.keepalive_idle_s);
  o.connect_attempts = c.connect_attempts;
  o.tls_verify = c.tls_verify;
  return o;
}

void to_json(nlohmann::json& j, const ClientConfig& c) {
  nlohmann::json extra = nlohmann::json::object();
  for (const auto& [k, v] : c.extra_inputs) extra[k] = nlohmann::json::parse(v);
  nlohmann::json headers = nlohmann::json::object();
  for (const auto& [k, v] : c.headers) headers[k] = v;
  j = {
      {"endpoint", {{"url", c.url}, {"path", c.endpoint_path()}, {"type", endpoint_type_name(c.endpoint_type)},
                    {"model", c.model}, {"streaming", c.streaming}, {"headers", headers},
                    {"api_key_set", !c.api_key.empty()}, {"extra_inputs", extra}}},
      {"prompt", {{"format", c.uses_token_ids() ? "token-ids" : "text"},
                  {"token_id_range", {c.token_id_min, c.token_id_max}},
                  {"tokenizer", c.tokenizer_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.tokenizer_path)}}},
      {"client", {{"connect_timeout_s", c.connect_timeout_s}, {"request_timeout_s", c.request_timeout_s},
                  {"keepalive_idle_s", c.keepalive_idle_s}, {"connect_attempts", c.connect_attempts},
                  {"tls_verify", c.tls_verify}}},
  };
}

void to_json(nlohmann::json& j, const ProfileConfig& c) {
  auto opt = [](const auto& o) -> nlohmann::json { return o ? nlohmann::json(*o) : nlohmann::json(nullptr); };
  to_json(j, static_cast<const ClientConfig&>(c));
  j["load"] = {{"concurrency", opt(c.concurrency)}, {"request_rate", opt(c.request_rate)},
               {"arrival_pattern", arrival_pattern_name(c.arrival)}, {"request_count", opt(c.request_count)},
               {"benchmark_duration", opt(c.duration_s)}, {"benchmark_grace_period", c.grace_period_s},
               {"warmup_request_count", c.warmup_request_count}, {"workers", c.workers}, {"random_seed", c.seed},
               {"failed_request_threshold", c.failed_request_threshold}, {"max_error_rate", c.max_error_rate}};
  auto& prompt = j["prompt"];
  prompt["isl_mean"] = c.isl.mean;
  prompt["isl_stddev"] = c.isl.stddev;
  prompt["osl_mean"] = c.osl.mean;
  prompt["osl_stddev"] = c.osl.stddev;
  prompt["prefix_length"] = c.prefix_length;
  prompt["num_prefix_groups"] = c.num_prefix_groups;
  j["output"] = {{"artifact_dir", c.artifact_dir}};
}

}  // namespace agentperf
