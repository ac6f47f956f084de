// BF16 and FP8 (e4m3) GEMM through cuBLASLt at decode shapes (M = 1..256
// tokens against weight-sized N x K) and prefill shapes (M = 512..16384),
// Y[M,N] = X[M,K] * W[N,K]^T as a Linear layer computes it. Each shape's
// result is checked against a float64 host reference on sampled entries.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <random>

#include "calibrate/gpu/gpu_common.cuh"
#include "calibrate/gpu/measurements.h"

namespace agentperf::calibrate::gpu {
namespace {

#define AP_CUBLAS(call)                                                                                         \
  do {                                                                                                          \
    cublasStatus_t st_ = (call);                                                                                \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                                           \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + #call + ": " + \
                               "cuBLAS status " + std::to_string(static_cast<int>(st_)));                                                       \
  } while (0)

enum class Dtype { bf16, fp8 };
const char* name(Dtype d) { return d == Dtype::bf16 ? "bf16" : "fp8"; }
std::size_t elem_bytes(Dtype d) { return d == Dtype::bf16 ? 2 : 1; }

constexpr float kScale = 0.5f;  // inputs in [-0.5, 0.5): fp8 keeps them finite and well resolved

__global__ void fill_input(void* p, std::size_t n, std::uint64_t seed, bool fp8) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float v = kScale * hash_unit(seed, i);
    if (fp8) static_cast<__nv_fp8_e4m3*>(p)[i] = __nv_fp8_e4m3(v);
    else static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
  }
}

// The value the device holds at element i, as the host sees it.
double input_value(Dtype d, std::uint64_t seed, std::size_t i) {
  const float v = kScale * hash_unit(seed, i);
  if (d == Dtype::fp8) return static_cast<float>(__nv_fp8_e4m3(v));
  return __bfloat162float(__float2bfloat16(v));
}

struct Shape {
  int m, n, k;
  const char* phase;
};

class Matmul {
 public:
  Matmul(cublasLtHandle_t lt, Dtype dt, const Shape& s, void* workspace, std::size_t ws_bytes)
      : lt_(lt), workspace_(workspace), ws_bytes_(ws_bytes) {
    const cudaDataType_t in = dt == Dtype::bf16 ? CUDA_R_16BF : CUDA_R_8F_E4M3;
    AP_CUBLAS(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    AP_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    AP_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    // Column-major view: D[N,M] = W^T-op(K x N stored) * X(K x M). W row-major [N,K] is column-major [K,N].
    AP_CUBLAS(cublasLtMatrixLayoutCreate(&a_, in, s.k, s.n, s.k));
    AP_CUBLAS(cublasLtMatrixLayoutCreate(&b_, in, s.k, s.m, s.k));
    AP_CUBLAS(cublasLtMatrixLayoutCreate(&d_, CUDA_R_16BF, s.n, s.m, s.n));
    cublasLtMatmulPreference_t pref;
    AP_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    AP_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes_,
                                                   sizeof ws_bytes_));
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt_, op_, a_, b_, d_, d_, pref, 1, &heur_, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    supported_ = st == CUBLAS_STATUS_SUCCESS && found > 0;
  }
  ~Matmul() {
    cublasLtMatrixLayoutDestroy(a_);
    cublasLtMatrixLayoutDestroy(b_);
    cublasLtMatrixLayoutDestroy(d_);
    cublasLtMatmulDescDestroy(op_);
  }
  bool supported() const { return supported_; }
  void run(const void* w, const void* x, void* y, cudaStream_t s) {
    const float alpha = 1.0f, beta = 0.0f;
    AP_CUBLAS(cublasLtMatmul(lt_, op_, &alpha, w, a_, x, b_, &beta, y, d_, y, d_, &heur_.algo, workspace_, ws_bytes_, s));
  }

 private:
  cublasLtHandle_t lt_;
  void* workspace_;
  std::size_t ws_bytes_;
  cublasLtMatmulDesc_t op_{};
  cublasLtMatrixLayout_t a_{}, b_{}, d_{};
  cublasLtMatmulHeuristicResult_t heur_{};
  bool supported_ = false;
};

}  // namespace

