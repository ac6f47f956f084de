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
  // GLM-5.2 FP8: 78 layers x ((512 latent + 64 rope) x 1 B fp8 + 212 B DSA
  // scales and indexer keys) = 78 x 788 B, the same on every rank.
  const auto m = load_model_spec("glm-5.2-fp8");
  ASSERT_TRUE(m.mla());
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(1), 61464);
  EXPECT_DOUBLE_EQ(m.kv_bytes_per_token_rank(8), 61464);
  EXPECT_DOUBLE_EQ(m.draft_kv_bytes_per_token_rank(8), 788);
  // Absorbed attention: 2 x 64 heads x ((512 + 64) for QK^T + 512 for PV) x 78 layers.
  EXPECT_DOUBLE_EQ(m.attention_flops_per_token_per_ctx(), 2.0 * 64 * (576 + 512) * 78);
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
