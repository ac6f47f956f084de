// A paged-attention-like decode read: each request has one query per KV head
// and reads its context's K and V through a page table (64-token pages,
// scattered over the pool, as SGLang's token-to-KV map scatters them),
// computing softmax(q k^T / sqrt(d)) v with flash-decoding splits. Measures
// the bandwidth a decode step's attention gets at several context lengths
// and batch sizes; the output is checked against a float64 host reference.
#include <cuda_bf16.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "calibrate/gpu/gpu_common.cuh"
#include "calibrate/gpu/measurements.h"

namespace agentperf::calibrate::gpu {
namespace {

constexpr int kHeadDim = 128;
constexpr int kKvHeads = 8;
constexpr int kPageTokens = 64;
constexpr int kThreads = 128;              // 8 half-warps, one token each per iteration
constexpr int kLanes = 16;                 // lanes per token: 8 dims (16 bytes) each
constexpr int kGroups = kThreads / kLanes;
constexpr std::uint64_t kSeedK = 301, kSeedV = 302, kSeedQ = 303;

__global__ void fill_bf16(__nv_bfloat16* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(hash_unit(seed, i));
}

__device__ inline void unpack8(const uint4& u, float f[8]) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 v = __bfloat1622float2(h[i]);
    f[2 * i] = v.x;
    f[2 * i + 1] = v.y;
  }
}

// grid (batch * heads, splits). Partial results per split: o[D], m, l.
__global__ void __launch_bounds__(kThreads) paged_decode(const __nv_bfloat16* __restrict__ k_pool,
                                                        const __nv_bfloat16* __restrict__ v_pool,
                                                        const int* __restrict__ page_table, int pages_per_req, int ctx,
                                                        const __nv_bfloat16* __restrict__ q, int splits,
                                                        float* __restrict__ part_o, float* __restrict__ part_m,
                                                        float* __restrict__ part_l) {
  const int bh = blockIdx.x, b = bh / kKvHeads, h = bh % kKvHeads, split = blockIdx.y;
  const int group = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int chunk = (ctx + splits - 1) / splits;
  const int begin = split * chunk, end = min(ctx, begin + chunk);
  const float scale = rsqrtf(static_cast<float>(kHeadDim));

  float qf[8];
  unpack8(reinterpret_cast<const uint4*>(q + (std::size_t(b) * kKvHeads + h) * kHeadDim)[lane], qf);
  float m = -INFINITY, l = 0, acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const int* table = page_table + std::size_t(b) * pages_per_req;
  // Two tokens per half-warp per iteration, all four 16-byte loads issued
  // before any is used. Every lane of a warp runs the same number of
  // iterations: the shuffles need both half-warps present, also when one has
  // run out of tokens.
  for (int base = begin; base < end; base += 2 * kGroups) {
    uint4 ku[2], vu[2];
    bool valid[2];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int want = base + u * kGroups + group;
      valid[u] = want < end;
      const int t = min(want, end - 1);
      const std::size_t slot = std::size_t(table[t / kPageTokens]) * kPageTokens + t % kPageTokens;
      const std::size_t off = (slot * kKvHeads + h) * kHeadDim;
      ku[u] = reinterpret_cast<const uint4*>(k_pool + off)[lane];
      vu[u] = reinterpret_cast<const uint4*>(v_pool + off)[lane];
    }
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      float kf[8], vf[8];
      unpack8(ku[u], kf);
      unpack8(vu[u], vf);
      float dot = 0;
#pragma unroll
      for (int i = 0; i < 8; ++i) dot += qf[i] * kf[i];
#pragma unroll
      for (int o = kLanes / 2; o > 0; o /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, o, kLanes);
      if (!valid[u]) continue;
      const float s = dot * scale, m_new = fmaxf(m, s);
      const float corr = __expf(m - m_new), p = __expf(s - m_new);
      l = l * corr + p;
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] = acc[i] * corr + p * vf[i];
      m = m_new;
    }
  }
  // Merge the half-warps' running softmax states.
  __shared__ float sm_m[kGroups], sm_l[kGroups], sm_o[kGroups][kHeadDim];
  if (lane == 0) { sm_m[group] = m; sm_l[group] = l; }
