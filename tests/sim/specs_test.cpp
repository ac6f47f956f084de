// Model and hardware specs are read as strictly as recipes: every shipped
// spec loads, and an unknown key, a wrong type, an out-of-range value or a
// number in the wrong unit is refused naming the file and the field.
#include "sim/specs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "sim/builtin_specs.h"
#include "sim/hardware_profile.h"

using namespace agentperf;
using namespace agentperf::sim;
using json = nlohmann::json;

namespace {
// Writes a shipped spec, changed by `edit`, to a file; returns its path.
template <class Edit>
std::string edited(const std::map<std::string, std::string>& builtins, const std::string& name, const std::string& file,
                   Edit edit) {
  json j = json::parse(builtins.at(name));
  edit(j);
  const auto p = std::filesystem::temp_directory_path() /
                 ("agentperf_specs_" + file + "_" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << j.dump(2);
  return p.string();
}
// The UserError message of loading `path` with `load`; "" when it loads.
template <class Load>
std::string error_of(Load load, const std::string& path) {
  try {
    load(path);
  } catch (const UserError& e) {
    std::filesystem::remove(path);
    return e.what();
  }
  std::filesystem::remove(path);
  return "";
}
std::string hw_error(const std::string& file, void (*edit)(json&)) {
  return error_of([](const std::string& p) { load_hardware_spec(p); },
                  edited(builtin_hardware_json(), "h200", file, edit));
}
std::string model_error(const std::string& file, void (*edit)(json&)) {
  return error_of([](const std::string& p) { load_model_spec(p); },
                  edited(builtin_model_json(), "qwen3.5-397b-a17b-nvfp4", file, edit));
}
}  // namespace

TEST(Specs, EveryShippedSpecLoads) {
  for (const auto& name : builtin_model_names()) EXPECT_NO_THROW(load_model_spec(name)) << name;
  for (const auto& name : builtin_hardware_names()) EXPECT_NO_THROW(load_hardware_spec(name)) << name;
  // And from the file, not only the compiled-in copy.
  const std::string path = edited(builtin_hardware_json(), "b200", "b200", [](json&) {});
  EXPECT_EQ(error_of([](const std::string& p) { load_hardware_spec(p); }, path), "");
}

TEST(Specs, NegativeLaunchOverheadIsRefused) {
  const auto e = hw_error("neg_graph", [](json& j) { j["launch_overhead_s"]["cuda_graph"] = -1; });
  EXPECT_NE(e.find("agentperf_specs_neg_graph"), std::string::npos) << e;
  EXPECT_NE(e.find("field 'launch_overhead_s.cuda_graph'"), std::string::npos) << e;
  EXPECT_NE(e.find("seconds"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(Specs, OverheadInMillisecondsIsRefused) {
  const auto e = hw_error("ms", [](json& j) { j["launch_overhead_s"]["eager"] = 3.0; });
  EXPECT_NE(e.find("field 'launch_overhead_s.eager'"), std::string::npos) << e;
}

TEST(Specs, HardwareUnknownKeysAreRefused) {
  auto e = hw_error("unknown_top", [](json& j) { j["hbm_bandwith"] = 4.8e12; });
  EXPECT_NE(e.find("unknown key 'hbm_bandwith'"), std::string::npos) << e;
  e = hw_error("unknown_eff", [](json& j) { j["efficiency"]["gem"] = 0.5; });
  EXPECT_NE(e.find("field 'efficiency.gem'"), std::string::npos) << e;
  e = hw_error("unknown_launch", [](json& j) { j["launch_overhead_s"]["graph"] = 1e-4; });
  EXPECT_NE(e.find("field 'launch_overhead_s.graph'"), std::string::npos) << e;
  e = hw_error("unknown_peak", [](json& j) { j["peak_flops"]["int3"] = 1e15; });
  EXPECT_NE(e.find("field 'peak_flops.int3'"), std::string::npos) << e;
}

TEST(Specs, MissingBf16PeakIsRefused) {
  const auto e = hw_error("no_bf16", [](json& j) { j["peak_flops"].erase("bf16"); });
  EXPECT_NE(e.find("field 'peak_flops.bf16'"), std::string::npos) << e;
  EXPECT_NE(e.find("missing"), std::string::npos) << e;
}

TEST(Specs, HardwareTypesAndUnitsAreChecked) {
  auto e = hw_error("hbm_string", [](json& j) { j["hbm_bytes"] = "141 GB"; });
  EXPECT_NE(e.find("field 'hbm_bytes': must be a number"), std::string::npos) << e;
  e = hw_error("hbm_gb", [](json& j) { j["hbm_bandwidth"] = 4.8; });  // TB/s, not bytes/s
  EXPECT_NE(e.find("field 'hbm_bandwidth'"), std::string::npos) << e;
  EXPECT_NE(e.find("bytes/s"), std::string::npos) << e;
  e = hw_error("peak_tflops", [](json& j) { j["peak_flops"]["fp8"] = 1979; });
  EXPECT_NE(e.find("field 'peak_flops.fp8'"), std::string::npos) << e;
}

TEST(Specs, HardwarePlatformIsOneTheEnginesKnow) {
  const auto e = hw_error("platform", [](json& j) { j["platform"] = "cuda_sm95"; });
  EXPECT_NE(e.find("field 'platform': must be one of cuda_sm80, cuda_sm90"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_TRUE(load_hardware_spec("mi355x").rocm);
  EXPECT_EQ(load_hardware_spec("b300").cuda_sm, 103);
  EXPECT_EQ(load_hardware_spec("h200").cuda_sm, 90);
  EXPECT_FALSE(load_hardware_spec("h200").rocm);
}

TEST(Specs, LayerLatencyScalesAreCheckedAndDefaultToOne) {
  EXPECT_EQ(load_hardware_spec("h200").layer_latency_scale_decode, 1.0);
  EXPECT_EQ(load_hardware_spec("h200").layer_latency_scale_prefill, 1.0);
  auto e = hw_error("lat_key", [](json& j) { j["layer_latency_scale"]["decod"] = 2; });
  EXPECT_NE(e.find("field 'layer_latency_scale.decod'"), std::string::npos) << e;
  e = hw_error("lat_range", [](json& j) { j["layer_latency_scale"]["prefill"] = 100; });
  EXPECT_NE(e.find("field 'layer_latency_scale.prefill'"), std::string::npos) << e;
  EXPECT_NE(e.find("[0.05, 20]"), std::string::npos) << e;
  // The fit's names reach the spec's fields; an unknown name is refused.
  HardwareSpec hw = load_hardware_spec("mi300x");
  set_hardware_coefficient(hw, "allreduce_alpha_s", 2.5e-5);
  set_hardware_coefficient(hw, "layer_latency_scale.prefill", 1.5);
  EXPECT_EQ(hw.allreduce_alpha_s, 2.5e-5);
  EXPECT_EQ(hw.layer_latency_scale_prefill, 1.5);
  EXPECT_EQ(hardware_coefficient(hw, "layer_latency_scale.prefill"), 1.5);
  // One scale for both.
  set_hardware_coefficient(hw, "layer_latency_scale", 2.0);
  EXPECT_EQ(hw.layer_latency_scale_decode, 2.0);
  EXPECT_EQ(hw.layer_latency_scale_prefill, 2.0);
  for (const auto& name : hardware_coefficient_names()) EXPECT_NO_THROW(hardware_coefficient_range(name)) << name;
  EXPECT_THROW(hardware_coefficient(hw, "efficiency.nvlinkk"), std::out_of_range);
  EXPECT_THROW(set_hardware_coefficient(hw, "gemm", 0.5), std::out_of_range);
  EXPECT_THROW(hardware_coefficient_range("gemm"), std::out_of_range);
}

TEST(ModelSpec, UnknownComputeDtypeIsRefused) {
  const auto e = model_error("int3", [](json& j) { j["compute_dtype"] = "int3"; });
  EXPECT_NE(e.find("field 'compute_dtype': must be one of bf16, fp8, fp4, got \"int3\""), std::string::npos) << e;
}

TEST(ModelSpec, UnknownKeysAreRefused) {
  auto e = model_error("unknown_top", [](json& j) { j["max_ctx"] = 1; });
  EXPECT_NE(e.find("unknown key 'max_ctx'"), std::string::npos) << e;
  e = model_error("unknown_moe", [](json& j) { j["moe"]["topk"] = 8; });
  EXPECT_NE(e.find("field 'moe.topk'"), std::string::npos) << e;
  e = model_error("unknown_la", [](json& j) { j["linear_attention"]["heads"] = 8; });
  EXPECT_NE(e.find("field 'linear_attention.heads'"), std::string::npos) << e;
  e = model_error("unknown_mtp", [](json& j) { j["mtp"]["layers"] = 1; });
  EXPECT_NE(e.find("field 'mtp.layers'"), std::string::npos) << e;
}

TEST(ModelSpec, RangesAndUnitsAreChecked) {
  auto e = model_error("weights_gb", [](json& j) { j["dense_weight_bytes"] = 19.6; });  // GB, not bytes
  EXPECT_NE(e.find("field 'dense_weight_bytes'"), std::string::npos) << e;
  EXPECT_NE(e.find("bytes"), std::string::npos) << e;
  e = model_error("neg_other", [](json& j) { j["other_weight_bytes"] = -1; });
  EXPECT_NE(e.find("field 'other_weight_bytes'"), std::string::npos) << e;
  e = model_error("neg_conv", [](json& j) { j["linear_attention"]["conv_dim"] = -4; });
  EXPECT_NE(e.find("field 'linear_attention.conv_dim'"), std::string::npos) << e;
  e = model_error("share", [](json& j) { j["mtp"]["moe_share_of_weights"] = 1.5; });
  EXPECT_NE(e.find("field 'mtp.moe_share_of_weights'"), std::string::npos) << e;
  e = model_error("kv_dtype", [](json& j) { j["kv_dtype_bytes"] = 0; });
  EXPECT_NE(e.find("field 'kv_dtype_bytes'"), std::string::npos) << e;
  e = model_error("layers_str", [](json& j) { j["layers_full_attention"] = "15"; });
  EXPECT_NE(e.find("field 'layers_full_attention': must be an integer"), std::string::npos) << e;
}

// Measured profiles get the same strictness: the shipped one loads, a
// misspelt key anywhere the model reads is refused by name.
TEST(Specs, HardwareProfileUnknownKeysAreRefused) {
  const std::string shipped = std::string(AGENTPERF_DATA_DIR) + "/hardware/profiles/h200.json";
  EXPECT_NO_THROW(load_hardware_spec("h200", shipped));
  std::ifstream in(shipped);
  const json original = json::parse(in);
  auto error = [&](const std::string& file, void (*edit)(json&)) {
    json j = original;
    edit(j);
    const auto p = std::filesystem::temp_directory_path() /
                   ("agentperf_specs_profile_" + file + "_" + std::to_string(::getpid()) + ".json");
    std::ofstream(p) << j.dump(2);
    return error_of([](const std::string& path) { load_hardware_profile(path); }, p.string());
  };
  auto e = error("top", [](json& j) { j["hbm_usable"] = 1e11; });
  EXPECT_NE(e.find("unknown key 'hbm_usable'"), std::string::npos) << e;
  e = error("launch", [](json& j) { j["launch_overhead_s"]["kernel_launch"] = 1e-6; });
  EXPECT_NE(e.find("field 'launch_overhead_s.kernel_launch'"), std::string::npos) << e;
  e = error("eff", [](json& j) { j["efficiency"]["hbm"] = 0.9; });
  EXPECT_NE(e.find("field 'efficiency.hbm'"), std::string::npos) << e;
  e = error("point", [](json& j) { j["efficiency"]["kv_read"][0]["fracton"] = 0.5; });
  EXPECT_NE(e.find("field 'efficiency.kv_read[0].fracton'"), std::string::npos) << e;
  e = error("peak", [](json& j) { j["reference"]["peak_flops"]["int3"] = 1e15; });
  EXPECT_NE(e.find("field 'reference.peak_flops.int3'"), std::string::npos) << e;
  e = error("kpl", [](json& j) { j["launch_overhead_s"]["kernels_per_layer"] = 12.5; });
  EXPECT_NE(e.find("field 'launch_overhead_s.kernels_per_layer': must be an integer"), std::string::npos) << e;
}

// Attention layouts: KV bytes per token per rank and attention FLOPs,
// worked by hand for one model of each layout.
namespace {
ModelSpec model_edited(const std::string& file, void (*edit)(json&)) {
  const std::string path = edited(builtin_model_json(), "qwen3.5-397b-a17b-nvfp4", file, edit);
  ModelSpec m = load_model_spec(path);
  std::filesystem::remove(path);
  return m;
}
}  // namespace

TEST(ModelSpec, GqaIsTheDefaultLayout) {
  const auto m = load_model_spec("qwen3.5-397b-a17b-fp8");  // "attention": {"kind": "gqa"}
  EXPECT_FALSE(m.mla());
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(1), 15360);  // 15 layers x 2 x 2 KV heads x 256 x 1 B
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(8), 7680);   // 2 KV heads replicated past TP2
  EXPECT_DOUBLE_EQ(m.draft_kv_bytes_per_token_rank(1), 1024);
  EXPECT_DOUBLE_EQ(m.attention_flops_per_token_per_ctx(), 4.0 * 32 * 256 * 15);
  EXPECT_DOUBLE_EQ(m.window_kv_bytes_per_request_rank(1), 0);
  // No "attention" object: the same numbers.
  const auto n = load_model_spec("qwen3.5-397b-a17b-nvfp4");
  EXPECT_DOUBLE_EQ(n.kv_bytes_per_token_rank(1), 15360);
}

TEST(ModelSpec, MlaKvIsOneLatentPerLayerNotSplitOverTp) {
  // GLM-5.2 FP8: 78 layers x ((512 latent + 64 rope) x 1 B fp8 + 132 B DSA
  // index key) = 78 x 708 B, the same on every rank; in FlashMLA's scaled
  // layout (which the engine picks by backend: MemoryPlan tests) the latent
  // is 512 + 16 B of scales + 64 x 2 B rope, 78 x 788 B.
  auto m = load_model_spec("glm-5.2-fp8");
  ASSERT_TRUE(m.mla());
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(1), 55224);
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(8), 55224);
  EXPECT_DOUBLE_EQ(m.draft_kv_bytes_per_token_rank(8), 708);
  m.attention.fp8_scaled_latent = true;
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(8), 61464);
  EXPECT_DOUBLE_EQ(m.draft_kv_bytes_per_token_rank(8), 788);
  m.attention.fp8_scaled_latent = false;
  // Absorbed attention: 2 x 64 heads x ((512 + 64) for QK^T + 512 for PV) x
  // 78 layers per context token, plus DSA's indexer (2 x 32 x 128) in the 21
  // layers that score (IndexShare) under its top-k of 2048 (past it:
  // ModelSpec.SparseMlaReadsTheIndexKeysAndTheTopKLatents).
  EXPECT_DOUBLE_EQ(m.attention_flops(1, 1000), (2.0 * 64 * (576 + 512) * 78 + 2.0 * 32 * 128 * 21) * 1000);
  // A DeepSeek-V3-style latent without extras, bf16: 61 x 576 x 2 B.
  const auto d = model_edited("mla_plain", [](json& j) {
    j["layers_full_attention"] = 61;
    j["layers_linear_attention"] = 0;
    j.erase("linear_attention");
    j["q_heads"] = 128;
    j["kv_heads"] = 128;
    j["head_dim"] = 192;
    j["kv_dtype_bytes"] = 2;
    j["attention"] = {{"kind", "mla"}, {"kv_lora_rank", 512}, {"qk_rope_head_dim", 64}};
  });
  EXPECT_DOUBLE_EQ(d.kv_bytes_per_token_rank(8), 61.0 * 576 * 2);
  EXPECT_DOUBLE_EQ(d.attention_flops_per_token_per_ctx(), 2.0 * 128 * (576 + 512) * 61);
}

TEST(ModelSpec, SlidingWindowLayersAreCappedPerRequest) {
  // 15 full-attention layers, 5 of them windowed at 128 tokens; 2 KV heads x 256 x 1 B.
  const auto m = model_edited("swa", [](json& j) {
    j["attention"] = {{"kind", "sliding_window"}, {"window", 128}, {"windowed_layers", 5}};
  });
  EXPECT_EQ(m.kv_growing_layers(), 10);
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(1), 10 * 2 * 2 * 256);
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(2), 10 * 2 * 1 * 256);
  EXPECT_DOUBLE_EQ(m.window_kv_bytes_per_request_rank(1), 5.0 * 128 * 2 * 2 * 256);
  EXPECT_DOUBLE_EQ(m.attention_flops_per_token_per_ctx(), 4.0 * 32 * 256 * 10);
}

