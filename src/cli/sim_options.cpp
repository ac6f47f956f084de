#include "cli/sim_options.h"

#include <cstdio>

#include "cli/cli_numbers.h"
#include "load/profile_config.h"

#include "common/error.h"
#include "sim/specs.h"

namespace agentperf::cli {

namespace {
std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}
}  // namespace

void add_sim_engine_options(CLI::App& cmd, SimEngineOptions& o) {
  auto* g = "Engine";
  auto& c = o.cfg;
  cmd.add_option("--model-spec", o.model,
                 "Model spec: a JSON file, or a shipped name (" + joined(sim::builtin_model_names()) + ")")
      ->group(g)->capture_default_str();
  cmd.add_option("--hardware", o.hardware,
                 "Hardware spec: a JSON file, or a shipped name (" + joined(sim::builtin_hardware_names()) + ")")
      ->group(g)->capture_default_str();
  cmd.add_option("--hardware-profile", o.hardware_profile,
                 "Measured hardware profile (agentperf calibrate) replacing the spec's efficiency guesses")
      ->check(CLI::ExistingFile)->group(g);
  cmd.add_option("--scheduler", o.scheduler,
                 "Scheduler to follow: sglang (prefill-first steps) or vllm (V1: decode + prefill chunks in one step "
                 "under --max-num-batched-tokens)")
      ->check(CLI::IsMember({"sglang", "vllm"}))->group(g)->capture_default_str();
  o.max_num_batched_tokens_flag =
      cmd.add_option("--max-num-batched-tokens", c.max_num_batched_tokens,
                     "With --scheduler vllm: tokens per step, decode and prefill together")
          ->transform(tokens_in(1, limits::max_tokens))->group(g)->capture_default_str();
  cmd.add_option("--engine-profile", o.engine_profile,
                 "Engine costs: a shipped profile (sglang, vllm, roofline) or a JSON file from `agentperf calibrate "
                 "engine` (default: the shipped profile of --scheduler)")
      ->group(g);
  cmd.add_option("--tp,--tp-size", c.tp, "Tensor-parallel size (1 to 64; above 8 spans nodes)")
      ->transform(int_in(1, 64))->group(g)->capture_default_str();
  cmd.add_option("--mem-fraction-static", c.mem_fraction_static, "Share of HBM for weights + KV + state pools")
      ->check(real_in(0.05, 0.99))->group(g)->capture_default_str();
  cmd.add_option("--chunked-prefill-size", c.chunked_prefill_size, "Largest prefill chunk of one request (tokens)")
      ->transform(tokens_in(1, limits::max_tokens))->group(g)->capture_default_str();
  cmd.add_option("--max-prefill-tokens", c.max_prefill_tokens, "New tokens per prefill batch")
      ->transform(tokens_in(1, limits::max_tokens))->group(g)->capture_default_str();
  cmd.add_option("--max-running-requests", c.max_running_requests, "Running batch cap (0 = memory only)")
      ->transform(int_in(0, limits::max_concurrency))->group(g)->capture_default_str();
  cmd.add_option("--max-total-tokens", c.max_total_tokens, "Cap on the KV pool in tokens (0 = what memory allows)")
      ->transform(tokens_in(0, limits::max_tokens))->group(g)->capture_default_str();
  cmd.add_option("--max-mamba-cache-size", c.max_mamba_cache_size,
                 "Hybrid models: device state slots for running and cached requests, set outright (0 = SGLang's "
                 "share of the memory left after the weights)")
      ->transform(int_in(0, limits::max_concurrency))->group(g)->capture_default_str();
  cmd.add_option("--swa-full-tokens-ratio", c.swa_full_tokens_ratio,
                 "DeepSeek-V4 models: size the raw sliding-window pool as this share of the full tokens (0 = the "
                 "engine's sizing: DeepSeek-V4.1's is cap-sized, by the request cap and --swa-prefix-tails)")
      ->check(real_in(0, 1))->group(g)->capture_default_str();
  cmd.add_option("--swa-prefix-tails", c.swa_prefix_tails,
                 "DeepSeek-V4.1 under sglang: cached prefixes whose last sliding window the cap-sized pool keeps, so "
                 "that they stay reusable (-1 = SGLang's 4 x --max-running-requests)")
      ->transform(int_in(-1, limits::max_concurrency))->group(g)->capture_default_str();
  cmd.add_option("--kv-cache-dtype", o.kv_cache_dtype,
                 "KV cache element type: auto (the model spec's), fp8 / fp8_e4m3 / fp8_e5m2 (1 byte), bf16 / fp16 "
                 "(2 bytes); sizes the KV pool and the attention reads")
      ->group(g)->capture_default_str();
  const std::vector<std::string>& dsa_backends = sim::dsa_backend_names();
  cmd.add_option("--dsa-prefill-backend,--nsa-prefill-backend", c.dsa_prefill_backend,
                 "DSA models (GLM-5): SGLang's sparse-attention prefill backend; with an FP8 cache it decides the "
                 "latent's layout in the KV pool (auto: trtllm on Blackwell, FlashMLA on Hopper, TileLang on ROCm)")
      ->check(CLI::IsMember(dsa_backends))->group(g)->capture_default_str();
  cmd.add_option("--dsa-decode-backend,--nsa-decode-backend", c.dsa_decode_backend,
                 "DSA models: SGLang's sparse-attention decode backend (as --dsa-prefill-backend)")
      ->check(CLI::IsMember(dsa_backends))->group(g)->capture_default_str();
  cmd.add_option("--attention-backend", c.attention_backend,
                 "With --scheduler vllm: vLLM's attention backend; TRITON_ATTN walks each request's context in one "
                 "workgroup whenever a step holds a verify or a prefill chunk (modelled on GPUs whose spec gives "
                 "serial_kv_walk_bytes_per_s: docs/sim.md)")
      ->group(g);
  cmd.add_option("--draft-attention-backend", c.draft_attention_backend,
                 "With --scheduler vllm: the drafter's attention backend, the attention_backend of vLLM's "
                 "--speculative-config (default: --attention-backend's)")
      ->group(g);
  cmd.add_option("--cuda-graph-max-bs", c.cuda_graph_max_bs, "Largest decode batch replayed as a CUDA graph")
      ->transform(int_in(1, 65536))->group(g)->capture_default_str();
  cmd.add_option("--page-size", c.page_size, "Tokens per KV page (prefix matching unit)")
      ->transform(int_in(1, 65536))->group(g)->capture_default_str();
  cmd.add_option("--tokenizer-worker-num", c.tokenizer_workers,
                 "API-server loops that template and tokenize requests (each prompt is tokenized whole, in turn)")
      ->transform(int_in(1, 256))->group(g)->capture_default_str();
  cmd.add_option("--stream-interval", c.stream_interval, "Decode forwards between streamed chunks")
      ->transform(int_in(1, 100000))->group(g)->capture_default_str();
  cmd.add_option("--scheduler-recv-interval", c.scheduler_recv_interval,
                 "The scheduler takes new requests in every N decode iterations (at once after a prefill or when idle)")
      ->transform(int_in(1, 100000))->group(g)->capture_default_str();
  cmd.add_option("--prefill-decode-interval", c.prefill_decode_interval,
                 "Scheduler iterations without any prefill after one with a prefill (0 = off; with DP attention, "
                 "a prefill on any rank holds every rank)")
      ->transform(int_in(0, 100000))->group(g)->capture_default_str();
  cmd.add_flag("--enable-prefill-delayer", c.prefill_delayer,
               "DP attention: a rank ready to prefill waits while another is not, up to "
               "--prefill-delayer-max-delay-passes iterations")
      ->group(g);
  cmd.add_option("--prefill-delayer-max-delay-passes", c.prefill_delayer_max_passes,
                 "Iterations the prefill delayer may hold a ready rank (it runs on the last)")
      ->transform(int_in(1, 100000))->group(g)->capture_default_str();
  cmd.add_option("--speculative-algorithm", o.speculative_algorithm,
                 "NEXTN (or EAGLE) enables MTP speculative decoding; DSPARK a block drafter "
                 "(--speculative-dspark-block-size)")
      ->check(CLI::IsMember({"", "NEXTN", "EAGLE", "DSPARK"}))->group(g);
  cmd.add_option("--speculative-dspark-block-size", c.spec.block_size,
                 "With DSPARK: tokens one draft forward proposes; a round verifies them with the root and accepts "
                 "up to block + 1")
      ->transform(int_in(1, 16))->group(g);
  cmd.add_option("--speculative-num-steps", c.spec.num_steps, "Draft depth")
      ->transform(int_in(1, 8))->group(g)->capture_default_str();
  cmd.add_option("--speculative-num-draft-tokens", c.spec.num_draft_tokens, "Tokens verified per request per round")
      ->transform(int_in(1, 16))->group(g)->capture_default_str();
  cmd.add_option("--speculative-accept-length", c.spec.accept_length,
                 "Simulated accept length incl. the bonus token (SGLANG_SIMULATE_ACC_LEN; 3.39 for 3 steps on Qwen3.5)")
      ->check(real_in(1, 9))->group(g)->capture_default_str();
  cmd.add_flag("--enable-hierarchical-cache", c.hicache.enabled, "HiCache: back the radix cache with host DRAM")->group(g);
  cmd.add_option("--hicache-size", c.hicache.size_gb, "Host pool size per rank and per pool, GB (0 = use --hicache-ratio)")
      ->check(real_in(0, 1e6, false, "a number of GB"))->group(g)->capture_default_str();
  cmd.add_option("--hicache-ratio", c.hicache.ratio, "Host KV tokens = device tokens x ratio")
      ->check(real_in(0, 1000, true))->group(g)->capture_default_str();
  cmd.add_option("--hicache-write-policy", o.write_policy, "write_through, write_through_selective or write_back")
      ->check(CLI::IsMember({"write_through", "write_through_selective", "write_back"}))->group(g)->capture_default_str();
  // Accepted so SGLang launch commands (the recipes' {hicache_args}) run
  // unchanged; the simulator models one transfer path (overlapped, layer by
  // layer) whatever they say.
  cmd.add_option("--hicache-io-backend", o.hicache_io_backend, "SGLang's HiCache transfer backend (accepted; not modelled)")
      ->check(CLI::IsMember({"kernel", "direct", "kernel_ascend"}))->group(g);
  cmd.add_option("--hicache-mem-layout", o.hicache_mem_layout, "SGLang's HiCache host layout (accepted; not modelled)")
      ->check(CLI::IsMember({"layer_first", "page_first", "page_first_direct"}))->group(g);
  cmd.add_option("--engine-seed", c.seed, "Seed of the simulated acceptance draws")->group(g)->capture_default_str();
}