#pragma unroll
  for (int i = 0; i < 8; ++i) sm_o[group][lane * 8 + i] = acc[i];
  __syncthreads();
  const int d = threadIdx.x;  // kThreads == kHeadDim
  float big = -INFINITY;
  for (int g = 0; g < kGroups; ++g) big = fmaxf(big, sm_m[g]);
  float total_l = 0, o = 0;
  if (big != -INFINITY)
    for (int g = 0; g < kGroups; ++g) {
      if (sm_m[g] == -INFINITY) continue;
      const float w = __expf(sm_m[g] - big);
      total_l += sm_l[g] * w;
      o += sm_o[g][d] * w;
    }
  const std::size_t part = std::size_t(bh) * splits + split;
  part_o[part * kHeadDim + d] = o;
  if (d == 0) { part_m[part] = big; part_l[part] = total_l; }
}

__global__ void combine_splits(const float* part_o, const float* part_m, const float* part_l, int splits, float* out) {
  const int bh = blockIdx.x, d = threadIdx.x;
  float big = -INFINITY;
  for (int s = 0; s < splits; ++s) big = fmaxf(big, part_m[std::size_t(bh) * splits + s]);
  float l = 0, o = 0;
  for (int s = 0; s < splits; ++s) {
    const std::size_t p = std::size_t(bh) * splits + s;
    if (part_m[p] == -INFINITY) continue;
    const float w = __expf(part_m[p] - big);
    l += part_l[p] * w;
    o += part_o[p * kHeadDim + d] * w;
  }
  out[std::size_t(bh) * kHeadDim + d] = o / l;
}

double bf16_value(std::uint64_t seed, std::size_t i) { return __bfloat162float(__float2bfloat16(hash_unit(seed, i))); }

// float64 attention output of request b, head h, dim 0..D-1.
std::vector<double> reference(const std::vector<int>& table, int pages_per_req, int ctx, int b, int h) {
  std::vector<double> scores(ctx), out(kHeadDim, 0.0);
  std::vector<double> qv(kHeadDim);
  for (int d = 0; d < kHeadDim; ++d) qv[d] = bf16_value(kSeedQ, (std::size_t(b) * kKvHeads + h) * kHeadDim + d);
  double big = -1e300;
  for (int t = 0; t < ctx; ++t) {
    const std::size_t slot = std::size_t(table[std::size_t(b) * pages_per_req + t / kPageTokens]) * kPageTokens + t % kPageTokens;
    double dot = 0;
    for (int d = 0; d < kHeadDim; ++d) dot += qv[d] * bf16_value(kSeedK, (slot * kKvHeads + h) * kHeadDim + d);
    scores[t] = dot / std::sqrt(double(kHeadDim));
    big = std::max(big, scores[t]);
  }
  double l = 0;
  for (int t = 0; t < ctx; ++t) {
    const double p = std::exp(scores[t] - big);
    l += p;
    const std::size_t slot = std::size_t(table[std::size_t(b) * pages_per_req + t / kPageTokens]) * kPageTokens + t % kPageTokens;
    for (int d = 0; d < kHeadDim; ++d) out[d] += p * bf16_value(kSeedV, (slot * kKvHeads + h) * kHeadDim + d);
  }
  for (double& v : out) v /= l;
  return out;
}

}  // namespace

