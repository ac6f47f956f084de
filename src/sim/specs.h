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
// `window` tokens. Compressed (DeepSeek-V4 CSA/HCA): every layer keeps a raw
// window of `window` rows, CSA layers one row per `csa_ratio` tokens plus a
// lightning-indexer key per row (attention reads `csa_topk` rows), HCA
// layers one row per `hca_ratio` tokens (read whole); one latent row of
// `entry_bytes` held whole by every rank, the pool sized as SGLang's
// DSV4PoolConfigurator does. Sparse GQA (MiniMax-M3 MSA): GQA KV in every
// layer plus, in `sparse_layers`, one index key per token (not split over
// TP); sparse layers read the index keys of the whole context and the GQA KV
// of `topk_tokens` tokens. Sparse MLA (DSA: GLM-5, DeepSeek-V3.2): MLA whose
// every layer reads the index keys of the whole context and the latents of
// `topk_tokens` tokens. Each layout's rule lives in ModelSpec (specs.cpp).
struct AttentionLayout {
  enum class Kind { gqa, mla, sliding_window, compressed, sparse_gqa };
  Kind kind = Kind::gqa;
  int kv_lora_rank = 0, qk_rope_head_dim = 0;
  int extra_bytes_per_layer = 0;  // MLA: per token per layer, beyond the latent (sparse MLA: the index key)
  int window = 0, windowed_layers = 0;  // sliding_window; compressed: the raw window (window only)
  // compressed
  int entry_bytes = 0;  // one stored row (raw or compressed) per layer
  int csa_layers = 0, csa_ratio = 0, csa_topk = 0;
  int indexer_bytes = 0;  // one CSA indexer key row, with its scale
  int hca_layers = 0, hca_ratio = 0;
  double swa_full_tokens_ratio = 0;  // SGLang --swa-full-tokens-ratio: raw-window pool / full tokens
  // SGLang sizes this model's raw-window pool by its request cap and a count
  // of cached prefix tails (cap mode) unless --swa-full-tokens-ratio is
  // given (sim/memory_plan.h, swa_cap_sizing()); swa_full_tokens_ratio is
  // then only its fallback.
  bool swa_cap_sizing = false;
  int csa_state_ring = 0, hca_state_ring = 0;  // compressor state rows (SGLang get_compress_state_ring_size)
  // Caches shared across layers (DeepSeek-V4.1: kv_source_layer_ids,
  // index_source_layer_ids): of the CSA layers, how many own a compressed
  // cache (rows, indexer keys and compressor states stored) and how many
  // score the indexer over the context; the others read the top-k rows of
  // the nearest owner below them with its selection. Both are counted at
  // csa_ratio: a layer at half the ratio stores and scores twice the rows,
  // so it counts as two. 0 in the file: every CSA layer (DeepSeek-V4).
  int csa_cache_layers = 0, csa_index_layers = 0;
  int csa_owning_layers() const { return csa_cache_layers > 0 ? csa_cache_layers : csa_layers; }
  int csa_scoring_layers() const { return csa_index_layers > 0 ? csa_index_layers : csa_layers; }
  // compressed, sparse_gqa and sparse MLA: the indexer's query heads and key width
  int index_heads = 0, index_dim = 0;
  // sparse_gqa (and sparse MLA's topk_tokens)
  int sparse_layers = 0, index_dtype_bytes = 0, topk_tokens = 0;
  // Sparse MLA (DeepSeek Sparse Attention, GLM-5's GlmMoeDsa): an MLA layout
  // with topk_tokens > 0. A layer's lightning indexer scores the index key
  // of every context token (index_key_bytes each, part of
  // extra_bytes_per_layer) and attention reads the latents of the top-k.
  int index_key_bytes = 0;
  // Sparse MLA: the layers that run their own indexer ("index_layers"; 0:
  // every layer). GLM-5.2's IndexShare (config.json `indexer_types`) gives
  // an indexer to 21 of its 78 layers; the other 57 own no indexer weights
  // and reuse the top-k of the last layer that scored, so they neither score
  // nor read index keys. The KV pool is sized as before (ModelSpec::
  // kv_bytes_per_token_rank: an index key in every layer), as the engines'
  // DSA pools allocate it.
  int index_layers = 0;
  bool sparse_mla() const { return kind == Kind::mla && topk_tokens > 0; }
  // Sparse MLA with an FP8 cache: whether the engine stores each latent in
  // FlashMLA's scaled layout (kv_lora_rank FP8 bytes + one 4-byte scale per
  // 128 of them + the rope part in BF16: 656 B for 512 + 64) instead of the
  // raw (kv_lora_rank + rope) bytes (576). Not a property of the model: set
  // by served_model() from the engine's DSA backend and the platform.
  bool fp8_scaled_latent = false;
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
  // The model family (architecture and training lineage: qwen3.5, deepseek-v4,
  // glm-5, ...): validation errors are reported, and fitted coefficients
  // judged leave-one-family-out, per family.
  std::string family;
  int layers_full = 0, layers_linear = 0;
  int hidden = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  int kv_dtype_bytes = 1;
  AttentionLayout attention;
  std::optional<LinearAttentionSpec> linear;
  std::optional<MoeSpec> moe;
  std::optional<MtpSpec> mtp;
  double dense_weight_bytes = 0;  // read every forward (attention, GDN, shared experts, embeddings, lm_head)
  double other_weight_bytes = 0;  // resident but not read per token (vision tower, ...)
  // The part of dense_weight_bytes that every DP-attention rank holds whole
  // instead of 1/TP of it: the attention projections (with a DSA indexer's)
  // and the input embedding. SGLang shards attention over the attention-TP
  // group (TP / DP: 1 rank when DP = TP) and builds the embedding without
  // TP under DP attention (python/sglang/srt/models/deepseek_v2.py,
  // VocabParallelEmbedding enable_tp=not enable_dp_attention). 0: not given
  // (the rank holds 1/TP of everything).
  double dp_attention_replicated_bytes = 0;
  double active_params = 0;
  std::string compute_dtype = "bf16";
  // A checkpoint in an OCP MX format (MXFP8: e4m3 with an E8M0 scale per 32
  // values) as vLLM holds it on a chip without MX support (ROCm gfx942:
  // MI300X, MI325X): no native MX kernel runs there, so vLLM dequantizes
  // the MX weights to BF16 once at load and runs BF16 GEMMs and a BF16
  // Triton fused MoE (served_model() in memory_plan.h). The bytes of the
  // dense and routed weights once so held, and the math dtype they then
  // run. Absent: the checkpoint is not MX, or holds as it is everywhere.
  struct WeightsWithoutMx {
    double dense_weight_bytes = 0, routed_weight_bytes = 0;
    std::string compute_dtype = "bf16";
  };
  std::optional<WeightsWithoutMx> weights_without_mx;
  int max_context = 0;
  // Layers a prompt token runs through, when the engine skips the rest for
  // all but each request's last `prefill_tail_tokens` prompt rows
  // (DeepSeek-V4.1's layers past its last KV-cache source own no cache of
  // their own, so a prompt row only needs them inside the sliding window;
  // 0: every layer). prefill_work_share() is the resulting share of a
  // full forward's per-token work.
  int prefill_layers = 0, prefill_tail_tokens = 0;

