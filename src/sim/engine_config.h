// Server flags of the simulated SGLang-like engine (names follow SGLang's
// server arguments: github.com/sgl-project/sglang,
// docs/advanced_features/server_arguments.md @ b36e8e198b71).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine_costs.h"

namespace agentperf::sim {

enum class WritePolicy { write_through, write_through_selective, write_back };
const char* write_policy_name(WritePolicy p) noexcept;
WritePolicy parse_write_policy(const std::string& s);  // throws UserError

struct SpecDecodeConfig {
  bool enabled = false;
  int num_steps = 3;          // --speculative-num-steps
  int num_draft_tokens = 4;   // --speculative-num-draft-tokens (chain: steps + 1)
  double accept_length = 3.39;  // SGLANG_SIMULATE_ACC_LEN, bonus token included
  // A block drafter (DSpark, --speculative-algorithm DSPARK
  // --speculative-dspark-block-size N) drafts N tokens in one forward
  // (num_steps 1, num_draft_tokens N + 1 with the verified root), so a round
  // accepts up to N + 1 tokens; a chain accepts up to num_steps + 1. 0: a chain.
  int block_size = 0;
  int max_accepted() const { return block_size > 0 ? block_size + 1 : num_steps + 1; }
  // The draft's shape: a chain of `steps` (topk 1), or a block drafter's block.
  void draft_chain(int steps) {
    num_steps = steps;
    num_draft_tokens = steps + 1;
    block_size = 0;
  }
  void draft_block(int block) {
    num_steps = 1;
    num_draft_tokens = block + 1;
    block_size = block;
  }
};

struct HiCacheConfig {
  bool enabled = false;       // --enable-hierarchical-cache
  double size_gb = 0;         // --hicache-size, per rank and per pool; 0 = use ratio
  double ratio = 2.0;         // --hicache-ratio
  WritePolicy write_policy = WritePolicy::write_through;  // --hicache-write-policy
  int load_back_threshold = 10;  // tokens; smaller host hits are recomputed
};

// Which engine's scheduler the simulator follows.
//  sglang: a step is either a prefill batch (new requests, one possibly
//          chunked, under --max-prefill-tokens) or one decode round of the
//          running batch; prefill goes first.
//  vllm:   vLLM V1: every step decodes the running requests and fills the
//          rest of a --max-num-batched-tokens budget with prefill chunks, in
//          one mixed forward.
enum class SchedulerKind { sglang, vllm };
const char* scheduler_name(SchedulerKind k) noexcept;
SchedulerKind parse_scheduler(const std::string& s);  // throws UserError

// --kv-cache-dtype as SGLang and vLLM spell it (auto, fp8, fp8_e4m3,
// fp8_e5m2, bf16, bfloat16, fp16, float16) -> bytes per element, 0 for auto;
// throws UserError naming the value.
int parse_kv_cache_dtype(const std::string& s);
// The values parse_kv_cache_dtype names in its error ("auto, fp8, ... or
// float16"), for other readers of the same field to name them alike.
const char* kv_cache_dtype_choices() noexcept;

// SGLang's DSA backend names (DSA_CHOICES, python/sglang/srt/server_args.py
// @ 001067fffe33) and "auto": what --dsa-prefill-backend and
// --dsa-decode-backend accept.
const std::vector<std::string>& dsa_backend_names();

// SGLang's --mem-fraction-static when a launch gives none (ServerArgs
// `_handle_gpu_memory_settings`, python/sglang/srt/server_args.py in
// github.com/sgl-project/sglang, releases 0.5.3-0.5.9): the fraction of the
// GPU's memory (`gpu_memory_bytes`, what the driver reports as the card's
// total) left after a reserve, in MiB, of 512 (attention metadata) + 1.5
// per token of the chunked-prefill size (at least 2048 tokens: prefill
// activations) + 2 per request of the CUDA-graph batch + TP/8 x 1024
// (parallel buffers); with DP attention (dp_size > 1) 3 more per graph
// request per DP rank, and 1.5 more above a graph batch of 300; at least
// 10 GiB on cards over 60 GiB; then 2 GiB more for an EAGLE/MTP draft.
// Rounded to three decimals, as SGLang does.
double sglang_default_mem_fraction_static(double gpu_memory_bytes, int tp, int chunked_prefill_size,
                                          int cuda_graph_max_bs, int dp_attention_size, bool speculative);

struct EngineConfig {
  SchedulerKind scheduler = SchedulerKind::sglang;
  int max_num_batched_tokens = 8192;  // vllm: tokens per step, decode and prefill together
  EngineCosts costs;                  // engine-level costs (neutral: the pure roofline)
  int tp = 1;
  double mem_fraction_static = 0.8;
  int chunked_prefill_size = 16384;
  int max_prefill_tokens = 16384;
  int max_running_requests = 0;  // 0 = limited by memory only
  std::int64_t max_total_tokens = 0;  // --max-total-tokens: a cap on the KV pool (0 = memory only)
  // --kv-cache-dtype: bytes per cached K or V element (1 for FP8, 2 for
  // BF16/FP16); 0 = auto, the model spec's kv_dtype_bytes.
  int kv_cache_dtype_bytes = 0;
  // SGLang's --dsa-prefill-backend / --dsa-decode-backend (--nsa-* before
  // the rename) for a DSA model (GLM-5, DeepSeek-V3.2): "auto" or a backend
  // name. They decide the FP8 latent's layout in the KV pool
  // (dsa_fp8_scaled_latent in memory_plan.h).
  std::string dsa_prefill_backend = "auto";
  std::string dsa_decode_backend = "auto";
  // vLLM's --attention-backend (as given, e.g. "TRITON_ATTN"; empty: the
  // platform's default), and the drafter's own, from the "attention_backend"
  // of --speculative-config (empty: the target's). The step time reads them
  // for vLLM's Triton unified attention (uses_triton_unified_attention).
  std::string attention_backend;
  std::string draft_attention_backend;
  int cuda_graph_max_bs = 64;
  int page_size = 1;
  int stream_interval = 1;       // decode forwards between streamed chunks
  int tokenizer_workers = 1;     // --tokenizer-worker-num: API-server loops that template and tokenize (sim/front_end_queue.h)
  // --scheduler-recv-interval: the scheduler takes new requests in only when
  // the forwards since it last did weigh this much (a decode or verify
  // iteration 1, a prefill 1000, so right after one); 1 = every iteration.
  int scheduler_recv_interval = 1;
  // --prefill-decode-interval: scheduler iterations that may not prefill
  // after one that did (0 = off). Alone, the engine counts its own prefills;
  // in a DP-attention group, a prefill on any rank holds every rank
  // (sim/lockstep_group.h).
  int prefill_decode_interval = 0;
  // --enable-prefill-delayer (DP attention only): a rank ready to prefill
  // waits while another rank is not, for at most prefill_delayer_max_passes
  // iterations (sim/lockstep_group.h).
  bool prefill_delayer = false;
  int prefill_delayer_max_passes = 30;  // --prefill-delayer-max-delay-passes
  double mamba_full_memory_ratio = 0.9;
  // --max-mamba-cache-size: hybrid models' device state slots set outright
  // (0: the mamba_full_memory_ratio share of the rest, sim/memory_plan.h).
  int max_mamba_cache_size = 0;
  int mamba_running_ratio = 3;   // MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO (no_buffer strategy)
  // --swa-full-tokens-ratio as the command gives it (0: not given), and
  // --swa-prefix-tails (-1: SGLang's default, 4 x max_running_requests).
  // For a cap-sized sliding-window pool (sim/memory_plan.h).
  double swa_full_tokens_ratio = 0;
  int swa_prefix_tails = -1;
  double new_token_ratio_init = 0.7;
  double new_token_ratio_min = 0.1;
  double new_token_ratio_decay = 0.001;  // per decode step while nothing is retracted
  int max_new_tokens_estimate_clip = 4096;
  SpecDecodeConfig spec;
  HiCacheConfig hicache;
  std::uint64_t seed = 0;
};

// Whether a vLLM attention backend name is the Triton unified attention
// (TRITON_ATTN): the kernel that walks a request's context in one workgroup
// when a step's longest query is over one token (sim/step_time.h).
bool uses_triton_unified_attention(const std::string& backend);
// A vLLM attention backend name as vLLM spells it: upper case, without the
// quotes a shell word or a JSON value carries ("'triton_attn'" -> TRITON_ATTN).
std::string vllm_backend_name(std::string name);

// A server command's scheduling flags, read as SGLang and vLLM read them,
// into `c`: --tokenizer-worker-num (vLLM: --api-server-count times
// --renderer-num-workers; VLLM_USE_RUST_FRONTEND=1, below),
// --chunked-prefill-size, --max-prefill-tokens, --stream-interval,
// --scheduler-recv-interval, --max-num-batched-tokens, --page-size (vLLM:
// --block-size), --prefill-decode-interval, --max-mamba-cache-size,
// --enable-prefill-delayer and --prefill-delayer-max-delay-passes,
// --swa-full-tokens-ratio and --swa-prefix-tails (0 allowed), vLLM's
// --attention-backend and the "attention_backend" of its
// --speculative-config JSON. A flag
// the command does not pass, or passes without a positive integer (a
// launcher's unexpanded "$CONC"), leaves its field as it was. One reader
// for the recipes' generated servers and the validation sets' published
// commands.
void apply_scheduling_flags(const std::string& command, EngineConfig& c);

// vLLM's Rust front end (VLLM_USE_RUST_FRONTEND=1, vendored from vLLM
// 0.24, vllm-project/vllm issue 40846) replaces the Python API server: a
// request is rendered through the chat template and tokenized inline in its
// own task (ChatRequestProcessor::prepare in rust/src/chat/src/lib.rs @
// 0010b8d1) on tokio's multi-thread runtime (#[tokio::main(flavor =
// "multi_thread")] in rust/src/cmd/src/main.rs @ 00a353d3), which runs one
// worker thread per CPU core. So long prompts are tokenized side by side,
// not one at a time behind one Python event loop: the front end is
// modelled as this many workers, a number below every GPU host's core
// count (112 to 192 on the shipped hardware's usual hosts, less the
// engine's own processes and the benchmark client on the same host) and
// above what any replay here keeps busy at once, so it adds each prompt's
// tokenizing time and no queue (`sim predict --tokenizer-worker-num` sets
// another number).
inline constexpr int kRustFrontendWorkers = 32;

// The environment variable that turns it on, and whether a value of it does
// ("1"); a launch command turns it on with `VLLM_USE_RUST_FRONTEND=1` among
// its words (as a launcher's `export` or an env prefix writes it), a
// recipe with it in `server.env`. use_rust_frontend gives `c` that front end.
inline constexpr const char* kRustFrontendEnv = "VLLM_USE_RUST_FRONTEND";
bool turns_on_rust_frontend(const std::string& value);
bool command_uses_rust_frontend(const std::string& command);
void use_rust_frontend(EngineConfig& c);

}  // namespace agentperf::sim
