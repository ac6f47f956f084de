// What a TensorRT-LLM worker pool's srt-slurm recipe sets that the memory
// plan and the simulated scheduler read. An srt-slurm recipe for TensorRT-LLM
// holds, per role, the engine's own LLM-API options (`backend.trtllm_config.
// prefill|decode|aggregated`, the YAML that `trtllm-serve` and Dynamo's
// TensorRT-LLM worker take as extra engine options). The fields used, as
// TensorRT-LLM defines them (nvidia.github.io/TensorRT-LLM, llm-api reference
// `KvCacheConfig` and `TorchLlmArgs`; performance-tuning guide "Tuning Max
// Batch Size and Max Num Tokens"):
//  - kv_cache_config.free_gpu_memory_fraction: the share of the GPU memory
//    still free once the weights are loaded that the KV pool takes (0.9 when
//    the recipe leaves it out);
//  - kv_cache_config.tokens_per_block: the KV block, the prefix-reuse unit
//    (32 when left out); kv_cache_config.dtype: the cache's dtype ("auto":
//    the model's); kv_cache_config.host_cache_size: bytes of host memory a
//    rank offloads reused blocks to (0 or absent: none);
//    kv_cache_config.enable_block_reuse: prefix reuse at all;
//  - max_batch_size: the requests one rank's scheduler runs at once (each
//    attention-DP rank runs its own; InferenceX names its recipes by it:
//    "1p6d-...-c24-b4" is six decode engines of four requests for 24 lanes);
//  - max_num_tokens: the tokens of one forward, context chunks and
//    generation tokens together (in-flight batching mixes them in one step,
//    as vLLM's scheduler does); the decode pools' values are max_batch_size x
//    (max_draft_len + 1);
//  - speculative_config.max_draft_len: draft tokens a step (MTP; its
//    num_nextn_predict_layers, or one, where max_draft_len is not given); a
//    role without speculative_config runs none;
//  - stream_interval: decode iterations between streamed chunks.
#pragma once
#include <cstdint>
#include <string>

namespace agentperf::recipe {

struct TrtllmSettings {
  double free_gpu_memory_fraction = 0.9;
  int tokens_per_block = 32;
  std::string kv_cache_dtype = "auto";
  std::int64_t host_cache_bytes = 0;
  bool enable_block_reuse = true;
  int max_batch_size = 0;   // 0: not set in the recipe
  int max_num_tokens = 0;   // 0: not set in the recipe
  int max_draft_len = 0;    // 0: no speculative decoding in this role
  int stream_interval = 0;  // 0: not set in the recipe
};

}  // namespace agentperf::recipe
