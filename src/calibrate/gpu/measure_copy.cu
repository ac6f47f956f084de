// Device-to-device copy bandwidth, and pinned host<->device bandwidth at the
// page sizes KV offload moves (32 KiB .. 8 MiB), alone and concurrent, by
// cudaMemcpyAsync per page and by a zero-copy gather kernel.
#include <cstring>
#include <numeric>
#include <random>

#include "calibrate/gpu/gpu_common.cuh"
#include "calibrate/gpu/measurements.h"

namespace agentperf::calibrate::gpu {
namespace {

__global__ void fill_words(std::uint32_t* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = static_cast<std::uint32_t>(mix64(seed ^ i));
}

__global__ void count_mismatches(const uint4* a, const uint4* b, std::size_t n, unsigned long long* bad) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const uint4 x = a[i], y = b[i];
    local += (x.x != y.x) | (x.y != y.y) | (x.z != y.z) | (x.w != y.w);
  }
  if (local) atomicAdd(bad, local);
}

// One block per page: copies page `i` of the mapped host buffer to device
// page `perm[i]` with 16-byte loads (HiCache's `kernel` I/O backend shape).
__global__ void gather_pages(const uint4* host, uint4* dev, const int* perm, std::size_t page_words) {
  const uint4* src = host + blockIdx.x * page_words;
  uint4* dst = dev + static_cast<std::size_t>(perm[blockIdx.x]) * page_words;
  for (std::size_t w = threadIdx.x; w < page_words; w += blockDim.x) dst[w] = src[w];
}

std::uint64_t mismatches(const void* a, const void* b, std::size_t bytes) {
  DeviceBuffer<unsigned long long> bad(1);
  AP_CUDA(cudaMemset(bad.get(), 0, sizeof(unsigned long long)));
  count_mismatches<<<1024, 256>>>(static_cast<const uint4*>(a), static_cast<const uint4*>(b), bytes / 16, bad.get());
  AP_LAUNCHED();
  unsigned long long h = 0;
  AP_CUDA(cudaMemcpy(&h, bad.get(), sizeof h, cudaMemcpyDeviceToHost));
  return h;
}

}  // namespace

void measure_d2d_copy(const Context& ctx, JsonWriter& out) {
  const std::size_t bytes = (ctx.quick ? 512ull : 2048ull) << 20;
  ctx.say("device-to-device copy, " + std::to_string(bytes >> 20) + " MiB");
  DeviceBuffer<std::uint32_t> src(bytes / 4), dst(bytes / 4);
  fill_words<<<1024, 256>>>(src.get(), src.count(), 11);
  AP_LAUNCHED();
  AP_CUDA(cudaMemset(dst.get(), 0xAB, bytes));  // poison: every word must be overwritten
  const int repeats = ctx.quick ? 5 : 21;
  const double s = time_median_per_call(nullptr, 3, repeats, 1, [&] {
    AP_CUDA(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, nullptr));
  });
  if (auto bad = mismatches(src.get(), dst.get(), bytes))
    throw std::runtime_error("device-to-device copy: " + std::to_string(bad) + " mismatching 16-byte words");
  out.begin_object("d2d_copy")
      .field("buffer_bytes", static_cast<std::int64_t>(bytes))
      .field("bytes_moved", static_cast<std::int64_t>(2 * bytes))  // read + write
      .field("seconds", s)
      .field("bytes_per_s", 2.0 * bytes / s)
      .field("repeats", repeats)
      .end_object();
}

