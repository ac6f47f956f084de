// Runs the GSM8K check against an endpoint: non-streamed requests,
// temperature 0, --concurrency in flight.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "eval/gsm8k.h"
#include "load/profile_config.h"
#include "common/record.h"

namespace agentperf::eval {

struct EvalConfig {
  ClientConfig client;  // url, endpoint type, model, headers, api key, timeouts
  int concurrency = 16;
  int max_tokens = 256;
};

struct EvalRecord {
  std::size_t index = 0;
  std::string response;
  Score score;
  std::optional<ErrorInfo> error;
  double latency_s = 0;
};

struct EvalResult {
  std::vector<EvalRecord> records;  // in dataset order
  double strict = 0, flexible = 0;  // accuracy over all questions (errors count as wrong)
  std::size_t errors = 0;
};

EvalResult run_gsm8k(const EvalConfig& cfg, const std::vector<Gsm8kItem>& items, const std::vector<Gsm8kItem>& shots,
                     const std::string& model);

}  // namespace agentperf::eval
