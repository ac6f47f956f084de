// Model and hardware specifications for the simulator, loaded from JSON
// data files (data/models, data/hardware): the numbers live in data, not in
// code. The shipped files are compiled in and found by name; any other file
// is loaded by path.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace agentperf::sim {

struct HardwareProfile;

struct LinearAttentionSpec {
  int conv_dim = 0, conv_kernel = 0, conv_dtype_bytes = 2;
  int v_heads = 0, v_dim = 0, k_dim = 0, ssm_dtype_bytes = 2;
};

// How a full-attention layer stores and reads KV. GQA (the default when a
// spec has no "attention" object): 2 x KV heads x head_dim per layer,
// sharded over TP. MLA: one latent of kv_lora_rank + qk_rope_head_dim
// elements per layer, held whole by every TP rank (SGLang MLATokenToKVPool),
// plus extra_bytes_per_layer (indexer keys, quantization scales). Sliding
// window: `windowed_layers` of the full-attention layers keep only the last
// `window` tokens.
struct AttentionLayout {
  enum class Kind { gqa, mla, sliding_window };
  Kind kind = Kind::gqa;
  int kv_lora_rank = 0, qk_rope_head_dim = 0;
  int extra_bytes_per_layer = 0;  // MLA: per token per layer, beyond the latent
  int window = 0, windowed_layers = 0;
};

struct MoeSpec {
  int experts = 0, top_k = 0;
  double routed_weight_bytes = 0;
};

struct MtpSpec {
  double weight_bytes = 0;
  int draft_kv_layers = 1;
  double moe_share_of_weights = 0.0;  // part of the MTP layer's bytes that are routed experts
  // The draft model's own embedding and LM head (vocab x hidden each, split
  // over TP): loaded with the draft and resident while SGLang sizes its
  // pools, then freed when the draft takes the target's (set_embed_and_head).
  double own_embed_head_bytes = 0;
};

struct ModelSpec {
  std::string name, served_model_name;
  int layers_full = 0, layers_linear = 0;
  int hidden = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  int kv_dtype_bytes = 1;
  AttentionLayout attention;
  std::optional<LinearAttentionSpec> linear;
  std::optional<MoeSpec> moe;
  std::optional<MtpSpec> mtp;
  double dense_weight_bytes = 0;  // read every forward (attention, GDN, shared experts, embeddings, lm_head)
  double other_weight_bytes = 0;  // resident but not read per token (vision tower, ...)
  double active_params = 0;
  std::string compute_dtype = "bf16";
  int max_context = 0;

  bool hybrid() const { return linear.has_value() && layers_linear > 0; }
  double total_weight_bytes() const;  // target model, without MTP
  // KV heads held by one TP rank: sharded, or replicated when tp > kv_heads (SGLang get_num_kv_heads).
  int kv_heads_per_rank(int tp) const;
  bool mla() const { return attention.kind == AttentionLayout::Kind::mla; }
  // KV bytes one layer holds per token on one rank.
  double kv_bytes_per_token_layer_rank(int tp) const;
  // Full-attention layers whose KV grows with the context (windowed layers excluded).
  int kv_growing_layers() const;
  // KV bytes per context token per rank, over the layers whose KV grows with
  // the context; sliding-window layers are in window_kv_bytes_per_request_rank.
  double kv_bytes_per_token_rank(int tp) const;
  double draft_kv_bytes_per_token_rank(int tp) const;  // the MTP layer's KV
  double state_bytes_per_request_rank(int tp) const;   // linear-attention conv + SSM state
  // Sliding-window layers: KV capped at `window` tokens per request (0 for
  // other layouts). Not yet charged by the memory plan or the engine.
  double window_kv_bytes_per_request_rank(int tp) const;
  // QK^T + PV FLOPs per query token per context token, over the layers whose
  // KV grows with the context (MLA: absorbed form, over the latent).
  double attention_flops_per_token_per_ctx() const;
};

struct HardwareSpec {
  std::string name;
  double hbm_bytes = 0, hbm_usable_bytes = 0, hbm_bandwidth = 0;
  std::map<std::string, double> peak_flops;
  double nvlink_bandwidth = 0, host_link_bandwidth = 0;
  double eff_hbm = 0.8, eff_gemm = 0.7, eff_attention = 0.5, eff_nvlink = 0.75, eff_host_link = 0.9;
  double allreduce_alpha_s = 1e-5;
  double launch_cuda_graph_s = 4e-4, launch_eager_s = 2.5e-3, per_step_cpu_s = 3e-4;
  // Peak for a dtype, falling back to the best lower precision the chip has
  // (an H200 has no FP4 tensor cores, so FP4 weights run FP8 math).
  double peak_for(const std::string& dtype) const;
  // The dtype whose peak peak_for() returns.
  std::string math_dtype_for(const std::string& dtype) const;

  // Measured efficiencies (agentperf calibrate); null: the fixed ones above.
  std::shared_ptr<const HardwareProfile> profile;
  // Host-to-device bytes per second for transfers of `page_bytes` pages.
  double host_link_rate(double page_bytes) const;
};

// name: a shipped spec ("qwen3.5-397b-a17b-nvfp4", "b200") or a path to a
// JSON file. Throws UserError naming the file and the missing/invalid field.
ModelSpec load_model_spec(const std::string& name_or_path);
HardwareSpec load_hardware_spec(const std::string& name_or_path);
// The spec with a measured profile attached (none when profile_path is empty).
HardwareSpec load_hardware_spec(const std::string& name_or_path, const std::string& profile_path);
std::vector<std::string> builtin_model_names();
std::vector<std::string> builtin_hardware_names();

}  // namespace agentperf::sim