TEST(ModelSpec, AttentionLayoutIsChecked) {
  auto e = model_error("att_kind", [](json& j) { j["attention"] = {{"kind", "mqa"}}; });
  EXPECT_NE(e.find("field 'attention.kind'"), std::string::npos) << e;
  e = model_error("att_key", [](json& j) {
    j["attention"] = {{"kind", "mla"}, {"kv_lora_rank", 512}, {"qk_rope_head_dim", 64}, {"rope", 64}};
  });
  EXPECT_NE(e.find("field 'attention.rope'"), std::string::npos) << e;
  e = model_error("att_rank", [](json& j) {
    j["attention"] = {{"kind", "mla"}, {"kv_lora_rank", 0}, {"qk_rope_head_dim", 64}};
  });
  EXPECT_NE(e.find("field 'attention.kv_lora_rank'"), std::string::npos) << e;
  e = model_error("att_missing", [](json& j) { j["attention"] = {{"kind", "mla"}, {"kv_lora_rank", 512}}; });
  EXPECT_NE(e.find("field 'attention.qk_rope_head_dim'"), std::string::npos) << e;
  e = model_error("att_window", [](json& j) {
    j["attention"] = {{"kind", "sliding_window"}, {"window", 0}, {"windowed_layers", 5}};
  });
  EXPECT_NE(e.find("field 'attention.window'"), std::string::npos) << e;
  e = model_error("att_all_windowed", [](json& j) {
    j["attention"] = {{"kind", "sliding_window"}, {"window", 128}, {"windowed_layers", 15}};
  });
  EXPECT_NE(e.find("field 'attention.windowed_layers'"), std::string::npos) << e;
  e = model_error("att_gqa_extra", [](json& j) { j["attention"] = {{"kind", "gqa"}, {"window", 128}}; });
  EXPECT_NE(e.find("field 'attention.window'"), std::string::npos) << e;
}

