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
