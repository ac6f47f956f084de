#include "recipe/inferencex_map.h"

#include <algorithm>

namespace agentperf::recipe {

// Checkpoint (model, precision) -> data/models spec. The master configs of
// github.com/SemiAnalysisAI/InferenceX @ 843c6254ff69 (configs/nvidia-master.yaml,
// configs/amd-master.yaml) name these checkpoints in their agentic-coding
// entries; every one of them has a row. A checkpoint without a row loads
// (expand, dry-run refusal) but does not plan, and says so; a new spec in
// data/models takes one row here.
const std::vector<ModelSpecRow>& model_spec_rows() {
  static const std::vector<ModelSpecRow> rows = {
      {"nvidia/Qwen3.5-397B-A17B-NVFP4", "fp4", "qwen3.5-397b-a17b-nvfp4", "the spec's checkpoint"},
      {"nvidia/Qwen3.5-397B-A17B-NVFP4-V2", "fp4", "qwen3.5-397b-a17b-nvfp4",
       "no spec of its own: the same model in the same format (NVFP4); taken at the NVFP4 checkpoint's sizes (an assumption)"},
      {"Qwen/Qwen3.5-397B-A17B-FP8", "fp8", "qwen3.5-397b-a17b-fp8", "the spec's checkpoint"},
      {"amd/Qwen3.5-397B-A17B-MXFP4", "fp4", "qwen3.5-397b-a17b-mxfp4", "the spec's checkpoint"},
      {"zai-org/GLM-5.2-FP8", "fp8", "glm-5.2-fp8", "the spec's checkpoint"},
      {"nvidia/GLM-5.2-NVFP4", "fp4", "glm-5.2-nvfp4", "the spec's checkpoint"},
      {"amd/GLM-5.2-MXFP4", "fp4", "glm-5.2-mxfp4", "the spec's checkpoint"},
      {"deepseek-ai/DeepSeek-V4-Pro", "fp4", "deepseek-v4-pro-fp4", "the spec's checkpoint at InferenceX precision fp4"},
      {"deepseek-ai/DeepSeek-V4-Pro", "fp8", "deepseek-v4-pro-fp8",
       "the same checkpoint as InferenceX's fp8 entries serve it (H200, no FP4 path)"},
      {"deepseek-ai/DeepSeek-V4.1-Flash", "fp4", "deepseek-v4.1-flash-fp4",
       "the spec's checkpoint at InferenceX precision fp4"},
      {"moonshotai/Kimi-K3", "fp4", "kimi-k3-fp4", "the spec's checkpoint"},
      {"MiniMaxAI/MiniMax-M3-MXFP8", "fp8", "minimax-m3-fp8", "the spec's checkpoint"},
      {"nvidia/MiniMax-M3-NVFP4", "fp4", "minimax-m3-nvfp4", "the spec's checkpoint"},
      {"amd/MiniMax-M3-MXFP4", "fp4", "minimax-m3-mxfp4", "the spec's checkpoint"},
  };
  return rows;
}

// Runner label -> GPU spec, GPUs per node and host DRAM: the `hardware`
// section of configs/runners.yaml (InferenceX @ 843c6254ff69), which
// utils/matrix_logic/generate_sweep_configs.py reads for the DRAM budget of
// agentic entries; the GPU is the label's (cluster:<gpu>-<site>).
const std::vector<RunnerRow>& runner_rows() {
  static const std::vector<RunnerRow> rows = {
      {"cluster:h100-cw", "h100", 8, 1998848, "configs/runners.yaml hardware"},
      {"cluster:h100-dgxc", "h100", 8, 2063837, "configs/runners.yaml hardware"},
      {"cluster:h200-cw", "h200", 8, 1998848, "configs/runners.yaml hardware"},
      {"cluster:h200-dgxc", "h200", 8, 1471356, "configs/runners.yaml hardware"},
      {"cluster:h200-nb", "h200", 8, 1472512, "configs/runners.yaml hardware"},
      {"cluster:b200-dgxc", "b200", 8, 3095781, "configs/runners.yaml hardware"},
      {"cluster:b200-nscale", "b200", 8, 2063920, "configs/runners.yaml hardware"},
      {"b200-nscale", "b200", 8, 2063920, "configs/runners.yaml hardware"},
      {"cluster:b300-nv", "b300", 8, 2964436, "configs/runners.yaml hardware"},
      {"cluster:gb200-nv", "gb200", 4, 860160, "configs/runners.yaml hardware (4 GPUs per Grace tray; NVL72 domain)"},
      {"cluster:gb300-nv", "gb300", 4, 860160, "configs/runners.yaml hardware (4 GPUs per Grace tray; NVL72 domain)"},
      {"cluster:mi300x-amds", "mi300x", 8, 2321924, "configs/runners.yaml hardware"},
      {"cluster:mi300x-tw", "mi300x", 8, 2322328, "configs/runners.yaml hardware"},
      {"cluster:mi325x-amds", "mi325x", 8, 3091589, "configs/runners.yaml hardware"},
      {"cluster:mi355x-amds", "mi355x", 8, 3095781, "configs/runners.yaml hardware"},
      {"cluster:rtx6000pro-lat", "", 8, 1500000, "configs/runners.yaml hardware (no RTX PRO 6000 spec in data/hardware)"},
  };
  return rows;
}

const ModelSpecRow* find_model_spec(const std::string& model, const std::string& precision) {
  for (const auto& r : model_spec_rows())
    if (model == r.model && precision == r.precision) return &r;
  return nullptr;
}

const RunnerRow* find_runner(const std::string& runner) {
  for (const auto& r : runner_rows())
    if (runner == r.runner) return &r;
  return nullptr;
}

// InferenceX's benchmarks/benchmark_lib.sh resolve_trace_source (@ 843c6254ff69):
// without WEKA_LOADER_OVERRIDE, MODEL_PREFIX dsv4*, glm5.2*, minimaxm3* and
// kimik3* replay the unfiltered 062126 corpus, every other family its
// 256k-capped variant.
std::string default_corpus_for(const std::string& model_prefix) {
  for (const char* p : {"dsv4", "glm5.2", "minimaxm3", "kimik3"})
    if (model_prefix.rfind(p, 0) == 0) return "synth:cc-weka-1m";
  return "synth:cc-weka-256k";
}

// The agentic vLLM launchers that export VLLM_USE_RUST_FRONTEND=1: at
// 843c6254ff69 dsv4_fp4_b200_vllm_mtp.sh and dsv4_fp4_b300_vllm_mtp.sh
// (benchmarks/single_node/agentic/; no other agentic launcher there); after
// it, the DeepSeek-V4.1-Flash ones (dsv41flash_fp4_vllm_mtp.sh @ 0f2f80d3,
// which names the nightly-cd10ed6f image of the GB300 baseline in
// data/validation/agentx_points.json, and dsv41flash_fp4_gb300_vllm_mtp.sh
// @ 22a92a90).
bool launcher_uses_rust_frontend(const std::string& framework, const std::string& model_prefix,
                                 const std::string& hardware) {
  if (framework != "vllm") return false;
  if (model_prefix.rfind("dsv41", 0) == 0) return true;
  return model_prefix.rfind("dsv4", 0) == 0 && (hardware == "b200" || hardware == "b300");
}

// The agentic vLLM launchers that pass --attention-backend TRITON_ATTN at
// 843c6254ff69 (benchmarks/single_node/agentic/): minimaxm3_fp8_mi300x_mtp.sh,
// minimaxm3_fp8_mi325x_mtp.sh, minimaxm3_fp4_mi355x_mtp.sh (their EAGLE3
// drafter's speculative config names TRITON_ATTN too), and
// minimaxm3_fp8_h100_mtp.sh and minimaxm3_fp8_h200_mtp.sh (whose drafter's
// names FLASH_ATTN). The other agentic vLLM launchers keep the platform's
// default.
LauncherAttention launcher_attention_backend(const std::string& framework, const std::string& model_prefix,
                                             const std::string& hardware) {
  if (framework != "vllm" || model_prefix.rfind("minimaxm3", 0) != 0) return {};
  for (const char* h : {"mi300x", "mi325x", "mi355x"})
    if (hardware == h) return {"TRITON_ATTN", "TRITON_ATTN"};
  for (const char* h : {"h100", "h200"})
    if (hardware == h) return {"TRITON_ATTN", "FLASH_ATTN"};
  return {};
}

// The agentic launchers' memory fractions at 843c6254ff69
// (benchmarks/single_node/agentic/):
// SGLang --mem-fraction-static: dsv4_fp4_b200_sglang_mtp.sh 0.88;
// dsv4_fp4_b300_sglang_mtp.sh 0.88, with DP attention 0.95 (0.94 from conc
// 512, "room for FlashInfer's transient MoE workspace");
// dsv4_fp4_mi355x_sglang_mtp.sh 0.85; glm5.2_fp4_b200_sglang_mtp.sh 0.83;
// glm5.2_fp4_b300_sglang_mtp.sh, glm5.2_fp4_mi355x_sglang_mtp.sh and
// glm5.2_fp8_mi325x_mtp.sh 0.85; qwen3.5_fp8_h100_mtp.sh and
// qwen3.5_fp8_mi300x_mtp.sh 0.75; the other Qwen3.5 launchers 0.80.
// vLLM --gpu-memory-utilization: dsv4_fp4_b200_vllm_mtp.sh 0.90;
// dsv4_fp4_b300_vllm_mtp.sh 0.95, DEP8 0.92; dsv4_fp4_mi355x_vllm_mtp.sh
// 0.86; kimik3_fp4_b300_vllm_mtp.sh 0.92, 0.90 from conc 56;
// kimik3_fp4_mi355x_mtp.sh 0.90; the MiniMax-M3 launchers 0.90 (0.85 on
// MI355X).
double launcher_memory_fraction(const std::string& framework, const std::string& model_prefix,
                                const std::string& hardware, int tp, bool dp_attention, int conc) {
  auto is = [&](const char* prefix, const char* hw) { return model_prefix.rfind(prefix, 0) == 0 && hardware == hw; };
  // DeepSeek-V4.1-Flash (MODEL_PREFIX dsv41flash, after 843c6254ff69), none
  // of V4-Pro's values below: its SGLang B200 recipe passes 0.80 (InferenceX
  // pull request 3241; 0.92 for the TP2 arm of pull request 3346); its vLLM
  // launcher's value is not known here, so vLLM's default 0.90.
  if (model_prefix.rfind("dsv41", 0) == 0) {
    if (framework == "vllm") return 0.90;
    return hardware == "b200" && tp == 2 ? 0.92 : 0.80;
  }
  if (framework == "sglang") {
    if (is("dsv4", "b200")) return 0.88;
    if (is("dsv4", "b300")) return !dp_attention ? 0.88 : conc >= 512 ? 0.94 : 0.95;
    if (is("dsv4", "mi355x")) return 0.85;
    if (is("glm5.2", "b200")) return 0.83;
    if (is("glm5.2", "b300") || is("glm5.2", "mi355x") || is("glm5.2", "mi325x")) return 0.85;
    if (is("qwen3.5", "h100") || is("qwen3.5", "mi300x")) return 0.75;
  } else if (framework == "vllm") {
    if (is("dsv4", "b200")) return 0.90;
    if (is("dsv4", "b300")) return dp_attention && tp == 8 ? 0.92 : 0.95;
    if (is("dsv4", "mi355x")) return 0.86;
    if (is("kimik3", "b300")) return conc >= 56 ? 0.90 : 0.92;
    if (is("kimik3", "mi355x")) return 0.90;
    if (model_prefix.rfind("minimaxm3", 0) == 0) return hardware == "mi355x" ? 0.85 : 0.90;
  }
  return 0.80;
}

// The agentic launchers under benchmarks/single_node/agentic/ at
// 843c6254ff69 pin InferenceX's golden acceptance lengths
// (golden_al_distribution/*.yaml, the thinking-on curve of SPEED-Bench's
// coding split, one value per draft length):
//  - qwen3.5_*_mtp.sh: NEXTN, 3 steps, 3.39 (qwen3.5_mtp.yaml);
//  - dsv4_fp4_*_{sglang,vllm,atom}_mtp.sh: 3 tokens, 2.49 (dsv4_mtp.yaml);
//  - glm5.2_fp4_{b200,b300}_sglang_mtp.sh, glm5.2_fp8_mi325x_mtp.sh,
//    glm5.2_fp4_mi355x_atom_mtp.sh: 3 tokens, 2.99; glm5.2_fp4_mi355x_sglang_mtp.sh:
//    5 steps, 3.61 (glm5.2_mtp.yaml);
//  - minimaxm3_*_mtp.sh (EAGLE3 with the GQA draft head, and the TensorRT-LLM
//    launchers' max_draft_len 3): 3 tokens, 2.78 (minimaxm3_eagle3_gqa.yaml);
//  - kimik3_fp4_b300_vllm_mtp.sh: DSpark, 7 tokens at 3.84 up to conc 8, 3 at
//    3.00 up to 16, none above; kimik3_fp4_mi355x_mtp.sh: DSpark, 2 at 2.51;
//    kimik3_fp4_mi355x_atom_mtp.sh: 6 at 3.75 at conc 1, else 2 at 2.51.
// After that revision: DeepSeek-V4.1-Flash's launchers run DSpark blocks of
// 5 at 3.51 (InferenceX pull requests 3176 and 3241, dsv41flash_dspark.yaml),
// Qwen3.8-Flash-Next's NEXTN 3 steps at 2.32 (pull request 2756's launcher,
// qwen3.8next_mtp.yaml).
std::optional<LauncherSpeculation> launcher_speculation(const std::string& framework, const std::string& model_prefix,
                                                        const std::string& hardware, int conc) {
  auto starts = [&](const char* p) { return model_prefix.rfind(p, 0) == 0; };
  auto chain = [](int n, double al) { return LauncherSpeculation{n, false, al}; };
  auto block = [](int n, double al) { return LauncherSpeculation{n, true, al}; };
  if (starts("dsv41")) return block(5, 3.51);
  if (starts("dsv4")) return chain(3, 2.49);
  if (starts("qwen3.8")) return chain(3, 2.32);
  if (starts("qwen3.5")) return chain(3, 3.39);
  if (starts("glm5.2")) return hardware == "mi355x" && framework == "sglang" ? chain(5, 3.61) : chain(3, 2.99);
  if (starts("minimaxm3")) return chain(3, 2.78);
  if (starts("kimik3")) {
    if (hardware == "b300") return conc <= 8 ? block(7, 3.84) : conc <= 16 ? block(3, 3.00) : block(0, 0);
    if (hardware == "mi355x") return framework == "atom" && conc == 1 ? block(6, 3.75) : block(2, 2.51);
  }
  return std::nullopt;
}

std::optional<TrtllmSettings> launcher_trtllm_settings(const std::string& model_prefix, const std::string& hardware,
                                                       int tp, int conc) {
  // MiniMax-M3 NVFP4 with EAGLE3 on B200 and B300
  // (benchmarks/single_node/agentic/minimaxm3_fp4_b200_trt_mtp.sh and
  // minimaxm3_fp4_b300_trt_mtp.sh, InferenceX @ 843c6254ff69, last changed
  // 2026-08-21): free_gpu_memory_fraction 0.94, 128-token FP8 blocks with
  // reuse, max_num_tokens 16384, max_batch_size = CONC, three draft tokens,
  // stream_interval 20, and a host cache pinned per topology whatever the
  // arm's KV_OFFLOADING (B200: 200 GiB at TP8, else 250 GiB; B300: 288 GiB
  // at TP8, else 361.9 GiB).
  if (model_prefix.rfind("minimaxm3", 0) != 0 || (hardware != "b200" && hardware != "b300")) return std::nullopt;
  TrtllmSettings t;
  t.free_gpu_memory_fraction = 0.94;
  t.tokens_per_block = 128;
  t.kv_cache_dtype = "fp8";
  t.enable_block_reuse = true;
  t.max_num_tokens = 16384;
  t.max_batch_size = std::max(1, conc);
  t.max_draft_len = 3;
  t.stream_interval = 20;
  if (hardware == "b200")
    t.host_cache_bytes = tp == 8 ? 214748364800 : 268435456000;
  else
    t.host_cache_bytes = tp == 8 ? 309237645312 : 388554555392;
  return t;
}

std::optional<LauncherHostOffload> launcher_host_offload(const std::string& model_prefix, const std::string& hardware,
                                                         const std::string& backend, int tp, bool dp_attention,
                                                         std::int64_t total_cpu_dram_gb) {
  // The vLLM launchers under benchmarks/single_node/agentic/ in InferenceX @
  // 843c6254ff69 (TOTAL_CPU_DRAM_GB is decimal GB, the node's share for the
  // point's GPUs). SimpleCPUOffloadConnector takes cpu_bytes_to_use_per_rank
  // as it is, or cpu_bytes_to_use divided over the engine's TP x PP world
  // (an attention-DP rank's world is 1); lazy_offload false stores blocks as
  // they are computed, true when the GPU evicts them. Mooncake's store and
  // LMCache's server keep every stored chunk: write-through.
  const double gb = 1e9, gib = 1024.0 * 1024 * 1024, dram = static_cast<double>(total_cpu_dram_gb);
  const int ranks = std::max(1, tp);
  auto is = [&](const char* prefix, const char* hw, const char* b) {
    return model_prefix.rfind(prefix, 0) == 0 && hardware == hw && backend == b;
  };
  // dsv4_fp4_b200_vllm_mtp.sh: cpu_bytes_to_use_per_rank = DRAM x 1e9 / GPU_COUNT, eager, --block-size 256.
  // The launchers' integer arithmetic: DRAM x 1000^3 / GPUs, DRAM x 1024^3.
  const std::int64_t per_gpu_bytes = total_cpu_dram_gb * 1000 * 1000 * 1000 / ranks;
  const std::int64_t dram_gib_bytes = total_cpu_dram_gb * 1024 * 1024 * 1024;
  if (is("dsv4", "b200", "vllm-simple"))
    return LauncherHostOffload{"SimpleCPUOffloadConnector", dram * gb / ranks, false, 256,
                               "cpu_bytes_to_use_per_rank", per_gpu_bytes, true};
  // dsv4_fp4_b300_vllm_mtp.sh: cpu_bytes_to_use = DRAM x 1e9 / GPU_COUNT
  // (over the TP world again), lazy except under DP attention, block 256.
  if (is("dsv4", "b300", "vllm-simple"))
    return LauncherHostOffload{"SimpleCPUOffloadConnector", dram * gb / ranks / (dp_attention ? 1 : ranks),
                               !dp_attention, 256, "cpu_bytes_to_use", per_gpu_bytes, true};
  // kimik3_fp4_mi355x_mtp.sh: cpu_bytes_to_use_per_rank = DRAM x 1e9 / TP, eager (SIMPLE_LAZY_OFFLOAD unset).
  if (is("kimik3", "mi355x", "vllm-simple"))
    return LauncherHostOffload{"SimpleCPUOffloadConnector", dram * gb / ranks, false, 0, "cpu_bytes_to_use_per_rank",
                               per_gpu_bytes, false};
  // minimaxm3_fp4_b200_mtp.sh, minimaxm3_fp4_b300_mtp.sh: cpu_bytes_to_use = DRAM x 2^30 (the whole budget,
  // read as GiB), lazy, --block-size 128.
  if (is("minimaxm3", "b200", "vllm-simple") || is("minimaxm3", "b300", "vllm-simple"))
    return LauncherHostOffload{"SimpleCPUOffloadConnector", dram * gib / ranks, true, 128, "cpu_bytes_to_use",
                               dram_gib_bytes, false};
  // minimaxm3_fp8_h100_mtp.sh / _h200_mtp.sh: a Mooncake segment a rank of
  // (floor(DRAM x 1e9 / 2^30) - 414 GiB of checkpoint page cache) / TP, less
  // the 4 GiB local buffer (and on H100 the 26 GiB of weights offloaded to
  // the CPU), --block-size 128.
  if (is("minimaxm3", "h100", "mooncake") || is("minimaxm3", "h200", "mooncake")) {
    const auto dram_gib = static_cast<std::int64_t>(dram * gb / gib);
    const std::int64_t per_rank_gib = (dram_gib - 414) / ranks - (hardware == "h100" ? 26 : 0) - 4;
    if (per_rank_gib <= 0) return std::nullopt;
    return LauncherHostOffload{"MooncakeStoreConnector", static_cast<double>(per_rank_gib) * gib, false, 128, "", 0,
                               false};
  }
  // kimik3_fp4_b300_vllm_mtp.sh: a Mooncake segment of floor(DRAM / TP) GB a rank.
  if (is("kimik3", "b300", "mooncake"))
    return LauncherHostOffload{"MooncakeStoreConnector", static_cast<double>(total_cpu_dram_gb / ranks) * gb, false, 0,
                               "", 0, false};
  // minimaxm3_fp8_mi300x_mtp.sh, minimaxm3_fp4_mi355x_mtp.sh: one LMCache
  // server a TP rank with floor(DRAM / TP) GB of L1, --block-size 128.
  if (is("minimaxm3", "mi300x", "lmcache") || is("minimaxm3", "mi355x", "lmcache"))
    return LauncherHostOffload{"LMCacheMPConnector", static_cast<double>(total_cpu_dram_gb / ranks) * gb, false, 128,
                               "", 0, false};
  return std::nullopt;
}

}  // namespace agentperf::recipe