// DeepSeek-V4-Pro (config.json: 61 layers, compress_ratios 30 x 4 + 31 x 128,
// sliding_window 128, head_dim 512 = 448 nope + 64 rope, index_head_dim 128,
// 64 index heads, index_topk 1024, 128 q heads). SGLang stores one 584 B row
// per kept token (448 fp8 nope + 64 bf16 rope + 448/64 scales + 1 pad) and
// sizes the pool per full token as DSV4PoolConfigurator does.
TEST(ModelSpec, CompressedKvIsSglangsDsv4PoolPerFullToken) {
  const auto m = load_model_spec("deepseek-v4-pro-fp4");
  ASSERT_EQ(m.attention.kind, AttentionLayout::Kind::compressed);
  EXPECT_EQ(m.attention.entry_bytes, 448 + 64 * 2 + 448 / 64 + 1);
  EXPECT_EQ(m.attention.indexer_bytes, 128 + 128 / 128 * 4);  // fp8 key + fp32 scale per 128
  EXPECT_EQ(m.attention.csa_layers + m.attention.hca_layers, m.layers_full);
  // 0.1 x 584 x 61 (raw-window pool at --swa-full-tokens-ratio 0.1)
  // + 584/4 x 30 (CSA rows) + 584/128 x 31 (HCA rows) + 132/4 x 30 (indexer keys)
  // + 0.1 x 16/128 x (2 x 2 x (512 + 128) x 4 B) x 30 (CSA compressor states, ring 16 with MTP)
  const double per_full_token = 0.1 * 584 * 61 + 584.0 / 4 * 30 + 584.0 / 128 * 31 + 132.0 / 4 * 30 +
                                0.1 * 16 / 128 * (2.0 * 2 * (512 + 128) * 4) * 30;
  EXPECT_NEAR(per_full_token, 12913.8375, 1e-9);
  EXPECT_NEAR(m.kv_bytes_per_token_rank(1), per_full_token, 1e-6);
  EXPECT_NEAR(m.kv_bytes_per_token_rank(8), per_full_token, 1e-6);  // MQA latent: not split over TP
  // SGLang prices the MTP draft as (61 + 1) / 61 of the target.
  EXPECT_NEAR(m.kv_bytes_per_token_rank(8) + m.draft_kv_bytes_per_token_rank(8), per_full_token * 62 / 61, 1e-6);
  EXPECT_DOUBLE_EQ(m.window_kv_bytes_per_request_rank(8), 61.0 * 128 * 584);
  // HCA compressor states for 64 requests: ceil((65 x 256 + 256 + 1) / 128) x 128 rows x (2 x 512 x 4 B) x 31.
  EXPECT_DOUBLE_EQ(m.compress_state_pool_bytes_rank(64), std::ceil((65.0 * 256 + 257) / 128) * 128 * 4096 * 31);
  // A decode read at 100k context: 61 windows of 128 rows, CSA indexer keys
  // of 25k rows + the top-1024 rows, HCA 781.25 rows.
  const double c = 100000;
  const double read = 61 * 128 * 584.0 + 30 * (c / 4 * 132 + 1024 * 584.0) + 31 * (c / 128 * 584);
  EXPECT_NEAR(m.kv_read_bytes_rank(8, 3, 3 * c), 3 * read, 1e-3);
  EXPECT_NEAR(m.draft_kv_read_bytes_rank(8, 3, 3 * c), 3 * read / 61, 1e-3);
  // Attention: 4 x 128 heads x 512 per kept row (QK^T and PV over the latent),
  // 2 x 64 index heads x 128 per indexer key.
  const double pair = 4.0 * 128 * 512, index_pair = 2.0 * 64 * 128;
  const double query = 61 * 128 * pair + 30 * (c / 4 * index_pair + 1024 * pair) + 31 * (c / 128 * pair);
  EXPECT_NEAR(m.attention_flops(10, 10 * c), 10 * query, 1.0);
  EXPECT_DOUBLE_EQ(m.attention_flops_per_token_per_ctx(), 30 * index_pair / 4 + 31 * pair / 128);
  // Short contexts read no more than they hold.
  EXPECT_NEAR(m.kv_read_bytes_rank(8, 1, 64), 61 * 64 * 584.0 + 30 * (16 * 132.0 + 16 * 584) + 31 * 0.5 * 584, 1e-6);
}

