#include "load/profile_config.h"

#include <nlohmann/json.hpp>

#include "common/error.h"

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
}  // namespace

void ClientConfig::validate() const {
  if (uses_token_ids() && endpoint_type == EndpointType::chat)
    bad("--prompt-format token-ids needs --endpoint-type completions (chat messages are text)");
  if (token_id_min < 0 || token_id_max <= token_id_min) bad("--token-id-range must be MIN:MAX with 0 <= MIN < MAX");
  if (connect_timeout_s <= 0) bad("--connect-timeout must be > 0 seconds");
  if (request_timeout_s <= 0) bad("--request-timeout must be > 0 seconds");
  if (keepalive_idle_s < 0) bad("--keepalive-idle must be >= 0 seconds");
  if (connect_attempts < 1) bad("--connect-attempts must be at least 1");
}

void RunOutputConfig::validate() const {
  if (progress_interval_s <= 0) bad("--progress-interval must be > 0 seconds");
  if (server_metrics_interval_s <= 0) bad("--server-metrics-interval must be > 0 seconds");
}

void LoadConfig::validate() const {
  if (concurrency && *concurrency < 1) bad("--concurrency must be at least 1");
  if (request_rate && *request_rate <= 0) bad("--request-rate must be > 0 requests/s");
  if (!concurrency && !request_rate) bad("give --concurrency N (closed loop) or --request-rate R (open loop)");
  if (request_count && *request_count < 1) bad("--request-count must be at least 1");
  if (duration_s && *duration_s <= 0) bad("--duration must be > 0 seconds");
  if (grace_period_s < 0) bad("--grace-period must be >= 0 seconds");
  if (warmup_request_count < 0) bad("--warmup-request-count must be >= 0");
  if (workers < 1) bad("--workers must be at least 1");
  if (isl.mean < 1) bad("--isl must be at least 1 token");
  if (osl.mean < 1) bad("--osl must be at least 1 token");
  if (isl.stddev < 0 || osl.stddev < 0) bad("--isl-stddev/--osl-stddev must be >= 0");
  if (prefix_length < 0) bad("--prefix-length must be >= 0");
  if (num_prefix_groups < 0) bad("--num-prefix-groups must be >= 0");
  if (prefix_length > 0 && num_prefix_groups == 0) bad("--prefix-length needs --num-prefix-groups >= 1");
  if (num_prefix_groups > 0 && prefix_length == 0) bad("--num-prefix-groups needs --prefix-length >= 1");
  if (prefix_length > 0 && prefix_length >= isl.mean)
    bad("--prefix-length (" + std::to_string(prefix_length) + ") must be below --isl (" +
        std::to_string(static_cast<int>(isl.mean)) + "): --isl is the whole prompt, shared prefix included");
  if (failed_request_threshold <= 0 || failed_request_threshold > 1)
    bad("--failed-request-threshold must be in (0, 1]");
  if (max_error_rate < 0 || max_error_rate > 1) bad("--max-error-rate must be in [0, 1]");
}

void ProfileConfig::validate() const {
  LoadConfig::validate();
  ClientConfig::validate();
  RunOutputConfig::validate();
}

net::ClientOptions client_options(const ClientConfig& c) {
  net::ClientOptions o;
  o.connect_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(c.connect_timeout_s * 1000));
  o.request_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(c.request_timeout_s * 1000));
  o.keepalive_idle_limit = std::chrono::milliseconds(static_cast<std::int64_t>(c.keepalive_idle_s * 1000));
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
