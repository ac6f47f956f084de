// Helpers shared by the GPU measurements: error checks that throw, RAII
// buffers, event timing with medians, and the index hash that lets the host
// recompute any input element for correctness checks without copying inputs
// back from the device.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace agentperf::calibrate::gpu {

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* what, const char* file, int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what + ": " +
                           cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
#define AP_CUDA(call)                                                  \
  do {                                                                 \
    cudaError_t ap_err_ = (call);                                      \
    if (ap_err_ != cudaSuccess) ::agentperf::calibrate::gpu::throw_cuda(ap_err_, #call, __FILE__, __LINE__); \
  } while (0)
// After every launch: a bad configuration shows here, a fault at the next sync.
#define AP_LAUNCHED() AP_CUDA(cudaGetLastError())

// splitmix64 finaliser: element i of buffer `seed` is a pure function of
// (seed, i), on the device and on the host alike.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
// Uniform in [-1, 1).
__host__ __device__ inline float hash_unit(std::uint64_t seed, std::uint64_t i) {
  const std::uint32_t r = static_cast<std::uint32_t>(mix64(seed * 0x100000001B3ULL ^ i) >> 40);  // 24 bits
  return static_cast<float>(r) * (2.0f / 16777216.0f) - 1.0f;
}

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) { AP_CUDA(cudaMalloc(&p_, count * sizeof(T))); }
  ~DeviceBuffer() { if (p_) cudaFree(p_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), count_(o.count_) { o.p_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept { std::swap(p_, o.p_); std::swap(count_, o.count_); return *this; }
  DeviceBuffer(const DeviceBuffer&) = delete;
  T* get() const { return p_; }
  std::size_t count() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* p_ = nullptr;
  std::size_t count_ = 0;
};

// Page-locked host memory, mapped into the device's address space (kernels
// may read it directly, as HiCache's `kernel` I/O backend does).
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
    AP_CUDA(cudaHostAlloc(&p_, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    AP_CUDA(cudaHostGetDevicePointer(&dev_, p_, 0));
  }
  ~PinnedBuffer() { if (p_) cudaFreeHost(p_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  unsigned char* get() const { return static_cast<unsigned char*>(p_); }
  unsigned char* device_view() const { return static_cast<unsigned char*>(dev_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  void* dev_ = nullptr;
  std::size_t bytes_;
};

class Event {
 public:
  Event() { AP_CUDA(cudaEventCreate(&e_)); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s = nullptr) { AP_CUDA(cudaEventRecord(e_, s)); }

 private:
  cudaEvent_t e_{};
};

class Stream {
 public:
  Stream() { AP_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_{};
};

inline double elapsed_s(const Event& a, const Event& b) {
  AP_CUDA(cudaEventSynchronize(b.get()));
  float ms = 0;
  AP_CUDA(cudaEventElapsedTime(&ms, a.get(), b.get()));
  return ms * 1e-3;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Times `body` (which enqueues work on `stream`): `warmup` untimed calls,
// then `repeats` timed batches of `per_batch` calls; the median seconds per call.
template <class F>
double time_median_per_call(cudaStream_t stream, int warmup, int repeats, int per_batch, F&& body) {
  for (int i = 0; i < warmup; ++i) body();
  AP_CUDA(cudaStreamSynchronize(stream));
  Event a, b;
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    a.record(stream);
    for (int i = 0; i < per_batch; ++i) body();
    b.record(stream);
    samples.push_back(elapsed_s(a, b) / per_batch);
  }
  AP_LAUNCHED();
  return median(samples);
}

// Calls per timed batch so that a batch lasts about `target_s` (launch gaps
// and event resolution then stay small against it).
inline int calls_for(double one_call_s, double target_s = 2e-3, int most = 500) {
  if (one_call_s <= 0) return most;
  return std::clamp(static_cast<int>(target_s / one_call_s + 0.5), 1, most);
}

}  // namespace agentperf::calibrate::gpu