void measure_kv_read(const Context& ctx, JsonWriter& out) {
  const std::size_t bytes_per_token = std::size_t(2) * kKvHeads * kHeadDim * sizeof(__nv_bfloat16);  // K + V
  const std::size_t cap = (ctx.quick ? 2ull : 12ull) << 30;  // KV bytes one configuration may read
  // The pool holds at least 4 x L2 of pages, so successive launches read
  // different pages (rotating page tables) and never time the cache.
  const std::size_t pool_floor = 4ull * ctx.prop.l2CacheSize;
  std::mt19937_64 rng(5);
  Stream stream;
  out.field("kv_read_layout", "one layer; per token K and V of [kv_heads=8][head_dim=128] bf16; 64-token pages; one query per KV head");
  out.begin_array("kv_read");
  const std::vector<int> contexts = ctx.quick ? std::vector<int>{1024, 8192, 32768}
                                              : std::vector<int>{1024, 4096, 16384, 65536, 131072};
  const std::vector<int> batches = ctx.quick ? std::vector<int>{1, 16} : std::vector<int>{1, 8, 32, 128};
  for (int c : contexts) {
    for (int batch : batches) {
      const std::size_t read_bytes = std::size_t(batch) * c * bytes_per_token;
      if (read_bytes > cap) continue;
      ctx.say("KV read, batch " + std::to_string(batch) + " x context " + std::to_string(c));
      const int pages_per_req = (c + kPageTokens - 1) / kPageTokens;
      const std::size_t pages_needed = std::size_t(batch) * pages_per_req;
      const std::size_t page_bytes = std::size_t(kPageTokens) * bytes_per_token;
      const int rotations = static_cast<int>(std::clamp<std::size_t>(pool_floor / (pages_needed * page_bytes) + 1, 1, 64));
      const std::size_t pool_pages = pages_needed * rotations;
      const std::size_t pool_elems = pool_pages * kPageTokens * kKvHeads * kHeadDim;
      DeviceBuffer<__nv_bfloat16> kp(pool_elems), vp(pool_elems), q(std::size_t(batch) * kKvHeads * kHeadDim);
      fill_bf16<<<2048, 256>>>(kp.get(), pool_elems, kSeedK);
      fill_bf16<<<2048, 256>>>(vp.get(), pool_elems, kSeedV);
      fill_bf16<<<64, 256>>>(q.get(), q.count(), kSeedQ);
      AP_LAUNCHED();
      // Rotation r uses a random permutation slice of the pool's pages.
      std::vector<int> all(pool_pages);
      std::iota(all.begin(), all.end(), 0);
      std::shuffle(all.begin(), all.end(), rng);
      DeviceBuffer<int> tables(pool_pages);
      AP_CUDA(cudaMemcpy(tables.get(), all.data(), pool_pages * sizeof(int), cudaMemcpyHostToDevice));

      const int bh = batch * kKvHeads;
      // Enough blocks to fill every SM (16 resident blocks of 128 threads each),
      // but at least 128 tokens per split.
      const int splits = std::clamp((16 * ctx.prop.multiProcessorCount + bh - 1) / bh, 1, std::max(1, c / 128));
      DeviceBuffer<float> po(std::size_t(bh) * splits * kHeadDim), pm(std::size_t(bh) * splits),
          pl(std::size_t(bh) * splits), o(std::size_t(bh) * kHeadDim);
      int turn = 0, last = 0;
      auto call = [&] {
        paged_decode<<<dim3(bh, splits), kThreads, 0, stream.get()>>>(kp.get(), vp.get(),
                                                                       tables.get() + std::size_t(turn) * pages_needed,
                                                                       pages_per_req, c, q.get(), splits, po.get(),
                                                                       pm.get(), pl.get());
        combine_splits<<<bh, kHeadDim, 0, stream.get()>>>(po.get(), pm.get(), pl.get(), splits, o.get());
        last = turn;
        turn = (turn + 1) % rotations;
      };
      const double one = time_median_per_call(stream.get(), 2, 3, 1, call);
      const double sec = time_median_per_call(stream.get(), 1, ctx.quick ? 5 : 11, calls_for(one), call);
      AP_CUDA(cudaStreamSynchronize(stream.get()));

      // Check request 0 (and the last request) against float64, on the rotation last run.
      std::vector<int> table(all.begin() + std::size_t(last) * pages_needed,
                             all.begin() + std::size_t(last + 1) * pages_needed);
      double err2 = 0, ref2 = 0;
      for (int b : {0, batch - 1}) {
        const int h = b % kKvHeads;
        const auto ref = reference(table, pages_per_req, c, b, h);
        std::vector<float> got(kHeadDim);
        AP_CUDA(cudaMemcpy(got.data(), o.get() + (std::size_t(b) * kKvHeads + h) * kHeadDim, kHeadDim * sizeof(float),
                           cudaMemcpyDeviceToHost));
        for (int d = 0; d < kHeadDim; ++d) {
          if (!std::isfinite(got[d])) throw std::runtime_error("KV read: non-finite output");
          err2 += (got[d] - ref[d]) * (got[d] - ref[d]);
          ref2 += ref[d] * ref[d];
        }
      }
      const double rel = std::sqrt(err2 / std::max(ref2, 1e-30));
      if (!(rel < 1e-2))
        throw std::runtime_error("KV read batch " + std::to_string(batch) + " context " + std::to_string(c) +
                                 ": output off by " + std::to_string(rel) + " (relative)");
      out.begin_object()
          .field("batch", batch).field("context", c)
          .field("kv_heads", kKvHeads).field("head_dim", kHeadDim).field("page_tokens", kPageTokens)
          .field("splits", splits)
          .field("bytes", static_cast<double>(read_bytes))
          .field("seconds", sec)
          .field("bytes_per_s", read_bytes / sec)
          .field("rel_error", rel)
          .end_object();
    }
  }
  out.end_array();
}

}  // namespace agentperf::calibrate::gpu
