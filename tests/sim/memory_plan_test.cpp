// Pool sizes for the InferenceX recipe (Qwen3.5-397B-A17B NVFP4 on B200,
// fp8 KV, bf16 SSM, MTP with 4 draft tokens), against values worked by hand
// from SGLang's sizing rules (docs/sim-qwen35-b200-tp4.md gives each step).
#include "sim/memory_plan.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "sim/published_pools.h"
#include "sim/step_time.h"

using namespace agentperf;
using namespace agentperf::sim;

namespace {
EngineConfig recipe(int tp, int conc, bool hicache) {
  EngineConfig c;
  c.tp = tp;
  c.mem_fraction_static = 0.80;
  c.max_running_requests = 2 * conc;
  c.spec.enabled = true;
  c.spec.num_steps = 3;
  c.spec.num_draft_tokens = 4;
  if (hicache) {
    c.page_size = 64;
    c.hicache.enabled = true;
    c.hicache.size_gb = 144;
    c.hicache.write_policy = WritePolicy::write_through_selective;
  }
  return c;
}
constexpr double MiB = 1024.0 * 1024;
}  // namespace

TEST(ModelSpec, PerTokenAndPerRequestSizes) {
  auto m = load_model_spec("qwen3.5-397b-a17b-nvfp4");
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(1), 15360);  // 15 x 2 x 2 x 256 x 1
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(2), 7680);
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(4), 7680);   // 2 KV heads replicated past TP2
  EXPECT_DOUBLE_EQ(m.draft_kv_bytes_per_token_rank(4), 512);
  // conv 12,288 x 3 x 2 + SSM 64 x 128 x 128 x 2, over 45 layers
  EXPECT_DOUBLE_EQ(m.state_bytes_per_request_rank(1), (12288.0 * 3 * 2 + 64.0 * 128 * 128 * 2) * 45);
  EXPECT_NEAR(m.state_bytes_per_request_rank(4) / MiB, 23.3, 0.05);
  EXPECT_DOUBLE_EQ(m.attention_flops_per_token_per_ctx(), 491520);
}

TEST(MemoryPlan, RecipeTp4MatchesTheNotes) {
  auto p = plan_memory(load_model_spec("qwen3.5-397b-a17b-nvfp4"), load_hardware_spec("b200"), recipe(4, 64, false));
  // rest = 179 GiB - 251.2 GB/4 (incl. MTP) - 35.8 GiB = 84.6 GiB (notes), less
  // the draft's own embed + lm_head, 4.068 GB / 4 = 0.95 GiB, resident while
  // the pools are sized: 83.7 GiB
  EXPECT_NEAR(p.rest_bytes / (1 << 30), 84.6 - 0.95, 0.5);
  // notes: ~759 slots, less 0.95 GiB x 0.9/1.9 / (23.3 MiB x (1 + 4/3)) = 8.4
  EXPECT_NEAR(static_cast<double>(p.mamba_slots), 759 - 8.4, 8);
  EXPECT_EQ(p.intermediate_state_requests, 128);                  // min(2 x 64, slots / 3)
  EXPECT_NEAR(static_cast<double>(p.kv_tokens) / 1e6, 7.3, 0.1);  // notes: ~7.3 M
  EXPECT_EQ(p.max_running_requests, 128);
}

TEST(MemoryPlan, RecipeTp2IsSlotBound) {
  auto p = plan_memory(load_model_spec("qwen3.5-397b-a17b-nvfp4"), load_hardware_spec("b200"), recipe(2, 32, false));
  // notes: ~118, less the draft's embed + head 4.068 GB / 2 = 1.89 GiB:
  // 1.89 GiB x 0.9/1.9 / (46.6 MiB x (1 + 4/3)) = 8.4 slots fewer
  EXPECT_NEAR(static_cast<double>(p.mamba_slots), 118 - 8.4, 4);
  EXPECT_LT(p.max_running_requests, 64);                        // slots / 3 ~ 36 < 2 x 32
  // notes: ~1.9 M tokens; the KV budget loses 1.89 GiB x 1/1.9 = 1.0 GiB at
  // 7.68 KB/token (+512 B draft): ~0.13 M tokens, plus the fewer slots' share
  EXPECT_NEAR(static_cast<double>(p.kv_tokens) / 1e6, 1.9 - 0.2, 0.15);
}