  bool hybrid() const { return linear.has_value() && layers_linear > 0; }
  // Of a forward's per-token GEMM and attention work, the share that
  // `prefill_tokens` prompt tokens of `prefill_requests` requests cost
  // (1 without prefill_layers).
  double prefill_work_share(double prefill_tokens, double prefill_requests) const;
  double total_weight_bytes() const;  // target model, without MTP
  // KV heads held by one TP rank: sharded, or replicated when tp > kv_heads (SGLang get_num_kv_heads).
  int kv_heads_per_rank(int tp) const;
  bool mla() const { return attention.kind == AttentionLayout::Kind::mla; }
  // KV bytes one layer holds per token on one rank (compressed and sparse
  // GQA: the average over layers, which is how SGLang prices the draft's
  // layers: cell size x (1 + draft layers / layers)).
  double kv_bytes_per_token_layer_rank(int tp) const;
  // Full-attention layers whose KV grows with the context (windowed layers excluded).
  int kv_growing_layers() const;
  // KV bytes per context token per rank, over the layers whose KV grows with
  // the context; sliding-window layers are in window_kv_bytes_per_request_rank.
  // Compressed: SGLang's bytes per full token, raw-window pool (charged at
  // swa_full_tokens_ratio) and compressor states included.
  double kv_bytes_per_token_rank(int tp) const;
  double draft_kv_bytes_per_token_rank(int tp) const;  // the MTP layer's KV
  double state_bytes_per_request_rank(int tp) const;   // linear-attention conv + SSM state
  // Sliding-window layers: KV capped at `window` tokens per request (0 for
  // other layouts). Not yet charged by the memory plan or the engine.
  // Compressed: the raw window every layer holds per request (charged through
  // swa_full_tokens_ratio in kv_bytes_per_token_rank).
  double window_kv_bytes_per_request_rank(int tp) const;
  // Compressed: SGLang's fixed pool of HCA compressor states for
  // max_running requests (DSV4PoolConfigurator._get_c128_state_fixed_bytes);
  // 0 for other layouts.
  double compress_state_pool_bytes_rank(std::int64_t max_running) const;
  // KV bytes attention reads in one forward for `requests` requests whose
  // contexts sum to `context_tokens` (each request at the mean context).
  // Linear in the context except for the capped reads of compressed (raw
  // window, top-k rows) and sparse GQA (top-k tokens) layers.
  double kv_read_bytes_rank(int tp, double requests, double context_tokens) const;
  double draft_kv_read_bytes_rank(int tp, double requests, double context_tokens) const;
  // QK^T + PV (and indexer) FLOPs of `query_tokens` tokens attending to
  // `attn_pairs` (query, context token) pairs in all, each query at the mean
  // context attn_pairs / query_tokens.
  double attention_flops(double query_tokens, double attn_pairs) const;
  // Of attention_flops, the lightning indexer's (the index heads' scores of
  // every context row), over all index heads; 0 for layouts without one.
  double indexer_flops(double query_tokens, double attn_pairs) const;
  // The index heads one TP rank scores. The engines do not shard a DSA
  // indexer over TP: its query, key and head-weight projections are
  // ReplicatedLinear and every rank scores every head (SGLang
  // python/sglang/srt/layers/attention/nsa/nsa_indexer.py @ 005e8bf8abf4,
  // Indexer.__init__; vLLM vllm/model_executor/models/deepseek_v2.py
  // @ 002d6073aa03, class Indexer: "no tensor parallel, just replicated").
  // DeepSeek-V4's CSA indexer is taken to be built the same way. vLLM's
  // MiniMax-M3 indexer splits its heads over TP, one head at least
  // (vllm/models/minimax_m3/common/indexer.py @ 0484480bc730,
  // num_index_heads = max(1, total // tp)): sparse GQA layouts.
  double index_heads_per_rank(int tp) const;
  // A kernel that gives each (request, KV head) one workgroup and does not
  // split the context (vLLM's Triton unified attention, its 2D launch:
  // sim/step_time.h) walks, in each of these layers, the request's whole
  // GQA K and V of one head: head_dim x 2 x dtype bytes a token
  // (gqa_head_bytes_per_token). GQA: the layers whose KV grows with the
  // context; sparse GQA: the dense layers only (the sparse ones read their
  // top-k blocks, the indexer its keys in a split kernel); 0 for MLA and
  // compressed layouts, which that kernel does not serve.
  int context_walk_layers() const;
  // Sparse MLA: the layers that score the indexer (AttentionLayout::index_layers, else all).
  int scoring_layers() const;
  double gqa_head_bytes_per_token() const { return 2.0 * head_dim * kv_dtype_bytes; }
  // The same per query token per context token, over the layers whose KV
  // grows with the context (MLA: absorbed form, over the latent); for
  // compressed and sparse GQA the cost of one more context token beyond the
  // window and top-k caps.
  double attention_flops_per_token_per_ctx() const;

