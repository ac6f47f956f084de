// Client settings of one target's connection pool (see http_client.h),
// free of Asio types so configuration code can build them.
#pragma once
#include <chrono>
#include <cstddef>

namespace agentperf::net {

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds request_timeout{21'600'000};  // AIPerf's default: 6 h
  std::chrono::milliseconds keepalive_idle_limit{4'000};
  int connect_attempts = 3;
  bool tls_verify = false;
  std::size_t max_error_body_bytes = 64 << 10;
  std::size_t max_body_bytes = 256u << 20;
};

}  // namespace agentperf::net
