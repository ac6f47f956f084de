// A started `sim serve` engine (Qwen3-8B on an H200, default flags) for
// tests that need a real OpenAI-compatible server with a prefix cache.
#pragma once
#include <memory>

#include "sim/engine.h"
#include "sim/sim_server.h"
#include "sim/specs.h"

namespace agentperf::test_support {

inline std::unique_ptr<sim::SimServer> start_sim_backend(sim::SimServerOptions so) {
  auto s = std::make_unique<sim::SimServer>(
      std::make_unique<sim::Engine>(sim::load_model_spec("qwen3-8b"), sim::load_hardware_spec("h200"), sim::EngineConfig{}), so);
  s->start();
  return s;
}

inline std::unique_ptr<sim::SimServer> start_sim_backend(double time_scale) {
  sim::SimServerOptions so;
  so.time_scale = time_scale;
  return start_sim_backend(so);
}

}  // namespace agentperf::test_support