// DeepSeek-V4.1-Flash (config.json text_config @ dba1be0a): compress ratios
// [0,0] + [2]x18 + [1]x20, compressed caches and index keys only at the KV
// sources (layers 2, 8, 14 at ratio 2; 20 at ratio 1), indexer scores at
// layers 2, 8, 14 (ratio 2) and 20, 24, 28, 32, 36 (ratio 1), top-512 rows
// read by each of the 38 compressed layers, 128-row windows in all 40.
TEST(ModelSpec, CompressedCachesSharedAcrossLayersAreStoredOnce) {
  const auto m = load_model_spec("deepseek-v4.1-flash-fp4");
  ASSERT_EQ(m.attention.kind, AttentionLayout::Kind::compressed);
  const double row = 584, key = 132;
  // Raw-window pool (SGLang, ratio 0.1 x 40 layers) + the four owned caches.
  const double per_token = 0.1 * row * 40 + 3 * (row + key) / 2 + 1 * (row + key) / 1;
  EXPECT_NEAR(per_token, 4126.0, 1e-9);
  EXPECT_NEAR(m.kv_bytes_per_token_rank(4), per_token, 1e-6);
  const double c = 100000;
  const double read = 40 * 128 * row + (3 * c / 2 + 5 * c) * key + 38 * 512 * row;
  EXPECT_NEAR(m.kv_read_bytes_rank(4, 2, 2 * c), 2 * read, 1e-3);
  const double pair = 4.0 * 64 * 512, index_pair = 2.0 * 32 * 128;
  const double query = 40 * 128 * pair + (3 * c / 2 + 5 * c) * index_pair + 38 * 512 * pair;
  EXPECT_NEAR(m.attention_flops(10, 10 * c), 10 * query, 1.0);
  // A prompt row runs layers 0-20; layers 21-39 only each request's last 128 rows.
  EXPECT_DOUBLE_EQ(m.prefill_work_share(8192, 1), 21.0 / 40 + 19.0 / 40 * 128 / 8192);
  EXPECT_DOUBLE_EQ(m.prefill_work_share(8192, 4), 21.0 / 40 + 19.0 / 40 * 512 / 8192);
  EXPECT_DOUBLE_EQ(m.prefill_work_share(100, 2), 1.0);  // every row is in a tail
  EXPECT_DOUBLE_EQ(load_model_spec("deepseek-v4-pro-fp4").prefill_work_share(8192, 1), 1.0);
}

