#include "sim/engine_config.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace agentperf::sim {

const char* write_policy_name(WritePolicy p) noexcept {
  switch (p) {
    case WritePolicy::write_through: return "write_through";
    case WritePolicy::write_through_selective: return "write_through_selective";
    case WritePolicy::write_back: return "write_back";
  }
  return "write_through";
}

WritePolicy parse_write_policy(const std::string& s) {
  if (s == "write_through") return WritePolicy::write_through;
  if (s == "write_through_selective") return WritePolicy::write_through_selective;
  if (s == "write_back") return WritePolicy::write_back;
  throw UserError("--hicache-write-policy '" + s + "': expected write_through, write_through_selective or write_back");
}

const char* scheduler_name(SchedulerKind k) noexcept { return k == SchedulerKind::vllm ? "vllm" : "sglang"; }

int parse_kv_cache_dtype(const std::string& s) {
  if (s == "auto") return 0;
  if (s == "fp8" || s == "fp8_e4m3" || s == "fp8_e5m2") return 1;
  if (s == "bf16" || s == "bfloat16" || s == "fp16" || s == "float16" || s == "half") return 2;
  throw UserError("--kv-cache-dtype '" + s + "': expected " + kv_cache_dtype_choices());
}

const char* kv_cache_dtype_choices() noexcept {
  return "auto, fp8, fp8_e4m3, fp8_e5m2, bf16, bfloat16, fp16 or float16";
}

const std::vector<std::string>& dsa_backend_names() {
  static const std::vector<std::string> names = {"auto",          "flashmla_sparse",       "flashmla_sparse_q8",
                                                 "flashmla_kv",   "flashmla_auto",         "flashinfer_sparse_mla",
                                                 "fa3",           "tilelang",              "aiter",
                                                 "trtllm"};
  return names;
}

SchedulerKind parse_scheduler(const std::string& s) {
  if (s == "sglang") return SchedulerKind::sglang;
  if (s == "vllm") return SchedulerKind::vllm;
  throw UserError("--scheduler '" + s + "': expected sglang or vllm");
}

double sglang_default_mem_fraction_static(double gpu_memory_bytes, int tp, int chunked_prefill_size,
                                          int cuda_graph_max_bs, int dp_attention_size, bool speculative) {
  const double gpu_mib = gpu_memory_bytes / (1024.0 * 1024.0);
  double reserved_mib = 512;
  reserved_mib += std::max(chunked_prefill_size, 2048) * 1.5;
  reserved_mib += cuda_graph_max_bs * 2.0;
  reserved_mib += tp / 8.0 * 1024;
  if (dp_attention_size > 1) {
    reserved_mib += cuda_graph_max_bs * dp_attention_size * 3.0;
    if (cuda_graph_max_bs > 300) reserved_mib += cuda_graph_max_bs * dp_attention_size * 1.5;
  }
  if (gpu_mib > 60 * 1024) reserved_mib = std::max(reserved_mib, 10.0 * 1024);
  if (speculative) reserved_mib += 2 * 1024;
  return std::round((gpu_mib - reserved_mib) / gpu_mib * 1000.0) / 1000.0;
}

}  // namespace agentperf::sim
