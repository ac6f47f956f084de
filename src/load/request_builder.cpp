#include "load/request_builder.h"

#include <nlohmann/json.hpp>

namespace agentperf {

RequestBuilder::RequestBuilder(const ProfileConfig& cfg, std::string model, std::string path)
    : cfg_(cfg), path_(std::move(path)) {
  nlohmann::json fixed = nlohmann::json::object();
  fixed["model"] = model;
  fixed["stream"] = cfg.streaming;
  if (cfg.streaming) fixed["stream_options"] = {{"include_usage", true}};
  for (const auto& [k, v] : cfg.extra_inputs) {
    fixed[k] = nlohmann::json::parse(v);
    if (k == "max_tokens" || k == "max_completion_tokens") overrides_max_tokens_ = true;
  }
  std::string dumped = fixed.dump();
  fixed_fields_ = dumped.substr(1, dumped.size() - 2);  // without the braces

  if (cfg.uses_token_ids()) {
    open_prompt_ = std::make_shared<const std::string>(",\"prompt\":[");
    close_prompt_ = std::make_shared<const std::string>("]}");
    joiner_ = std::make_shared<const std::string>(",");
  } else if (cfg.endpoint_type == EndpointType::completions) {
    open_prompt_ = std::make_shared<const std::string>(",\"prompt\":\"");
    close_prompt_ = std::make_shared<const std::string>("\"}");
  } else {
    open_prompt_ = std::make_shared<const std::string>(",\"messages\":[{\"role\":\"user\",\"content\":\"");
    close_prompt_ = std::make_shared<const std::string>("\"}]}");
  }
  // Exact-length text pieces start with their own space: no separator.
  if (!cfg.uses_token_ids())
    joiner_ = std::make_shared<const std::string>(cfg.tokenizer_path.empty() ? " " : "");
}

net::HttpRequest RequestBuilder::build(const SynthPrompt& prompt, const std::string& request_id,
                                       const std::string& correlation_id) const {
  net::HttpRequest req;
  req.method = "POST";
  req.path = path_;
  req.headers.reserve(cfg_.headers.size() + 3);
  req.headers.emplace_back("X-Request-ID", request_id);
  req.headers.emplace_back("X-Correlation-ID", correlation_id);
  if (!cfg_.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + cfg_.api_key);
  for (const auto& h : cfg_.headers) req.headers.push_back(h);

  std::string head = "{";
  head += fixed_fields_;
  if (!overrides_max_tokens_) {
    head += ",\"max_tokens\":";
    head += std::to_string(prompt.osl);
  }
  req.body.reserve(6);
  req.body.push_back(std::make_shared<const std::string>(std::move(head)));
  req.body.push_back(open_prompt_);
  if (prompt.prefix) {
    req.body.push_back(prompt.prefix);
    if (prompt.suffix && !prompt.suffix->empty()) req.body.push_back(joiner_);
  }
  if (prompt.suffix) req.body.push_back(prompt.suffix);
  req.body.push_back(close_prompt_);
  return req;
}

std::string make_request_id(std::uint64_t a, std::uint64_t b) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xFFFF), static_cast<unsigned>(a & 0xFFF),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3FFF)),
                static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFull));
  return buf;
}

}  // namespace agentperf