TEST(ModelSpec, SharedCacheAndPrefillLayerFieldsAreChecked) {
  auto e = error_of([](const std::string& p) { load_model_spec(p); },
                    edited(builtin_model_json(), "deepseek-v4.1-flash-fp4", "shared_cache",
                           [](json& j) { j["attention"]["csa_cache_layers"] = 0; }));
  EXPECT_NE(e.find("field 'attention.csa_cache_layers'"), std::string::npos) << e;
  e = error_of([](const std::string& p) { load_model_spec(p); },
               edited(builtin_model_json(), "deepseek-v4.1-flash-fp4", "prefill_layers",
                      [](json& j) { j["prefill_layers"] = 41; }));
  EXPECT_NE(e.find("field 'prefill_layers'"), std::string::npos) << e;
  e = error_of([](const std::string& p) { load_model_spec(p); },
               edited(builtin_model_json(), "deepseek-v4.1-flash-fp4", "tail_alone", [](json& j) {
                 j.erase("prefill_layers");
               }));
  EXPECT_NE(e.find("field 'prefill_tail_tokens'"), std::string::npos) << e;
}

TEST(ModelSpec, WeightsWithoutMxAreChecked) {
  auto e = error_of([](const std::string& p) { load_model_spec(p); },
                    edited(builtin_model_json(), "minimax-m3-fp8", "no_routed",
                           [](json& j) { j["weights_without_mx"].erase("routed_weight_bytes"); }));
  EXPECT_NE(e.find("field 'weights_without_mx.routed_weight_bytes'"), std::string::npos) << e;
  e = error_of([](const std::string& p) { load_model_spec(p); },
               edited(builtin_model_json(), "minimax-m3-fp8", "bad_dtype",
                      [](json& j) { j["weights_without_mx"]["compute_dtype"] = "int4"; }));
  EXPECT_NE(e.find("field 'weights_without_mx.compute_dtype'"), std::string::npos) << e;
  e = error_of([](const std::string& p) { load_model_spec(p); },
               edited(builtin_model_json(), "qwen3-8b", "dense_routed", [](json& j) {
                 j["weights_without_mx"] = {{"dense_weight_bytes", 16e9}, {"routed_weight_bytes", 1e9}};
               }));
  EXPECT_NE(e.find("field 'weights_without_mx.routed_weight_bytes'"), std::string::npos) << e;
}

