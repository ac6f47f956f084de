// Builds the HTTP request for one synthetic prompt: a small per-request JSON
// head (model, max_tokens, stream options, extra inputs) followed by the
// shared prompt pieces, written with one gathered write.
#pragma once
#include <memory>
#include <string>

#include "load/profile_config.h"
#include "load/prompt_synth.h"
#include "net/http_request.h"

namespace agentperf {

class RequestBuilder {
 public:
  RequestBuilder(const ProfileConfig& cfg, std::string model, std::string path);
  net::HttpRequest build(const SynthPrompt& prompt, const std::string& request_id,
                         const std::string& correlation_id) const;

 private:
  ProfileConfig cfg_;  // a copy: callers may reuse or change theirs
  std::string path_;
  std::string fixed_fields_;  // ,"model":...,"stream":... serialized once
  std::shared_ptr<const std::string> open_prompt_, joiner_, close_prompt_;
  bool overrides_max_tokens_ = false;
};

// Random 128-bit id in UUID text form (for X-Request-ID).
std::string make_request_id(std::uint64_t a, std::uint64_t b);

}  // namespace agentperf
