// The individual measurements; each appends its section to the document.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <string>

#include "calibrate/gpu/json_writer.h"

namespace agentperf::calibrate::gpu {

struct Context {
  cudaDeviceProp prop{};
  bool quick = false;
  std::function<void(const std::string&)> progress;
  void say(const std::string& s) const { if (progress) progress(s); }
};

void measure_d2d_copy(const Context& ctx, JsonWriter& out);
void measure_host_link(const Context& ctx, JsonWriter& out);
void measure_gemm(const Context& ctx, JsonWriter& out);
void measure_kv_read(const Context& ctx, JsonWriter& out);
void measure_launch(const Context& ctx, JsonWriter& out);

}  // namespace agentperf::calibrate::gpu