// Kimi-K3 (config.json text_config: 24 MLA layers with kv_lora_rank 512 +
// qk_rope_head_dim 64, 69 KDA layers of 96 heads x 128, short conv 4): MLA
// latent on every rank plus a KDA state per request, as GDN's in Qwen3.5.
TEST(ModelSpec, KimiK3IsMlaPlusKdaState) {
  const auto m = load_model_spec("kimi-k3-fp4");
  ASSERT_TRUE(m.mla());
  ASSERT_TRUE(m.hybrid());
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(1), 24.0 * (512 + 64) * 1);  // fp8 latent
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(8), 24.0 * (512 + 64) * 1);
  EXPECT_DOUBLE_EQ(m.draft_kv_bytes_per_token_rank(8), 5.0 * 576);  // DSpark draft: 5 MLA layers
  // conv: (K - 1 = 3) x (q + k + v = 3 x 96 x 128) / TP bf16; recurrent: 96 / TP x 128 x 128 fp32; 69 layers.
  EXPECT_DOUBLE_EQ(m.state_bytes_per_request_rank(8), (3.0 * 96 * 128 / 8 * 3 * 2 + 96.0 / 8 * 128 * 128 * 4) * 69);
  EXPECT_DOUBLE_EQ(m.attention_flops_per_token_per_ctx(), 2.0 * 96 * (576 + 512) * 24);
  EXPECT_DOUBLE_EQ(m.kv_read_bytes_rank(8, 4, 1000), 1000 * 24.0 * 576);
}

