// `agentperf sim serve`: the simulated engine behind an OpenAI-compatible
// HTTP server. The engine runs on its own thread in real time: each step's
// modelled duration (divided by --time-scale) is slept before its tokens are
// released to the streams, so clients measure the model's timing.
//
// Endpoints: POST /v1/completions, /v1/chat/completions (streaming SSE with
// stream_interval chunking, usage with prompt_tokens_details.cached_tokens),
// GET /v1/models, /health, /metrics (Prometheus, SGLang names).
// Token content is synthetic: a request always generates max_tokens tokens
// (as with ignore_eos), since the simulator has no model to stop early.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sim/engine.h"

namespace agentperf::sim {

struct SimServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0 = ephemeral
  double time_scale = 1.0;
  std::string served_model_name;  // default: the model spec's served_model_name
  int default_max_tokens = 128;   // when a request names none
  // Keep-alive connections idle this long are closed, as SGLang's uvicorn
  // server does after SGLANG_TIMEOUT_KEEP_ALIVE seconds (default 5:
  // github.com/sgl-project/sglang, python/sglang/srt/environ.py
  // @ 0003215cf146), so a client meets the same stale-socket path as with
  // a real server.
  std::chrono::milliseconds idle_timeout{5000};
  // Larger bodies get 413. A 256k-token prompt is about 2 MB as token ids
  // and 1-4 MB as chat text; three 300 MB bodies once held 1.5 GB.
  std::size_t max_body_bytes = std::size_t(64) << 20;
};

class SimServer {
 public:
  SimServer(std::unique_ptr<Engine> engine, SimServerOptions opts);
  ~SimServer();
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  void start();  // binds and serves on background threads; throws UserError if the port is taken
  void stop();
  std::uint16_t port() const;
  std::string url() const;
  EngineStats stats() const;
  const Engine& engine() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace agentperf::sim