void finish_sim_engine_options(SimEngineOptions& o) {
  o.cfg.scheduler = sim::parse_scheduler(o.scheduler);
  // SGLang's scheduler never reads it: given alone it would be ignored and
  // the run would not be the vLLM one the flag asks for.
  if (o.max_num_batched_tokens_flag && o.max_num_batched_tokens_flag->count() > 0 &&
      o.cfg.scheduler != sim::SchedulerKind::vllm)
    throw UserError("--max-num-batched-tokens applies to --scheduler vllm (the sglang scheduler steps by "
                    "--chunked-prefill-size and --max-prefill-tokens): add --scheduler vllm or drop it");
  // The raw-window flags size a DeepSeek-V4 pool; elsewhere they would be ignored.
  if (o.cfg.swa_prefix_tails >= 0 || o.cfg.swa_full_tokens_ratio > 0) {
    const sim::ModelSpec m = sim::load_model_spec(o.model);
    if (m.attention.kind != sim::AttentionLayout::Kind::compressed)
      throw UserError(std::string(o.cfg.swa_prefix_tails >= 0 ? "--swa-prefix-tails" : "--swa-full-tokens-ratio") +
                      ": model spec " + o.model + " has no raw sliding-window pool (DeepSeek-V4 models do)");
    if (o.cfg.swa_prefix_tails >= 0 && !m.attention.swa_cap_sizing)
      throw UserError("--swa-prefix-tails: " + o.model +
                      "'s raw-window pool is sized by --swa-full-tokens-ratio, not by prefix tails");
    if (o.cfg.swa_prefix_tails >= 0 && o.cfg.scheduler != sim::SchedulerKind::sglang)
      throw UserError("--swa-prefix-tails sizes SGLang's raw-window pool: add --scheduler sglang or drop it");
  }
  // As a command's flags are read (the walk is vLLM's kernel's).
  for (std::string* b : {&o.cfg.attention_backend, &o.cfg.draft_attention_backend}) *b = sim::vllm_backend_name(*b);
  if ((!o.cfg.attention_backend.empty() || !o.cfg.draft_attention_backend.empty()) &&
      o.cfg.scheduler != sim::SchedulerKind::vllm)
    throw UserError(std::string(o.cfg.attention_backend.empty() ? "--draft-attention-backend" : "--attention-backend") +
                    " names a vLLM attention backend: add --scheduler vllm or drop it");
  o.cfg.kv_cache_dtype_bytes = sim::parse_kv_cache_dtype(o.kv_cache_dtype);
  o.cfg.costs = sim::load_engine_costs(o.engine_profile.empty() ? o.scheduler : o.engine_profile);
  o.cfg.spec.enabled = !o.speculative_algorithm.empty();
  if (o.speculative_algorithm == "DSPARK") {
    if (o.cfg.spec.block_size <= 0) throw UserError("--speculative-algorithm DSPARK needs --speculative-dspark-block-size");
    o.cfg.spec.draft_block(o.cfg.spec.block_size);  // one draft forward; SGLang verifies block + 1 tokens
  } else if (o.cfg.spec.block_size > 0) {
    throw UserError("--speculative-dspark-block-size needs --speculative-algorithm DSPARK");
  }
  if (o.cfg.spec.enabled && o.cfg.spec.accept_length > o.cfg.spec.max_accepted()) {
    char al[32];
    std::snprintf(al, sizeof al, "%g", o.cfg.spec.accept_length);
    throw UserError("--speculative-accept-length " + std::string(al) + " is more than a round can accept (" +
                    std::to_string(o.cfg.spec.max_accepted()) +
                    ": the drafted chain or block and the bonus token); raise --speculative-num-steps or the block size");
  }
  if (o.cfg.spec.enabled && o.cfg.spec.block_size == 0 && o.cfg.spec.num_draft_tokens != o.cfg.spec.num_steps + 1)
    throw UserError("--speculative-num-draft-tokens must be --speculative-num-steps + 1 for a chain (topk 1): got " +
                    std::to_string(o.cfg.spec.num_draft_tokens) + " with " + std::to_string(o.cfg.spec.num_steps) +
                    " steps");
  o.cfg.hicache.write_policy = sim::parse_write_policy(o.write_policy);
  if (o.cfg.hicache.size_gb > 0 && !o.cfg.hicache.enabled)
    throw UserError("--hicache-size needs --enable-hierarchical-cache");
}

sim::HardwareSpec load_engine_hardware(const SimEngineOptions& o) {
  return sim::load_hardware_spec(o.hardware, o.hardware_profile);
}

}  // namespace agentperf::cli