TEST(MemoryPlan, HiCacheHostPoolsPerRank) {
  auto p = plan_memory(load_model_spec("qwen3.5-397b-a17b-nvfp4"), load_hardware_spec("b200"), recipe(4, 64, true));
  EXPECT_EQ(p.host_kv_tokens, 18750000 / 64 * 64);  // floor(144e9 / 7,680), page-aligned
  EXPECT_NEAR(static_cast<double>(p.host_mamba_slots), 5896, 5);  // notes: 5,896
  EXPECT_EQ(p.kv_tokens % 64, 0);
}

TEST(MemoryPlan, DenseModelHasNoStatePool) {
  EngineConfig c;
  c.tp = 1;
  auto p = plan_memory(load_model_spec("qwen3-32b"), load_hardware_spec("h200"), c);
  EXPECT_EQ(p.mamba_slots, 0);
  // (150.75e9 x 0.8 - 65.5e9) / 131,072 B per token
  EXPECT_NEAR(static_cast<double>(p.kv_tokens), (150.75e9 * 0.8 - 65.5e9) / 131072.0, 1.0);
}

TEST(MemoryPlan, ModelThatDoesNotFitIsAClearError) {
  EngineConfig c;
  c.tp = 1;
  try {
    plan_memory(load_model_spec("qwen3.5-397b-a17b-nvfp4"), load_hardware_spec("b200"), c);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos) << e.what();
  }
}