// MiniMax-M3 (config.json text_config: 60 layers, 4 KV heads x 128, 57 sparse
// layers with one 128-wide index key per token, top-16 + 1 local blocks of 128).
TEST(ModelSpec, SparseGqaKvIsGqaPlusIndexKeys) {
  const auto m = load_model_spec("minimax-m3-fp8");
  ASSERT_EQ(m.attention.kind, AttentionLayout::Kind::sparse_gqa);
  // 60 layers x 2 x 4 KV heads x 128 x 1 B (fp8) + 57 x 128 x 2 B (bf16 index key, every rank)
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(1), 60.0 * 2 * 4 * 128 * 1 + 57.0 * 128 * 2);
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(4), 60.0 * 2 * 1 * 128 * 1 + 57.0 * 128 * 2);
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(8), 60.0 * 2 * 1 * 128 * 1 + 57.0 * 128 * 2);  // KV heads replicated
  EXPECT_DOUBLE_EQ(m.draft_kv_bytes_per_token_rank(8), m.kv_bytes_per_token_rank(8) / 60);
  // vLLM's fp8 index cache (indexer_kv_dtype fp8) on the NVFP4 runs: 1 B keys.
  EXPECT_DOUBLE_EQ(load_model_spec("minimax-m3-nvfp4").kv_bytes_per_token_rank(2),
                   60.0 * 2 * 2 * 128 * 1 + 57.0 * 128 * 1);
  EXPECT_DOUBLE_EQ(load_model_spec("minimax-m3-mxfp4").kv_bytes_per_token_rank(2),
                   60.0 * 2 * 2 * 128 * 1 + 57.0 * 128 * 2);
  // Decode at 10k context, TP8 (1 KV head per rank): 3 dense layers read
  // everything, sparse layers every index key and 17 x 128 = 2176 tokens of KV.
  const double c = 10000, kv = 2.0 * 1 * 128;
  EXPECT_DOUBLE_EQ(m.kv_read_bytes_rank(8, 2, 2 * c), 2 * (3 * c * kv + 57 * (c * 128 * 2 + 2176 * kv)));
  const double pair = 4.0 * 64 * 128, index_pair = 2.0 * 4 * 128;
  EXPECT_NEAR(m.attention_flops(1, c), 3 * c * pair + 57 * (c * index_pair + 2176 * pair), 1e-3);
}

TEST(ModelSpec, CompressedAndSparseLayoutsAreChecked) {
  auto e = model_error("cmp_key", [](json& j) {
    j["attention"] = {{"kind", "compressed"}, {"window", 128}, {"ratio", 4}};
  });
  EXPECT_NE(e.find("field 'attention.ratio'"), std::string::npos) << e;
  e = model_error("cmp_missing", [](json& j) { j["attention"] = {{"kind", "compressed"}, {"window", 128}}; });
  EXPECT_NE(e.find("field 'attention.entry_bytes'"), std::string::npos) << e;
  e = model_error("cmp_layers", [](json& j) {  // 15 full-attention layers
    j["attention"] = {{"kind", "compressed"}, {"window", 128}, {"entry_bytes", 584}, {"csa_layers", 10},
                      {"csa_ratio", 4}, {"csa_topk", 1024}, {"indexer_bytes", 132}, {"hca_layers", 10},
                      {"hca_ratio", 128}, {"swa_full_tokens_ratio", 0.1}, {"csa_state_ring", 16},
                      {"hca_state_ring", 256}, {"index_heads", 64}, {"index_dim", 128}};
  });
  EXPECT_NE(e.find("field 'attention.hca_layers'"), std::string::npos) << e;
  e = model_error("sparse_layers", [](json& j) {
    j["attention"] = {{"kind", "sparse_gqa"}, {"sparse_layers", 16}, {"index_heads", 4}, {"index_dim", 128},
                      {"index_dtype_bytes", 2}, {"topk_tokens", 2176}};
  });
  EXPECT_NE(e.find("field 'attention.sparse_layers'"), std::string::npos) << e;
}

