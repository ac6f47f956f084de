// Engine-level costs: the work a serving engine does around the kernels
// that the hardware roofline (step_time.h) does not see.
//
// The roofline alone is optimistic against every published measurement, and
// the error grows with batch (issue 16: decode ITL 10-20 % low at batch 8,
// about 48 % low at batch 256; an 8k prefill 4x too fast). A measured
// kernel profile (agentperf calibrate measure) moves it by 5-8 % only: the
// missing time is the engine's, not the kernels' peaks. These coefficients
// name that time, one term for each source, so a fit can assign it:
//
//   per request:        front_end_s, from its arrival to the scheduler
//                       (HTTP, chat template, tokenising, the API server's
//                       hand-off): in TTFT and E2E, never on the GPU; and
//                       front_end_token_s per prompt token: the API server
//                       renders the chat template over the whole history and
//                       tokenizes the whole prompt again on every turn,
//                       whatever the prefix cache holds (SGLang
//                       serving_chat.py / tokenizer_manager.py, vLLM's API
//                       server alike), on one event loop per tokenizer
//                       worker, so long prompts queue behind each other
//                       (sim/front_end_queue.h)
//   per forward:        step_s (scheduler, batch preparation, output processing)
//   per decode request: request_s (sampling, stop checks, detokenising,
//                       streaming), and attention_request_s per full-attention
//                       layer: the fixed cost of a decode-attention call for
//                       one request, which a short context cannot hide
//                       (decode attention reaches HBM rate only over many
//                       requests x long contexts, so its efficiency over
//                       batch x context is kv / (kv + requests x this x rate))
//   per prefill token:  prefill_token_s (embedding, positions, sampling prep)
//   scales on the roofline's parts: weight_read_scale (weights streamed),
//                       kv_read_scale (decode KV read), gemm_scale (GEMM math),
//                       attention_scale (prefill attention math), and
//                       prefix_attention_scale on top of it for the part of
//                       a prefill's attention whose keys lie in the request's
//                       prefix (cached, or an earlier chunk's): SGLang and
//                       vLLM run that part as a paged-KV prefill kernel
//                       (page-table gathers, FP8 KV dequantised per tile,
//                       split over few query rows when the new part is
//                       short), far from the dense ragged kernel's rate
//                       that step-level benchmarks of fresh prompts measure.
//                       An agentic turn is almost all such attention: 1-4k
//                       new tokens over a 50-200k cached prefix.
//   MoE grouped GEMM:   efficiency tpe / (tpe + moe_half_tokens_per_expert),
//                       tpe = routed tokens per touched expert, on the experts'
//                       math (few tokens per expert waste the tensor cores)
//   MoE layer floor:    moe_layer_step_s per layer of a MoE model per forward,
//                       whatever the batch: routing (top-k over hundreds of
//                       experts), token permutation, the grouped GEMMs' launch
//                       and tail, and the layer's all-reduces at their
//                       latency floor. A many-expert model stacks these for
//                       every layer of every step, so its step has a floor
//                       far above its weight read: Qwen3-Next-80B-A3B on 8x
//                       B200 steps in about 6.2 ms at one request (the SGLang
//                       cookbook) while its weights read in about 0.2 ms.
//                       (Every layer counts: the few dense layers some MoE
//                       models lead with are not told apart.)
//   MoE prefill layer:  moe_prefill_layer_s per layer of a MoE model per forward
//                       that prefills: SGLang runs prefill outside CUDA
//                       graphs, dispatching each layer's many kernels
//                       (router, top-k, permutation, grouped GEMMs;
//                       DeltaNet's chunked scan in a hybrid) one by one, and
//                       its TTFT for a few hundred tokens of Qwen3-Next on
//                       8x B200 is about 128 ms (the cookbook's runs), far
//                       above the math. Fitted on prefills only, it is not
//                       charged to a decode batch over cuda_graph_max_bs
//                       (the hardware's eager launch cost covers that).
//   linear prefill:     linear_prefill_layer_s per linear-attention (GDN)
//                       layer of a hybrid per forward that prefills: the
//                       chunked-scan kernels' launch and setup, charged to
//                       the GDN layers alone so that a cost of the hybrid's
//                       own kernels never reaches a plain MoE model's
//                       prefill (fitted on one hybrid family, a single
//                       per-layer MoE prefill cost overstated Qwen3-235B's
//                       TTFT by 2.2x: docs/sim-validation.md)
//   linear attention:   linear_decode_s per GDN layer per decode request,
//                       linear_prefill_token_s per GDN layer per prefill token
//                       (the chunked-scan kernels run far from roofline)
//   all-reduce:         bandwidth efficiency m / (m + allreduce_half_bytes) for
//                       an m-byte message (small messages are latency-bound)
//
// Every coefficient is neutral by default (scales 1, additions 0), which is
// the pure roofline. The shipped profiles (data/engines/*.json) are fitted on
// the fitting half of the validation set (data/validation, `agentperf sim
// validate --fit`) and never on its held-out half; `agentperf calibrate
// engine --url` fits one against a live endpoint. The fit is the same code
// either way (sim/cost_fit.h).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace agentperf::sim {

struct EngineCosts {
  std::string name = "roofline";  // profile name, for outputs
  std::string source;             // where it was read from
  double front_end_s = 0;
  double front_end_token_s = 0;
  double step_s = 0;
  double request_s = 0;
  double attention_request_s = 0;
  double prefill_token_s = 0;
  double weight_read_scale = 1;
  double kv_read_scale = 1;
  double gemm_scale = 1;
  double attention_scale = 1;
  double prefix_attention_scale = 1;
  double moe_half_tokens_per_expert = 0;
  double moe_layer_step_s = 0;
  double moe_prefill_layer_s = 0;
  double linear_prefill_layer_s = 0;
  double linear_decode_s = 0;
  double linear_prefill_token_s = 0;
  double allreduce_half_bytes = 0;

  // The coefficients by name, in file order: what a fit varies and prints.
  static const std::vector<std::string>& names();
  double& at(const std::string& name);  // throws std::out_of_range for an unknown name
  double at(const std::string& name) const;
  bool neutral_value(const std::string& name) const;
  // The range a file may give the coefficient (and a fit may reach).
  static std::pair<double, double> range(const std::string& name);
};

// A profile's file as read: a shipped one or a JSON file; none for
// "roofline" (all neutral). Throws UserError for an unknown name or bad JSON.
struct EngineProfileDocument {
  nlohmann::json json;
  std::string source;  // what errors call it
};
std::optional<EngineProfileDocument> engine_profile_document(const std::string& name_or_path);

// A shipped profile ("sglang", "vllm", "roofline") or a JSON file:
//   {"name": ..., "notes": ..., "coefficients": {"step_s": ..., ...}, "fit": {...}}
// Unknown or out-of-range coefficients are a UserError naming the file and key.
EngineCosts load_engine_costs(const std::string& name_or_path);
std::vector<std::string> builtin_engine_cost_names();
// The file form: name, notes, coefficients (and `extra`, e.g. the fit's
// residuals, under "fit").
nlohmann::ordered_json engine_costs_json(const EngineCosts& c, const std::string& notes,
                                         const nlohmann::ordered_json& fit = nullptr);

}  // namespace agentperf::sim
