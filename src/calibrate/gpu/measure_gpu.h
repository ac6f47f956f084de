// Measures the GPU this process runs on (agentperf calibrate, built with
// -DAGENTPERF_CUDA=ON, or the standalone agentperf-calibrate-gpu): copy and
// host-link bandwidth, BF16/FP8 GEMM at decode and prefill shapes, a paged
// KV read, and launch/graph overheads. Plain C++ interface: no CUDA types.
#pragma once
#include <functional>
#include <string>

namespace agentperf::calibrate::gpu {

struct MeasureOptions {
  int device = 0;
  bool quick = false;  // fewer repeats and smaller buffers (a smoke run)
  std::function<void(const std::string&)> progress;  // one line per step
};

// Runs every measurement and returns the measurements document
// (format "agentperf-gpu-measurements/1", docs/calibrate.md) as JSON text.
// Throws std::runtime_error on a CUDA error or a failed correctness check:
// a wrong result is never reported as a speed.
std::string measure_gpu(const MeasureOptions& opts);

}  // namespace agentperf::calibrate::gpu
