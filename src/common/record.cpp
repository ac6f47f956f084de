#include "common/record.h"

namespace agentperf {

const char* phase_name(Phase p) noexcept { return p == Phase::warmup ? "warmup" : "profiling"; }

const char* token_source_name(TokenSource s) noexcept {
  switch (s) {
    case TokenSource::server_usage: return "server_usage";
    case TokenSource::client_exact: return "client_exact";
    case TokenSource::client_tokenizer: return "client_tokenizer";
    case TokenSource::client_chunks: return "client_chunks";
    case TokenSource::client_unverified: return "client_unverified";
    case TokenSource::none: return "none";
  }
  return "none";
}

}  // namespace agentperf