// GLM-5's DeepSeek Sparse Attention: MLA whose indexer scores the index key
// of every context token (32 heads x 128) and whose attention reads the
// latents of the top 2048 tokens. GLM-5.2's IndexShare gives an indexer to
// 21 of its 78 layers (config.json `indexer_types`: layers 0, 1, 2 and
// every 4th from 6); the other 57 reuse the last one's top-k. Past 2048
// tokens one more context token costs its index key in those 21 layers and
// their indexer scores; up to 2048 the reads are those of dense MLA (plus
// the index keys of the scoring layers only).
TEST(ModelSpec, SparseMlaReadsTheIndexKeysAndTheTopKLatents) {
  const auto m = load_model_spec("glm-5.2-fp8");
  ASSERT_TRUE(m.attention.sparse_mla());
  int full = 3;
  for (int layer = 6; layer < 78; layer += 4) ++full;
  ASSERT_EQ(full, 21);
  EXPECT_EQ(m.scoring_layers(), full);
  const double per_token = 576 + 132;  // latent + rope at 1 B (raw layout), and the index key
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(8), 78 * per_token);  // storage: a key in every layer
  // Two requests at 100k tokens each.
  EXPECT_DOUBLE_EQ(m.kv_read_bytes_rank(8, 2, 200000), 2 * (21 * 100000 * 132.0 + 78 * 2048 * (per_token - 132)));
  // Under the top-k: every latent, and the index keys of the scoring layers.
  EXPECT_DOUBLE_EQ(m.kv_read_bytes_rank(8, 2, 3000), 3000 * (21 * 132.0 + 78 * (per_token - 132)));
  // FLOPs of one query at 100k: the indexer over 100k keys in 21 layers, absorbed MLA over 2048 in all 78.
  const double index_pair = 2.0 * 32 * 128, mla_pair = 2.0 * 64 * ((512 + 64) + 512);
  EXPECT_DOUBLE_EQ(m.attention_flops(1, 100000), 21 * 100000 * index_pair + 78 * 2048 * mla_pair);
  EXPECT_DOUBLE_EQ(m.attention_flops_per_token_per_ctx(), 21 * index_pair);
  // The MTP layer scores with its own indexer: its reads are one scoring layer's.
  ASSERT_TRUE(m.mtp);
  EXPECT_DOUBLE_EQ(m.draft_kv_read_bytes_rank(8, 2, 200000),
                   2 * m.mtp->draft_kv_layers * (100000 * 132.0 + 2048 * (per_token - 132)));
  // Without index_layers every layer scores.
  auto every = m;
  every.attention.index_layers = 0;
  EXPECT_EQ(every.scoring_layers(), 78);
  EXPECT_DOUBLE_EQ(every.kv_read_bytes_rank(8, 2, 200000), 2 * 78 * (100000 * 132.0 + 2048 * (per_token - 132)));
  // index_layers belongs to a sparse MLA, and to no more layers than the model has.
  auto e = model_error("dsa_layers_dense", [](json& j) {
    j["attention"] = {{"kind", "mla"}, {"kv_lora_rank", 512}, {"qk_rope_head_dim", 64}, {"index_layers", 21}};
  });
  EXPECT_NE(e.find("field 'attention.index_layers'"), std::string::npos) << e;
  e = model_error("dsa_layers_many", [](json& j) {
    j["attention"] = {{"kind", "mla"}, {"kv_lora_rank", 512}, {"qk_rope_head_dim", 64}, {"extra_bytes_per_layer", 132},
                      {"topk_tokens", 2048}, {"index_heads", 32}, {"index_dim", 128}, {"index_key_bytes", 132},
                      {"index_layers", 100000}};
  });
  EXPECT_NE(e.find("field 'attention.index_layers'"), std::string::npos) << e;
  // A sparse MLA names all four of its fields; its index key is part of the extra bytes.
  e = model_error("dsa_half", [](json& j) {
    j["attention"] = {{"kind", "mla"}, {"kv_lora_rank", 512}, {"qk_rope_head_dim", 64}, {"extra_bytes_per_layer", 212},
                      {"topk_tokens", 2048}};
  });
  EXPECT_NE(e.find("field 'attention.index_heads'"), std::string::npos) << e;
  e = model_error("dsa_key", [](json& j) {
    j["attention"] = {{"kind", "mla"}, {"kv_lora_rank", 512}, {"qk_rope_head_dim", 64}, {"extra_bytes_per_layer", 100},
                      {"topk_tokens", 2048}, {"index_heads", 32}, {"index_dim", 128}, {"index_key_bytes", 132}};
  });
  EXPECT_NE(e.find("field 'attention.index_key_bytes'"), std::string::npos) << e;
  EXPECT_NE(e.find("must be part of extra_bytes_per_layer (100)"), std::string::npos) << e;
}

// For the linear layouts the read and FLOP rules are the per-token ones.
TEST(ModelSpec, LinearLayoutsReadInProportionToTheContext) {
  for (const char* name : {"qwen3.5-397b-a17b-nvfp4", "deepseek-r1-fp8"}) {
    const auto m = load_model_spec(name);
    EXPECT_DOUBLE_EQ(m.kv_read_bytes_rank(4, 3, 3000), 3000 * m.kv_bytes_per_token_rank(4)) << name;
    EXPECT_DOUBLE_EQ(m.draft_kv_read_bytes_rank(4, 3, 3000), 3000 * m.draft_kv_bytes_per_token_rank(4)) << name;
    EXPECT_DOUBLE_EQ(m.attention_flops(7, 7000), m.attention_flops_per_token_per_ctx() * 7000) << name;
  }
}

// Every shipped model with every shipped GPU: both load and pass the range
// checks, and the layouts give positive, finite per-token sizes.
TEST(Specs, EveryShippedModelWithEveryShippedGpu) {
  for (const auto& mn : builtin_model_names()) {
    const auto m = load_model_spec(mn);
    for (int tp : {1, 2, 4, 8, 16}) {
      EXPECT_GT(m.kv_bytes_per_token_rank(tp), 0) << mn << " TP" << tp;
      EXPECT_TRUE(std::isfinite(m.kv_bytes_per_token_rank(tp))) << mn;
    }
    EXPECT_GT(m.attention_flops_per_token_per_ctx(), 0) << mn;
    for (const auto& hn : builtin_hardware_names()) {
      const auto h = load_hardware_spec(hn);
      EXPECT_GT(h.peak_for(m.compute_dtype), 0) << mn << " on " << hn;
      EXPECT_GT(h.peak_for("bf16"), 0) << hn;
    }
  }
  for (const char* hn : {"b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x"}) EXPECT_NO_THROW(load_hardware_spec(hn));
  // FP4 math where the chip has it, FP8 otherwise.
  EXPECT_EQ(load_hardware_spec("mi355x").math_dtype_for("fp4"), "fp4");
  EXPECT_EQ(load_hardware_spec("mi325x").math_dtype_for("fp4"), "fp8");
}
