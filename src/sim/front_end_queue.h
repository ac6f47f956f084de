// The API server in front of the scheduler: every request is parsed,
// rendered through the chat template and tokenized whole before the
// scheduler sees it, one request at a time per tokenizer worker.
//
// SGLang's HTTP server hands each chat request to TokenizerManager, which
// applies the chat template and runs the tokenizer over the whole rendered
// prompt on its event loop (python/sglang/srt/entrypoints/openai/
// serving_chat.py, managers/tokenizer_manager.py in
// github.com/sgl-project/sglang); --tokenizer-worker-num (default 1) runs
// more such loops. Nothing of it is cached across turns by default, so an
// agentic turn of 100k tokens pays for all 100k, not for the ~4k the radix
// cache misses: HF tokenizers encode about 1.3-4 MB of text a second per
// thread (huggingface/tokenizers pull requests 1582, 1584), i.e. about
// 1.5-3 us a token, and vLLM reports ~0.5 s to tokenize a ~200k-token
// prompt in its API server (vllm-project/vllm pull request 47583). A
// worker busy with one long prompt delays the next, which is why
// InferenceX's Qwen3.5 B200 AgentX launcher runs six tokenizer workers at
// TP4 (SemiAnalysisAI/InferenceX pull request 2420).
//
// vLLM's API server is modelled the same way, one worker per API server
// process (vLLM's --api-server-count, 1 unless data parallelism raises it).
// From mid-2025 its AsyncMicrobatchTokenizer (vllm-project/vllm pull request
// 19334) gathered up to 32 queued prompts into one batch encode in a single
// executor thread, and HF tokenizers encode a batch on several cores (Rayon,
// `encode_batch` in huggingface/tokenizers tokenizers/src/tokenizer/mod.rs
// @ afaae08): about 4.7x the throughput at 8-16 queued ~10k-token prompts
// (pull request 44172). Pull request 45759 (2026-06) removed it for the
// renderer's one-thread executor (pull request 34789: the fast tokenizer is
// not thread-safe), so vLLM images from then on tokenize one prompt at a
// time, as this queue does; images of 2025-07 to 2026-06 could be faster
// than it under queueing (not modelled: the validation set's vLLM series
// ran in 2026-09; TOKENIZERS_PARALLELISM=false would take the gain away).
// From vLLM 0.25 each API server tokenizes on --renderer-num-workers
// threads (default 1), each with its own tokenizer copy, and vLLM's Rust
// API server (VLLM_USE_RUST_FRONTEND=1) renders and tokenizes every request
// in its own task on one thread per core: the worker counts these give are
// in sim/engine_config.h (apply_scheduling_flags, kRustFrontendWorkers).
//
// The queue: `workers` servers, FIFO in arrival order; a request's service
// is front_end_s + front_end_token_s x prompt tokens. The virtual-time
// client (sim/virtual_client.h) and `sim serve` (sim/sim_server.h) both
// admit through it.
#pragma once
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "sim/engine_costs.h"

namespace agentperf::sim {

class FrontEndQueue {
 public:
  FrontEndQueue(const EngineCosts& costs, int workers);
  // When a request that reached the server at arrival_ns (nanoseconds on
  // any one clock) gets a worker, and when it is handed to the scheduler.
  // Calls come in arrival order.
  struct Admission {
    std::int64_t start_ns = 0, done_ns = 0;
  };
  Admission admit(std::int64_t arrival_ns, std::int64_t prompt_tokens);
  // The service time alone, in seconds.
  double service_s(std::int64_t prompt_tokens) const;
  bool free_of_cost() const { return fixed_s_ <= 0 && per_token_s_ <= 0; }

 private:
  double fixed_s_, per_token_s_;
  std::priority_queue<std::int64_t, std::vector<std::int64_t>, std::greater<>> free_at_;  // one per worker
};

}  // namespace agentperf::sim