 private:
  bool capped_reads() const;  // compressed, sparse GQA or sparse MLA: reads capped at a window / top-k
  // Sparse MLA: what one layer reads for one query at `context` tokens, on a
  // rank: every index key (a scoring layer's part) and the top-k latents.
  struct SparseMlaRead {
    double index_keys = 0, top_k_latents = 0;
  };
  SparseMlaRead sparse_mla_read(int tp, double context) const;
  double mla_pair() const;    // absorbed MLA FLOPs per (query, context token) pair per layer
  double gqa_bytes_per_token_layer_rank(int tp) const;  // 2 x KV heads per rank x head_dim x dtype
  // One query's attention FLOPs at context `ctx` (all layers).
  double attention_flops_per_query(double ctx) const;
  // Of them, the indexer's.
  double indexer_flops_per_query(double ctx) const;
};

struct HardwareSpec {
  std::string name;
  // The software platform the engines select kernels by: CUDA with the
  // chip's compute capability (sm90 Hopper, sm100/sm103 Blackwell) or ROCm
  // (gfx942 MI300X/MI325X, gfx950 MI355X). Engines choose defaults by it,
  // e.g. SGLang's DSA attention backend and with it the KV layout
  // (dsa_fp8_scaled_latent in memory_plan.h). "platform" in the JSON; a
  // spec without one is taken as cuda_sm90.
  bool rocm = false;
  int cuda_sm = 90;  // compute capability x 10 (CUDA only)
  std::string platform = "cuda_sm90";
  double hbm_bytes = 0, hbm_usable_bytes = 0, hbm_bandwidth = 0;
  std::map<std::string, double> peak_flops;
  double nvlink_bandwidth = 0, host_link_bandwidth = 0;
  // One GPU's link to another node's GPUs (the scale-out NIC, or NVLink in a
  // rack-scale NVLink domain), one way, for disaggregated serving's KV
  // transfer; 0 when the spec gives none.
  double kv_transfer_bandwidth = 0;
  // The rate at which ONE workgroup of an attention kernel that does not
  // split a request's context reads that request's KV, walking it tile by
  // tile ("serial_kv_walk_bytes_per_s"; 0: not known for this GPU, and such
  // a walk is not modelled on it). vLLM's Triton unified attention takes
  // that path for every request of a step whose longest query is over one
  // token (sim/step_time.h, "The serial KV walk"); its time is then set by
  // the longest context in the step, not by the HBM bandwidth.
  double serial_kv_walk_bytes_per_s = 0;
  double eff_hbm = 0.8, eff_gemm = 0.7, eff_attention = 0.5, eff_nvlink = 0.75, eff_host_link = 0.9;
  double allreduce_alpha_s = 1e-5;
  // The engine profile's per-layer fixed costs (EngineCosts'
  // moe_layer_step_s in every forward, moe_prefill_layer_s and
  // linear_prefill_layer_s in a prefill: kernel latencies of a MoE or
  // linear-attention layer that do not grow with the batch) were fitted on
  // NVIDIA GPUs; a platform whose kernels take another time for that work
  // scales them ("layer_latency_scale": {"decode", "prefill"}, 1 when
  // absent). Two scales, because a platform's decode and prefill kernels
  // are different code and need not be off by the same factor.
  double layer_latency_scale_decode = 1, layer_latency_scale_prefill = 1;
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

// The spec's step-time coefficients a fit may set (`sim validate
// --fit-hardware`), by the names the JSON gives them: "efficiency.hbm",
// "efficiency.gemm", "efficiency.attention", "allreduce_alpha_s",
// "launch_overhead_s.cuda_graph", "launch_overhead_s.per_step_cpu",
// "layer_latency_scale.decode", "layer_latency_scale.prefill", and
// "layer_latency_scale": one scale for both (reads the decode one).
const std::vector<std::string>& hardware_coefficient_names();
// The coefficient's value in the spec, and setting it; both throw
// std::out_of_range for a name that is not one of the above.
double hardware_coefficient(const HardwareSpec& hw, const std::string& name);
void set_hardware_coefficient(HardwareSpec& hw, const std::string& name, double value);
// The values a fit may give it: a fraction for an efficiency, seconds for
// the rest (a microsecond to tens of milliseconds), a factor of 20 either
// way for a layer latency scale.
std::pair<double, double> hardware_coefficient_range(const std::string& name);

// name: a shipped spec ("qwen3.5-397b-a17b-nvfp4", "b200") or a path to a
// JSON file. Throws UserError naming the file and the missing/invalid field.
ModelSpec load_model_spec(const std::string& name_or_path);
HardwareSpec load_hardware_spec(const std::string& name_or_path);
// The spec with a measured profile attached (none when profile_path is empty).
HardwareSpec load_hardware_spec(const std::string& name_or_path, const std::string& profile_path);
std::vector<std::string> builtin_model_names();
std::vector<std::string> builtin_hardware_names();

}  // namespace agentperf::sim