TEST(Specs, UnknownAndBrokenSpecsNameTheProblem) {
  EXPECT_THROW(load_model_spec("no-such-model"), UserError);
  const auto path = std::filesystem::temp_directory_path() / "agentperf_bad_hw.json";
  std::ofstream(path) << R"({"name":"x","hbm_bytes":1e9,"hbm_bandwidth":1e12,"peak_flops":{"bf16":1e15}})";
  try {
    load_hardware_spec(path.string());
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("nvlink_bandwidth_one_way"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

// InferenceX's agentic-coding matrix (configs/nvidia-master.yaml and
// configs/amd-master.yaml @ SemiAnalysisAI/InferenceX 843c6254ff69): every
// (model, GPU, TP) it runs whose model has a shipped spec plans with MTP at
// the default mem_fraction_static, weights sharded over TP (DeepSeek-V4-Pro
// with InferenceX's --max-running-requests, 2 x concurrency up to 32: SGLang
// sizes its HCA compressor states for it). Left out: the entries whose TP is
// not the weight-sharding degree (GLM-5.2 FP8 H200 "TP1" is PCP8; Qwen3.5
// NVFP4 GB300 "TP1" is DEP1 in a disaggregated pair; MiniMax-M3 NVFP4 GB300
// "TP1" is DEP4; Kimi-K3's B200 and GB200 "TP8" are TP8 x PP2, GB200 "TP4"
// is DEP16, H200 "TP8" is TP8 x DP4 with EP32).
TEST(MemoryPlan, InferenceXAgenticMatrixPairsPlan) {
  struct Pair {
    const char* model;
    const char* gpu;
    int tp;
    int max_running = 0;  // 0: memory only
  };
  const Pair pairs[] = {
      {"qwen3.5-397b-a17b-fp8", "b200", 4},     {"qwen3.5-397b-a17b-fp8", "b200", 8},
      {"qwen3.5-397b-a17b-fp8", "b300", 2},     {"qwen3.5-397b-a17b-fp8", "b300", 4},
      {"qwen3.5-397b-a17b-fp8", "h100", 8},     {"qwen3.5-397b-a17b-fp8", "h200", 8},
      {"qwen3.5-397b-a17b-fp8", "mi300x", 8},   {"qwen3.5-397b-a17b-fp8", "mi325x", 2},
      {"qwen3.5-397b-a17b-fp8", "mi325x", 4},   {"qwen3.5-397b-a17b-fp8", "mi325x", 8},
      {"qwen3.5-397b-a17b-mxfp4", "mi355x", 2}, {"qwen3.5-397b-a17b-mxfp4", "mi355x", 4},
      {"qwen3.5-397b-a17b-nvfp4", "b200", 2},   {"qwen3.5-397b-a17b-nvfp4", "b200", 4},
      {"qwen3.5-397b-a17b-nvfp4", "b300", 2},   {"qwen3.5-397b-a17b-nvfp4", "b300", 4},
      {"qwen3.5-397b-a17b-nvfp4", "gb300", 2},  {"qwen3.5-397b-a17b-nvfp4", "gb300", 4},
      {"qwen3.5-397b-a17b-nvfp4", "gb300", 8},  {"qwen3.5-397b-a17b-nvfp4", "gb300", 16},
      {"qwen3.5-397b-a17b-nvfp4", "gb200", 2},  {"qwen3.5-397b-a17b-nvfp4", "gb200", 4},
      {"glm-5.2-mxfp4", "mi355x", 4},           {"glm-5.2-mxfp4", "mi355x", 8},
      {"glm-5.2-nvfp4", "b200", 8},             {"glm-5.2-nvfp4", "b300", 8},
      {"glm-5.2-nvfp4", "gb200", 4},            {"glm-5.2-nvfp4", "gb200", 8},
      {"glm-5.2-nvfp4", "gb200", 16},           {"glm-5.2-nvfp4", "gb300", 4},
      {"glm-5.2-nvfp4", "gb300", 8},            {"glm-5.2-nvfp4", "gb300", 16},
      {"glm-5.2-fp8", "h200", 8},               {"glm-5.2-fp8", "mi325x", 8},
      {"deepseek-v4-pro-fp4", "b200", 8, 64},   {"deepseek-v4-pro-fp4", "b300", 4, 64},
      {"deepseek-v4-pro-fp4", "b300", 8, 64},   {"deepseek-v4-pro-fp4", "gb200", 8, 64},
      {"deepseek-v4-pro-fp4", "gb200", 12, 64}, {"deepseek-v4-pro-fp4", "gb200", 16, 64},
      {"deepseek-v4-pro-fp4", "gb300", 4, 64},  {"deepseek-v4-pro-fp4", "gb300", 8, 64},
      {"deepseek-v4-pro-fp4", "gb300", 12, 64}, {"deepseek-v4-pro-fp4", "gb300", 16, 64},
      {"deepseek-v4-pro-fp4", "gb300", 32, 64}, {"deepseek-v4-pro-fp4", "mi355x", 8, 64},
      {"deepseek-v4-pro-fp8", "h200", 8, 64},
      {"kimi-k3-fp4", "b300", 8},               {"kimi-k3-fp4", "gb300", 8},
      {"kimi-k3-fp4", "mi355x", 8},             {"kimi-k3-fp4", "gb200", 16},
      {"kimi-k3-fp4", "h200", 16},
      {"minimax-m3-fp8", "h100", 8},            {"minimax-m3-fp8", "h200", 8},
      {"minimax-m3-fp8", "mi300x", 8},          {"minimax-m3-fp8", "mi325x", 8},
      {"minimax-m3-nvfp4", "b200", 4},          {"minimax-m3-nvfp4", "b200", 8},
      {"minimax-m3-nvfp4", "b300", 2},          {"minimax-m3-nvfp4", "b300", 4},
      {"minimax-m3-nvfp4", "b300", 8},          {"minimax-m3-nvfp4", "gb200", 4},
      {"minimax-m3-nvfp4", "gb200", 8},         {"minimax-m3-nvfp4", "gb300", 2},
      {"minimax-m3-nvfp4", "gb300", 4},         {"minimax-m3-mxfp4", "mi355x", 2},
      {"minimax-m3-mxfp4", "mi355x", 4},
  };
  for (const auto& [model, gpu, tp, max_running] : pairs) {
    EngineConfig c;
    c.tp = tp;
    c.max_running_requests = max_running;
    c.spec.enabled = true;
    c.spec.num_draft_tokens = 4;
    const auto m = load_model_spec(model);
    MemoryPlan p;
    ASSERT_NO_THROW(p = plan_memory(m, load_hardware_spec(gpu), c)) << model << " on " << gpu << " TP" << tp;
    EXPECT_GT(p.kv_tokens, 100000) << model << " on " << gpu << " TP" << tp;
    EXPECT_GT(p.max_running_requests, 0) << model << " on " << gpu << " TP" << tp;
  }
}

TEST(MemoryPlan, MlaKvIsNotDividedByTp) {
  // GLM-5.2 NVFP4 on GB300: the KV per token is the same at TP4 and TP8; the
  // pool grows only by the weights freed. Blackwell's default DSA backend
  // (trtllm) stores the raw FP8 latent: 78 x (576 + 132 index key) B.
  EngineConfig c;
  c.tp = 4;
  const auto m = load_model_spec("glm-5.2-nvfp4");
  const auto h = load_hardware_spec("gb300");
  const auto p4 = plan_memory(m, h, c);
  c.tp = 8;
  const auto p8 = plan_memory(m, h, c);
  EXPECT_DOUBLE_EQ(p4.kv_bytes_per_token_rank, 78.0 * 708);
  EXPECT_DOUBLE_EQ(p8.kv_bytes_per_token_rank, 78.0 * 708);
  // (288e9 x 0.8 - 445.7e9 / TP) / 55,224 B
  EXPECT_NEAR(static_cast<double>(p4.kv_tokens), (288e9 * 0.8 - 445.7e9 / 4) / 55224.0, 1.0);
  EXPECT_NEAR(static_cast<double>(p8.kv_tokens), (288e9 * 0.8 - 445.7e9 / 8) / 55224.0, 1.0);
}

TEST(MemoryPlan, CompressedPoolFollowsSglangsDsv4Configurator) {
  // DeepSeek-V4-Pro FP4 on B200 TP8 with MTP and --max-running-requests 64:
  // rest = 179 GiB x 0.8 - (849.42 + 13.95) GB / 8; the HCA compressor
  // states for 65 slots come off first; then tokens at (61 + 1)/61 x the
  // 12,913.84 B per full token (target + MTP draft, as SGLang inflates it).
  const auto m = load_model_spec("deepseek-v4-pro-fp4");
  const auto h = load_hardware_spec("b200");
  EngineConfig c;
  c.tp = 8;
  c.max_running_requests = 64;
  c.spec.enabled = true;
  c.spec.num_draft_tokens = 4;
  const auto p = plan_memory(m, h, c);
  const double rest = h.hbm_usable_bytes * 0.8 - (822.05e9 + 27.37e9 + 13.95e9) / 8;
  EXPECT_NEAR(p.rest_bytes, rest, 1.0);
  const double states = std::ceil((65.0 * 256 + 257) / 128) * 128 * (2 * 512 * 4) * 31;
  EXPECT_DOUBLE_EQ(p.compress_state_bytes, states);
  EXPECT_NEAR(static_cast<double>(p.kv_tokens), (rest - states) / (12913.8375 * 62 / 61), 1.0);
  // Unset, SGLang sizes the states for clamp(full tokens / 1M context x 512,
  // 2048, 4096) requests: GB300 TP16 has ~13 M full tokens, so 4096; B200
  // TP8 would need 2048 x 32.5 MB = 66.6 GB and has no room left for KV
  // (SGLang: "Not enough memory").
  c.max_running_requests = 0;
  c.tp = 16;
  const auto gb = plan_memory(m, load_hardware_spec("gb300"), c);
  EXPECT_DOUBLE_EQ(gb.compress_state_bytes, std::ceil((4097.0 * 256 + 257) / 128) * 128 * 4096 * 31);
  c.tp = 8;
  EXPECT_THROW(plan_memory(m, h, c), UserError);
}

// --max-total-tokens caps the pool below what memory allows (the GLM-5.2 FP8
// MI325X AgentX launcher runs a 1,048,576-token pool this way), and is a
// no-op above it.
// --max-mamba-cache-size N (SGLang handle_max_mamba_cache's explicit
// branch): N state slots, verify intermediates for min(max_running, N / 3)
// requests x D, and everything else of the rest to the KV pool.
TEST(MemoryPlan, MaxMambaCacheSizeSetsTheStateSlots) {
  const auto m = load_model_spec("qwen3.5-397b-a17b-nvfp4");
  const auto hw = load_hardware_spec("b200");
  auto c = recipe(4, 64, false);
  const auto ratio_based = plan_memory(m, hw, c);
  c.max_mamba_cache_size = 160;
  const auto p = plan_memory(m, hw, c);
  EXPECT_EQ(p.mamba_slots, 160);
  EXPECT_EQ(p.intermediate_state_requests, 53);  // min(2 x 64, 160 / 3)
  EXPECT_EQ(p.max_running_requests, 53);
  const double state = m.state_bytes_per_request_rank(4);
  const double kv_budget = p.rest_bytes - 160 * state - 53 * 4 * state;
  const double per_token = m.kv_bytes_per_token_rank(4) + m.draft_kv_bytes_per_token_rank(4);
  EXPECT_NEAR(static_cast<double>(p.kv_tokens), std::floor(kv_budget / per_token), 1.0);
  EXPECT_DOUBLE_EQ(p.rest_bytes, ratio_based.rest_bytes);
  EXPECT_GT(p.kv_tokens, ratio_based.kv_tokens);  // fewer slots than the ratio's ~750 leave more for KV
}

TEST(MemoryPlan, MaxTotalTokensCapsTheKvPool) {
  const auto m = load_model_spec("glm-5.2-fp8");
  const auto hw = load_hardware_spec("mi325x");
  EngineConfig c;
  c.tp = 8;
  c.mem_fraction_static = 0.85;
  const auto free = plan_memory(m, hw, c);
  ASSERT_GT(free.kv_tokens, 1048576);
  c.max_total_tokens = 1048576;
  const auto capped = plan_memory(m, hw, c);
  EXPECT_EQ(capped.kv_tokens, 1048576);
  c.max_total_tokens = free.kv_tokens * 2;
  EXPECT_EQ(plan_memory(m, hw, c).kv_tokens, free.kv_tokens);
}

// --kv-cache-dtype: the shipped Qwen3-8B spec holds FP8 KV (1 byte); served
// with BF16 KV each token takes twice the bytes, so the same HBM holds half
// the tokens, and auto keeps the spec's. The engine serves the same model
// the plan sized. Spellings are SGLang's and vLLM's.
TEST(MemoryPlan, KvCacheDtypeSizesThePool) {
  const auto m = load_model_spec("qwen3-8b");
  const auto hw = load_hardware_spec("h200");
  ASSERT_EQ(m.kv_dtype_bytes, 1);
  EngineConfig fp8, bf16, autocfg;
  fp8.kv_cache_dtype_bytes = parse_kv_cache_dtype("fp8_e4m3");
  bf16.kv_cache_dtype_bytes = parse_kv_cache_dtype("bfloat16");
  autocfg.kv_cache_dtype_bytes = parse_kv_cache_dtype("auto");
  const auto p8 = plan_memory(m, hw, fp8), p16 = plan_memory(m, hw, bf16), pa = plan_memory(m, hw, autocfg);
  EXPECT_DOUBLE_EQ(p16.kv_bytes_per_token_rank, 2 * p8.kv_bytes_per_token_rank);
  EXPECT_NEAR(static_cast<double>(p8.kv_tokens) / static_cast<double>(p16.kv_tokens), 2.0, 0.01);
  EXPECT_EQ(pa.kv_tokens, p8.kv_tokens);
  EXPECT_EQ(served_model(m, bf16, hw).kv_dtype_bytes, 2);
  EXPECT_EQ(parse_kv_cache_dtype("fp16"), 2);
  EXPECT_EQ(parse_kv_cache_dtype("fp8"), 1);
  try {
    parse_kv_cache_dtype("int4");
    ADD_FAILURE() << "int4 accepted";
  } catch (const agentperf::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("--kv-cache-dtype 'int4': expected auto"), std::string::npos) << e.what();
  }
}

// vLLM on gfx942 has no MX kernel and holds an MXFP8 checkpoint in BF16
// (memory_plan.cpp served_model). MiniMax-M3 by hand from its config: 57
// MoE layers x 128 experts x 3 x 6144 x 3072 = 413.12e9 routed params,
// 2 B each = 826.24e9 B; 10.593e9 other linear params x 2 B + the BF16
// embedding and head 4.916e9 B = 26.102e9 B. At TP8: 106.54e9 B a rank.
TEST(MemoryPlan, VllmOnGfx942HoldsAnMxfp8CheckpointInBf16) {
  const auto m = load_model_spec("minimax-m3-fp8");
  EngineConfig vllm;
  vllm.scheduler = SchedulerKind::vllm;
  vllm.tp = 8;
  vllm.mem_fraction_static = 0.9;
  const auto mi300x = served_model(m, vllm, load_hardware_spec("mi300x"));
  EXPECT_DOUBLE_EQ(mi300x.moe->routed_weight_bytes, 413.12e9 * 2);
  EXPECT_DOUBLE_EQ(mi300x.dense_weight_bytes, 10.593e9 * 2 + 4.916e9);
  EXPECT_EQ(mi300x.compute_dtype, "bf16");
  EXPECT_NEAR(plan_memory(m, load_hardware_spec("mi300x"), vllm).weights_bytes_rank,
              (413.12e9 * 2 + 10.593e9 * 2 + 4.916e9) / 8, 1e6);
  // MI355X (gfx950) runs MX natively, and SGLang's path is not this one: the
  // checkpoint's own bytes (1.03125 B a parameter) and FP8 math.
  const auto mi355x = served_model(m, vllm, load_hardware_spec("mi355x"));
  EXPECT_DOUBLE_EQ(mi355x.moe->routed_weight_bytes, m.moe->routed_weight_bytes);
  EXPECT_EQ(mi355x.compute_dtype, "fp8");
  EngineConfig sglang = vllm;
  sglang.scheduler = SchedulerKind::sglang;
  EXPECT_DOUBLE_EQ(served_model(m, sglang, load_hardware_spec("mi300x")).dense_weight_bytes, m.dense_weight_bytes);
  // Twice the bytes in every decode read: a decode step on MI300X is slower.
  const auto hw = load_hardware_spec("mi300x");
  StepTimeModel as_bf16(mi300x, hw, vllm), as_mx(m, hw, vllm);
  EXPECT_GT(as_bf16.decode_round(8, 8 * 100000.0).total_s, 1.3 * as_mx.decode_round(8, 8 * 100000.0).total_s);
}

// SGLang's DSA pool (model_runner_kv_cache_mixin.py calculate_mla_kv_cache_dim):
// an FP8 latent is 576 B raw or 656 B in FlashMLA's scaled layout, by the DSA
// backend, and "auto" picks the backend by platform. GLM-5.2: 78 layers,
// latent 512 + rope 64, index key 128 + 4 B scale on top; by hand:
// scaled 78 x (512 + 16 + 128 + 132) = 61,464 B, raw 78 x (576 + 132) = 55,224 B,
// BF16 78 x (1152 + 132) = 100,152 B whatever the backend.
TEST(MemoryPlan, ADsaModelsFp8LatentLayoutFollowsItsBackendAndPlatform) {
  const auto glm = load_model_spec("glm-5.2-nvfp4");
  auto per_token = [&](const std::string& hw, const std::string& backend, const std::string& kv) {
    EngineConfig c;
    c.tp = 8;
    c.mem_fraction_static = 0.85;
    c.kv_cache_dtype_bytes = parse_kv_cache_dtype(kv);
    c.dsa_prefill_backend = c.dsa_decode_backend = backend;
    return plan_memory(glm, load_hardware_spec(hw), c).kv_bytes_per_token_rank;
  };
  EXPECT_DOUBLE_EQ(per_token("h200", "auto", "fp8"), 61464);     // Hopper: FlashMLA
  EXPECT_DOUBLE_EQ(per_token("b200", "auto", "fp8"), 55224);     // Blackwell: trtllm
  EXPECT_DOUBLE_EQ(per_token("b300", "auto", "fp8"), 55224);
  EXPECT_DOUBLE_EQ(per_token("h200", "trtllm", "fp8"), 55224);   // named, on any platform
  EXPECT_DOUBLE_EQ(per_token("b200", "flashmla_kv", "fp8"), 61464);
  EXPECT_DOUBLE_EQ(per_token("mi355x", "auto", "fp8"), 55224);   // ROCm: TileLang, raw
  EXPECT_DOUBLE_EQ(per_token("mi355x", "fa3", "fp8"), 61464);
  EXPECT_DOUBLE_EQ(per_token("h200", "auto", "bf16"), 100152);
  EXPECT_DOUBLE_EQ(per_token("mi355x", "tilelang", "bf16"), 100152);
  // A model without sparse attention keeps its plain MLA latent (DeepSeek-R1's
  // spec: BF16 KV, 61 layers), even with an FP8 cache on Hopper.
  EngineConfig c;
  c.tp = 8;
  const auto r1 = load_model_spec("deepseek-r1-fp8");
  const auto h200 = load_hardware_spec("h200");
  EXPECT_DOUBLE_EQ(plan_memory(r1, h200, c).kv_bytes_per_token_rank, 61.0 * 576 * 2);
  c.kv_cache_dtype_bytes = 1;
  EXPECT_DOUBLE_EQ(plan_memory(r1, h200, c).kv_bytes_per_token_rank, 61.0 * 576);
}

// Published pools state tokens and bytes; their ratio is the pool's bytes per
// token, which the plan must reproduce (the pool's size also holds runtime
// memory the plan does not know, so tokens are shown, not held here).
// data/validation/kv_pools.json: B300 169.98 GiB / "3.3M" (two digits, so
// 2 %), GB300 152.51 GiB / 2,965,312, MI355X BF16 182.7 GiB / 1.96M.
TEST(MemoryPlan, PublishedPoolsHoldThePlannedBytesPerToken) {
  const auto rows = compare_published_pools(load_published_pools());
  ASSERT_GE(rows.size(), 3u);
  int with_bytes = 0;
  for (const auto& r : rows) {
    if (r.published_bytes_per_token <= 0) continue;
    ++with_bytes;
    EXPECT_NEAR(r.planned_bytes_per_token / r.published_bytes_per_token, 1.0, 0.02) << r.pool.id;
  }
  EXPECT_GE(with_bytes, 3);
  const std::string md = published_pools_markdown(rows);
  EXPECT_NE(md.find("| glm52-nvfp4-gb300-dpa8-prefill |"), std::string::npos) << md;
  EXPECT_NE(md.find("2965312 / "), std::string::npos) << md;
}

// A DP-attention rank of GLM-5.2 NVFP4 over 8 GPUs holds 1/8 of the experts
// and dense layers but the attention (with the DSA indexer) and the input
// embedding whole: the spec's 29.1 GB of them. By hand: (445.7 - 29.1) / 8 +
// 29.1 = 81.175 GB, against 445.7 / 8 = 55.7125 GB without DP attention.
TEST(MemoryPlan, ADpAttentionRankHoldsTheAttentionAndEmbeddingWhole) {
  const auto glm = load_model_spec("glm-5.2-nvfp4");
  ASSERT_DOUBLE_EQ(glm.dp_attention_replicated_bytes, 29.1e9);
  EXPECT_NEAR(rank_model(glm, 8, 1, true).total_weight_bytes(), 81.175e9, 1e3);
  EXPECT_NEAR(rank_model(glm, 8, 1, false).total_weight_bytes(), 55.7125e9, 1e3);
  EXPECT_NEAR(rank_model(glm, 8, 8, false).total_weight_bytes(), 445.7e9, 1e3);  // plain TP8: unchanged
  EngineConfig c;
  c.tp = 1;
  c.mem_fraction_static = 0.85;
  const auto plan = plan_memory(rank_model(glm, 8, 1, true), load_hardware_spec("gb300"), c);
  EXPECT_NEAR(plan.weights_bytes_rank, 81.175e9, 1e3);
}

// A pools file is read as strictly as the specs: a backend SGLang does not
// have, or a KV dtype it does not take, is one line naming the file and field.
TEST(MemoryPlan, PublishedPoolsFileErrorsNameTheField) {
  const auto dir = std::filesystem::temp_directory_path() / ("agentperf_pools_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto error_of = [&](const std::string& pool_fields) {
    const auto path = dir / "pools.json";
    std::ofstream(path) << R"({"pools": [{"id": "x", "model_spec": "glm-5.2-nvfp4", "hardware": "b300", "tp": 8, )"
                        << R"("mem_fraction_static": 0.85, "published_tokens": 1000, "source": "s", )" << pool_fields
                        << "}]}";
    try {
      (void)load_published_pools(path.string());
    } catch (const agentperf::UserError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  auto e = error_of(R"("dsa_backend": "flashmla")");
  EXPECT_NE(e.find("pools.json"), std::string::npos) << e;
  EXPECT_NE(e.find("dsa_backend"), std::string::npos) << e;
  EXPECT_NE(e.find("'flashmla'"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  e = error_of(R"("kv_cache_dtype": "int4")");
  EXPECT_NE(e.find("kv_cache_dtype"), std::string::npos) << e;
  EXPECT_NE(e.find("'int4'"), std::string::npos) << e;
  EXPECT_EQ(error_of(R"("dsa_backend": "trtllm")"), "");
  std::filesystem::remove_all(dir);
}

// DeepSeek-V4.1 leaves --swa-full-tokens-ratio unset, so SGLang sizes the
// raw-window pool from the request cap and a count of prefix tails. InferenceX
// pull request 3347 (GB200 TP4, DSpark block 5, --max-running-requests 32,
// --chunked-prefill-size 4096, --swa-prefix-tails 1024, SGLang's DSV4 page
// of 256) published the pool it measured: 439,040 SWA slots.
TEST(MemoryPlan, ACapSizedSlidingWindowPoolHoldsThePublishedSlots) {
  const auto m = load_model_spec("deepseek-v4.1-flash-fp4");
  const auto h = load_hardware_spec("gb200");
  EngineConfig c;
  c.tp = 4;
  c.mem_fraction_static = 0.70;
  c.max_running_requests = 32;
  c.chunked_prefill_size = 4096;
  c.page_size = 256;
  c.spec.enabled = true;
  c.spec.num_steps = 1;
  c.spec.block_size = 5;
  c.spec.num_draft_tokens = 6;
  c.swa_prefix_tails = 1024;
  const auto p = plan_memory(m, h, c);
  EXPECT_EQ(p.swa_slots, 439040);
  EXPECT_EQ(p.swa_prefix_tails, 1024);
  EXPECT_DOUBLE_EQ(p.swa_bytes, 439040.0 * 584 * 40);
  // The raw windows left the per-token bytes: 5 owners' rows and keys at ratio 2.
  EXPECT_DOUBLE_EQ(p.kv_bytes_per_token_rank, (584.0 + 132) / 2 * 5);
  // Without --swa-prefix-tails: 4 x max_running tails.
  c.swa_prefix_tails = -1;
  EXPECT_EQ(plan_memory(m, h, c).swa_prefix_tails, 128);
  // An explicit ratio sizes the pool by ratio, with no tail bound; so does vLLM.
  c.swa_full_tokens_ratio = 0.1;
  const auto ratio = plan_memory(m, h, c);
  EXPECT_EQ(ratio.swa_prefix_tails, -1);
  EXPECT_EQ(ratio.swa_slots, 0);
  EXPECT_DOUBLE_EQ(ratio.kv_bytes_per_token_rank, 0.1 * 584 * 40 + (584.0 + 132) / 2 * 5);
  c.swa_full_tokens_ratio = 0;
  c.scheduler = SchedulerKind::vllm;
  EXPECT_EQ(plan_memory(m, h, c).swa_prefix_tails, -1);
  // DeepSeek-V4 (the Pro spec) is sized by ratio whatever the flags.
  c.scheduler = SchedulerKind::sglang;
  c.tp = 8;
  c.max_running_requests = 64;
  EXPECT_EQ(plan_memory(load_model_spec("deepseek-v4-pro-fp4"), load_hardware_spec("b200"), c).swa_prefix_tails, -1);
}

TEST(EngineConfig, SwaFlagsAreRead) {
  EngineConfig c;
  apply_scheduling_flags("--swa-prefix-tails 0 --swa-full-tokens-ratio 0.25", c);
  EXPECT_EQ(c.swa_prefix_tails, 0);
  EXPECT_DOUBLE_EQ(c.swa_full_tokens_ratio, 0.25);
  EngineConfig d;
  apply_scheduling_flags("--swa-prefix-tails $TAILS", d);
  EXPECT_EQ(d.swa_prefix_tails, -1);
}
