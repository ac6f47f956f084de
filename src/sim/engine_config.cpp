#include "sim/engine_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <regex>

#include "common/command_line.h"
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

void apply_scheduling_flags(const std::string& command, EngineConfig& c) {
  auto positive = [&](const char* flag, int& into) {
    if (const int n = command_flag_positive_int(command, flag)) into = n;
  };
  // The API-server loops: each tokenizes whole prompts in turn
  // (sim/front_end_queue.h), so one loop caps a long-context replay's rate.
  positive("--tokenizer-worker-num", c.tokenizer_workers);
  // vLLM's Python front end: --api-server-count processes, each tokenizing
  // on --renderer-num-workers threads (a ThreadPoolExecutor of that many
  // over as many tokenizer copies: vllm/renderers/base.py, the option in
  // vllm/config/model.py, default 1, from vLLM 0.25).
  if (const int servers = command_flag_positive_int(command, "--api-server-count"),
      threads = command_flag_positive_int(command, "--renderer-num-workers");
      servers > 0 || threads > 0)
    c.tokenizer_workers = std::max(servers, 1) * std::max(threads, 1);
  if (command_uses_rust_frontend(command)) use_rust_frontend(c);
  positive("--chunked-prefill-size", c.chunked_prefill_size);
  positive("--max-prefill-tokens", c.max_prefill_tokens);
  positive("--stream-interval", c.stream_interval);
  positive("--scheduler-recv-interval", c.scheduler_recv_interval);
  positive("--max-num-batched-tokens", c.max_num_batched_tokens);  // vLLM
  positive("--block-size", c.page_size);                           // vLLM's KV block: its prefix-match unit
  positive("--page-size", c.page_size);
  positive("--prefill-decode-interval", c.prefill_decode_interval);
  positive("--max-mamba-cache-size", c.max_mamba_cache_size);
  positive("--prefill-delayer-max-delay-passes", c.prefill_delayer_max_passes);
  if (command_flag_value(command, "--enable-prefill-delayer")) c.prefill_delayer = true;
  if (const auto v = command_flag_value(command, "--swa-full-tokens-ratio")) {
    double f = 0;
    if (std::sscanf(v->c_str(), "%lf", &f) == 1 && f > 0 && f <= 1) c.swa_full_tokens_ratio = f;
  }
  // vLLM's attention kernels: the target's, and the drafter's where the
  // speculative config names one (vllm/config/speculative.py,
  // SpeculativeConfig.attention_backend; the target's otherwise).
  if (const auto v = command_flag_value(command, "--attention-backend")) c.attention_backend = vllm_backend_name(*v);
  if (const auto v = command_flag_value(command, "--speculative-config")) {
    static const std::regex kDraftBackend(R"re(attention_backend\W+([A-Za-z0-9_]+))re");
    std::smatch m;
    if (std::regex_search(*v, m, kDraftBackend)) c.draft_attention_backend = vllm_backend_name(m[1].str());
  }
  // 0 is a setting of its own here (no cached tail: no prefix reuse).
  if (const auto v = command_flag_value(command, "--swa-prefix-tails")) {
    int n = -1;
    if (std::sscanf(v->c_str(), "%d", &n) == 1 && n >= 0) c.swa_prefix_tails = n;
  }
}

bool uses_triton_unified_attention(const std::string& backend) { return backend == "TRITON_ATTN"; }

std::string vllm_backend_name(std::string name) {
  name.erase(std::remove_if(name.begin(), name.end(), [](char ch) { return ch == '"' || ch == '\'' || ch == '\\'; }),
             name.end());
  for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return name;
}

bool turns_on_rust_frontend(const std::string& value) { return value == "1"; }

bool command_uses_rust_frontend(const std::string& command) {
  const auto v = command_flag_value(command, kRustFrontendEnv);
  return v && turns_on_rust_frontend(*v);
}

void use_rust_frontend(EngineConfig& c) { c.tokenizer_workers = kRustFrontendWorkers; }

}  // namespace agentperf::sim
