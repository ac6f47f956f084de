#include "calibrate/gpu/measure_gpu.h"

#include <cublasLt.h>

#include <ctime>

#include "calibrate/gpu/gpu_common.cuh"
#include "calibrate/gpu/measurements.h"

namespace agentperf::calibrate::gpu {
namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void describe_device(const Context& ctx, int device, JsonWriter& out) {
  const cudaDeviceProp& p = ctx.prop;
  int driver = 0, runtime = 0, clock_khz = 0, mem_clock_khz = 0, bus_bits = 0;
  AP_CUDA(cudaDriverGetVersion(&driver));
  AP_CUDA(cudaRuntimeGetVersion(&runtime));
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
  std::size_t free_b = 0, total_b = 0;
  AP_CUDA(cudaMemGetInfo(&free_b, &total_b));
  out.begin_object("device")
      .field("name", std::string(p.name))
      .field("compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor))
      .field("multiprocessors", p.multiProcessorCount)
      .field("l2_bytes", p.l2CacheSize)
      .field("memory_bytes", static_cast<std::int64_t>(p.totalGlobalMem))
      .field("memory_free_bytes", static_cast<std::int64_t>(free_b))
      .field("sm_clock_khz", clock_khz)
      .field("memory_clock_khz", mem_clock_khz)
      .field("memory_bus_bits", bus_bits)
      // Peak DRAM bandwidth implied by clock and bus (double data rate).
      .field("memory_bandwidth_from_clock", 2.0 * mem_clock_khz * 1e3 * bus_bits / 8)
      .field("pci_bus_id", std::to_string(p.pciDomainID) + ":" + std::to_string(p.pciBusID))
      .field("driver_version", driver)
      .field("runtime_version", runtime)
      .field("cublaslt_version", static_cast<std::int64_t>(cublasLtGetVersion()))
      .end_object();
}

}  // namespace

std::string measure_gpu(const MeasureOptions& opts) {
  int count = 0;
  AP_CUDA(cudaGetDeviceCount(&count));
  if (opts.device < 0 || opts.device >= count)
    throw std::runtime_error("no CUDA device " + std::to_string(opts.device) + " (" + std::to_string(count) + " visible)");
  AP_CUDA(cudaSetDevice(opts.device));
  Context ctx;
  AP_CUDA(cudaGetDeviceProperties(&ctx.prop, opts.device));
  ctx.quick = opts.quick;
  ctx.progress = opts.progress;

  JsonWriter out;
  out.begin_object();
  out.field("format", "agentperf-gpu-measurements/1");
  out.field("created", utc_now());
  out.field("quick", opts.quick);
  describe_device(ctx, opts.device, out);
  measure_launch(ctx, out);
  measure_d2d_copy(ctx, out);
  measure_host_link(ctx, out);
  measure_gemm(ctx, out);
  measure_kv_read(ctx, out);
  out.end_object();
  return out.str() + "\n";
}

}  // namespace agentperf::calibrate::gpu