void measure_gemm(const Context& ctx, JsonWriter& out) {
  cublasLtHandle_t lt;
  AP_CUBLAS(cublasLtCreate(&lt));
  const std::size_t ws_bytes = 32u << 20;
  DeviceBuffer<unsigned char> workspace(ws_bytes);

  std::vector<Shape> shapes;
  // Decode: a few tokens against weight matrices larger than L2 (an 8192 x 8192
  // projection, and a 4096 x 14336 MLP down projection).
  for (int m : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
    shapes.push_back({m, 8192, 8192, "decode"});
    if (!ctx.quick) shapes.push_back({m, 4096, 14336, "decode"});
  }
  for (int m : {512, 1024, 2048, 4096, 8192, 16384})
    if (!ctx.quick || m <= 2048) shapes.push_back({m, 8192, 8192, "prefill"});

  const std::size_t l2 = static_cast<std::size_t>(ctx.prop.l2CacheSize);
  Stream stream;
  std::mt19937_64 rng(99);
  out.begin_array("gemm");
  for (Dtype dt : {Dtype::bf16, Dtype::fp8}) {
    for (const Shape& s : shapes) {
      ctx.say(std::string("GEMM ") + name(dt) + " M=" + std::to_string(s.m) + " N=" + std::to_string(s.n) +
              " K=" + std::to_string(s.k));
      Matmul mm(lt, dt, s, workspace.get(), ws_bytes);
      if (!mm.supported()) {
        out.begin_object().field("dtype", name(dt)).field("m", s.m).field("n", s.n).field("k", s.k)
            .field("phase", s.phase).field("supported", false).end_object();
        continue;
      }
      const std::size_t eb = elem_bytes(dt);
      const std::size_t w_bytes = std::size_t(s.n) * s.k * eb, x_bytes = std::size_t(s.m) * s.k * eb;
      // Several identical copies of the operands, used in turn, so a call never
      // finds its inputs in L2 from the call before.
      const int copies = static_cast<int>(std::clamp<std::size_t>((3 * l2) / (w_bytes + x_bytes) + 1, 1, 8));
      std::vector<DeviceBuffer<unsigned char>> w, x;
      for (int c = 0; c < copies; ++c) {
        w.emplace_back(w_bytes);
        x.emplace_back(x_bytes);
        fill_input<<<1024, 256>>>(w.back().get(), std::size_t(s.n) * s.k, 1000 + s.n, dt == Dtype::fp8);
        fill_input<<<1024, 256>>>(x.back().get(), std::size_t(s.m) * s.k, 2000 + s.m, dt == Dtype::fp8);
        AP_LAUNCHED();
      }
      DeviceBuffer<__nv_bfloat16> y(std::size_t(s.m) * s.n);
      AP_CUDA(cudaMemset(y.get(), 0xFF, y.bytes()));  // NaN poison
      int turn = 0;
      auto call = [&] {
        mm.run(w[turn].get(), x[turn].get(), y.get(), stream.get());
        turn = (turn + 1) % copies;
      };
      const double one = time_median_per_call(stream.get(), 3, 3, 1, call);
      const int per_batch = calls_for(one);
      const double sec = time_median_per_call(stream.get(), 1, ctx.quick ? 5 : 11, per_batch, call);
      AP_CUDA(cudaStreamSynchronize(stream.get()));

      // Check sampled entries against a float64 reference.
      double err2 = 0, ref2 = 0;
      int nan_count = 0;
      for (int t = 0; t < 24; ++t) {
        const int i = static_cast<int>(rng() % s.m), j = static_cast<int>(rng() % s.n);
        __nv_bfloat16 got;
        AP_CUDA(cudaMemcpy(&got, y.get() + std::size_t(i) * s.n + j, sizeof got, cudaMemcpyDeviceToHost));
        double ref = 0;
        for (int k = 0; k < s.k; ++k)
          ref += input_value(dt, 2000 + s.m, std::size_t(i) * s.k + k) * input_value(dt, 1000 + s.n, std::size_t(j) * s.k + k);
        const double g = __bfloat162float(got);
        if (!std::isfinite(g)) ++nan_count;
        err2 += (g - ref) * (g - ref);
        ref2 += ref * ref;
      }
      const double rel = std::sqrt(err2 / std::max(ref2, 1e-30));
      if (nan_count || !(rel < 2e-2))
        throw std::runtime_error(std::string("GEMM ") + name(dt) + " M=" + std::to_string(s.m) + ": result off by " +
                                 std::to_string(rel) + " (relative), " + std::to_string(nan_count) + " non-finite");
      const double flops = 2.0 * s.m * double(s.n) * s.k;
      const double bytes = double(w_bytes + x_bytes) + 2.0 * s.m * s.n;
      out.begin_object()
          .field("dtype", name(dt)).field("phase", s.phase)
          .field("m", s.m).field("n", s.n).field("k", s.k)
          .field("supported", true)
          .field("seconds", sec)
          .field("flops", flops).field("bytes", bytes)
          .field("flops_per_s", flops / sec).field("bytes_per_s", bytes / sec)
          .field("rel_error", rel)
          .end_object();
    }
  }
  out.end_array();
  cublasLtDestroy(lt);
}

}  // namespace agentperf::calibrate::gpu
