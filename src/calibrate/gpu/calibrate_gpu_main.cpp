// agentperf-calibrate-gpu: the GPU measurements alone, for machines that have
// the CUDA toolkit but not agentperf's other build dependencies. Its output
// becomes a hardware profile with `agentperf calibrate profile`.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "calibrate/gpu/measure_gpu.h"

int main(int argc, char** argv) {
  agentperf::calibrate::gpu::MeasureOptions opts;
  std::string out_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") opts.quick = true;
    else if (a == "--device" && i + 1 < argc) opts.device = std::atoi(argv[++i]);
    else if ((a == "-o" || a == "--output") && i + 1 < argc) out_path = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: agentperf-calibrate-gpu -o MEASUREMENTS.json [--device N] [--quick]\n"
                   "Measures this GPU (copy, host link, GEMM, paged KV read, launch overheads);\n"
                   "turn the result into a hardware profile with `agentperf calibrate profile`.\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  if (out_path.empty()) {
    std::fprintf(stderr, "agentperf-calibrate-gpu: error: -o MEASUREMENTS.json is required\n");
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  opts.progress = [start](const std::string& s) {
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "calibrate: [%7.1f s] %s\n", t, s.c_str());
  };
  try {
    const std::string doc = agentperf::calibrate::gpu::measure_gpu(opts);
    const std::string tmp = out_path + ".partial";
    {
      std::ofstream f(tmp, std::ios::binary);
      f << doc;
      if (!f.flush()) throw std::runtime_error("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), out_path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + out_path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "agentperf-calibrate-gpu: error: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "calibrate: wrote %s\n", out_path.c_str());
  return 0;
}