void measure_host_link(const Context& ctx, JsonWriter& out) {
  const std::size_t total = (ctx.quick ? 128ull : 1024ull) << 20;
  const std::vector<std::size_t> pages = {32u << 10, 64u << 10, 128u << 10, 256u << 10, 512u << 10,
                                          1u << 20,  2u << 20,  4u << 20,   8u << 20,   total};
  PinnedBuffer host_a(total), host_b(total);
  DeviceBuffer<unsigned char> dev_a(total), dev_b(total);
  {
    DeviceBuffer<std::uint32_t> pattern(total / 4);
    fill_words<<<1024, 256>>>(pattern.get(), pattern.count(), 23);
    AP_LAUNCHED();
    AP_CUDA(cudaMemcpy(host_a.get(), pattern.get(), total, cudaMemcpyDeviceToHost));
  }
  Stream s1, s2;
  std::mt19937_64 rng(7);
  const int repeats = ctx.quick ? 3 : 7;
  out.begin_array("host_link");
  auto record = [&](const char* mode, std::size_t page, std::size_t bytes, double s) {
    out.begin_object()
        .field("mode", mode)
        .field("page_bytes", static_cast<std::int64_t>(page))
        .field("bytes", static_cast<std::int64_t>(bytes))
        .field("seconds", s)
        .field("bytes_per_s", bytes / s)
        .end_object();
  };
  for (std::size_t page : pages) {
    const std::size_t n = total / page;
    ctx.say("host link, " + std::to_string(page >> 10) + " KiB pages x " + std::to_string(n));
    // Pages land scattered on the device, as a host hit's pages do in the KV pool.
    std::vector<int> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    auto h2d = [&](cudaStream_t s) {
      for (std::size_t i = 0; i < n; ++i)
        AP_CUDA(cudaMemcpyAsync(dev_a.get() + perm[i] * page, host_a.get() + i * page, page, cudaMemcpyHostToDevice, s));
    };
    auto d2h = [&](cudaStream_t s, const unsigned char* from) {
      for (std::size_t i = 0; i < n; ++i)
        AP_CUDA(cudaMemcpyAsync(host_b.get() + i * page, from + perm[i] * page, page, cudaMemcpyDeviceToHost, s));
    };
    std::memset(host_b.get(), 0xCD, total);
    const double t_h2d = time_median_per_call(s1.get(), 1, repeats, 1, [&] { h2d(s1.get()); });
    const double t_d2h = time_median_per_call(s1.get(), 1, repeats, 1, [&] { d2h(s1.get(), dev_a.get()); });
    // Round trip through the same permutation must give the pattern back.
    if (std::memcmp(host_a.get(), host_b.get(), total) != 0)
      throw std::runtime_error("host link: data after H2D+D2H of " + std::to_string(page) + "-byte pages differs");
    record("h2d", page, total, t_h2d);
    record("d2h", page, total, t_d2h);

    // Concurrent: H2D into dev_a on one stream while D2H from dev_b on another.
    std::vector<double> both;
    Event start, end1, end2;
    for (int r = 0; r < repeats + 1; ++r) {
      start.record(s1.get());
      AP_CUDA(cudaStreamWaitEvent(s2.get(), start.get(), 0));
      h2d(s1.get());
      d2h(s2.get(), dev_b.get());
      end1.record(s1.get());
      end2.record(s2.get());
      const double a = elapsed_s(start, end1), b = elapsed_s(start, end2);
      if (r > 0) both.push_back(std::max(a, b));
    }
    record("h2d+d2h", page, 2 * total, median(both));

    if (page < total) {
      DeviceBuffer<int> dperm(n);
      AP_CUDA(cudaMemcpy(dperm.get(), perm.data(), n * sizeof(int), cudaMemcpyHostToDevice));
      AP_CUDA(cudaMemset(dev_a.get(), 0, total));
      const double t_kernel = time_median_per_call(s1.get(), 1, repeats, 1, [&] {
        gather_pages<<<static_cast<unsigned>(n), 512, 0, s1.get()>>>(
            reinterpret_cast<const uint4*>(host_a.device_view()), reinterpret_cast<uint4*>(dev_a.get()), dperm.get(),
            page / 16);
      });
      AP_CUDA(cudaStreamSynchronize(s1.get()));
      std::memset(host_b.get(), 0xCD, total);
      d2h(s1.get(), dev_a.get());
      AP_CUDA(cudaStreamSynchronize(s1.get()));
      if (std::memcmp(host_a.get(), host_b.get(), total) != 0)
        throw std::runtime_error("host link: zero-copy gather of " + std::to_string(page) + "-byte pages wrote wrong data");
      record("h2d_kernel", page, total, t_kernel);
    }
  }
  out.end_array();
}

}  // namespace agentperf::calibrate::gpu
