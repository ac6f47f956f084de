// The simulated engine: an SGLang-like scheduler over the radix cache, the
// memory plan and the roofline step-time model (scheduling after
// github.com/sgl-project/sglang, python/sglang/srt/managers/scheduler.py
// @ d51c1c21d1ac; simulated MTP acceptance after python/sglang/srt/environ.py
// @ 21ff4b08a196, SGLANG_SIMULATE_ACC_*).
//
// Each step() is one scheduler iteration: prefill first (a batch of waiting
// requests under --max-prefill-tokens, one of them possibly chunked at
// --chunked-prefill-size, admitted while KV and state slots last, FCFS),
// otherwise one decode round of the running batch (with MTP: one accept
// length drawn for the whole batch per verify, "match-expected"). With
// --scheduler vllm a step is instead vLLM V1's mixed forward: the running
// requests' decode tokens plus prefill chunks under --max-num-batched-tokens
// (engine_config.h). When a
// decode round needs KV that eviction cannot free, the newest running
// request is retracted to the front of the queue. On the decode side of
// disaggregated serving (SimRequestSpec::kv_transferred) a request's prompt
// KV arrives from a prefill engine: it is taken in, when its prompt and the
// reserved decode tokens fit, by an iteration that runs no forward, and
// then decodes (admit_transferred). Time is the caller's: the virtual-time
// driver adds step durations, the HTTP server sleeps them.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/rng.h"
#include "sim/engine_config.h"
#include "sim/memory_plan.h"
#include "sim/radix_cache.h"
#include "sim/specs.h"
#include "sim/step_time.h"

namespace agentperf::sim {

struct SimRequestSpec {
  std::uint64_t id = 0;
  // The prompt is the first prompt_len tokens of *prompt (0 = all of it):
  // a session's turns can share one growing buffer instead of copies.
  std::shared_ptr<const std::vector<Token>> prompt;
  int max_new_tokens = 16;
  std::int64_t prompt_len = 0;
  // Disaggregated serving (the decode side): the prompt's KV, and the first
  // output token, were computed by a prefill engine and arrive over the
  // wire. The engine allocates KV for the whole prompt, computes none of it
  // and matches nothing in its radix cache (see Engine::admit_transferred);
  // `cached_tokens` is what the prefill engine's cache served, reported
  // back in the usage block.
  bool kv_transferred = false;
  std::int64_t cached_tokens = 0;
};

struct TokenEvent {
  std::uint64_t id = 0;
  int new_tokens = 0;
  bool first = false;
  bool finished = false;
  std::int64_t prompt_tokens = 0;
  std::int64_t cached_tokens = 0;
  std::int64_t completion_tokens = 0;
  std::optional<std::string> error;  // rejected (e.g. context too long)
};

struct StepOutcome {
  double duration_s = 0;
  bool prefill = false;
  int batch = 0;
  std::int64_t tokens = 0;
  std::vector<TokenEvent> events;
};

struct EngineStats {
  std::int64_t running = 0, waiting = 0;
  std::int64_t kv_total = 0, kv_used = 0, kv_evictable = 0;  // used = held by requests or locked
  std::int64_t state_slots = 0, state_used = 0;
  std::int64_t host_total = 0, host_used = 0;
  double d2h_bytes = 0, h2d_bytes = 0;  // KV written to the host tier / loaded back, so far
  std::int64_t prompt_tokens_total = 0, generation_tokens_total = 0;
  std::int64_t cached_tokens_total = 0, cached_tokens_device = 0, cached_tokens_host = 0;
  std::int64_t computed_prefill_tokens_total = 0;
  std::int64_t requests_total = 0, requests_finished = 0, retractions = 0, rejected = 0;
  double last_prefill_hit_rate = 0;
  double spec_accept_length_sum = 0;
  std::int64_t spec_verify_steps = 0;
  std::int64_t steps = 0, prefill_steps = 0, decode_steps = 0;
  double busy_s = 0;
  double prefill_busy_s = 0;  // steps that computed prefill tokens (with vllm: mixed steps that did)
  double decode_busy_s = 0;   // pure decode rounds
  double serial_walk_s = 0;   // of busy_s, the serial KV walks (vLLM's Triton attention: sim/step_time.h)
  std::int64_t decode_tokens = 0;  // tokens those rounds produced
  // Which pool stops admission: each prefill round that left a request
  // waiting counts the first limit the head of the queue met (SGLang's
  // PrefillAdder stops at the same three): the KV pool (no room for its
  // uncached tokens plus the running requests' reserved decode tokens, even
  // after evicting the cache), the hybrid state slots, or
  // --max-running-requests. Retractions (a decode step that ran out of KV)
  // count for the KV pool too (binding_pool()).
  std::int64_t admission_blocked_kv = 0, admission_blocked_state = 0, admission_blocked_running_cap = 0;
  std::int64_t device_evicted_tokens = 0;  // KV tokens the radix cache dropped from the device
  // Cap-sized sliding-window pool (sim/memory_plan.h swa_cap_sizing): prompt
  // tokens whose KV was cached on the device but were recomputed because
  // the prefix's window tail had been evicted, and the tails evicted.
  std::int64_t swa_tail_lost_tokens = 0, swa_tails_evicted = 0;
  double token_usage() const { return kv_total ? double(kv_used) / double(kv_total) : 0.0; }
  // Prompt tokens served from the cache (device or host), over all prompt tokens.
  double cache_hit_rate() const {
    return prompt_tokens_total ? double(cached_tokens_total) / double(prompt_tokens_total) : 0.0;
  }
  // The serial KV walks' share of the step time (0: none walked). Over the
  // engines' summed prefill and decode time, as merged DP engines' busy_s
  // is their longest.
  double serial_walk_share() const {
    const double steps_s = prefill_busy_s + decode_busy_s;
    return steps_s > 0 ? serial_walk_s / steps_s : 0.0;
  }
};

// The pool that binds first: "kv", "state" or "running_cap" (the one that
// stopped admission most often, retractions counted for "kv"), or "none"
// when admission never waited on a pool. "swa_tails" comes first when a
// cap-sized sliding-window pool's evicted tails cost more than 5 % of the
// prompt tokens their cached KV could have served: the pool then binds
// reuse, not admission.

const char* binding_pool(const EngineStats& s);

// What a scheduler iteration may run: a DP-attention group decides it for
// every rank (sim/lockstep_group.h); an engine alone decides it itself.
struct StepGate {
  bool allow_prefill = true;
  bool allow_decode = true;
};

class Engine {
 public:
  Engine(ModelSpec model, HardwareSpec hw, EngineConfig cfg);
  ~Engine();

  // Queues a request; too-long prompts come back as an error event from the
  // next step. With --scheduler-recv-interval above 1 it waits in the inbox
  // until an iteration takes new requests in.
  void submit(SimRequestSpec req);
  bool has_work() const;
  // One scheduler iteration under the engine's own gate: prefill unless
  // --prefill-decode-interval still defers it after this engine's last
  // prefill (SGLang's local batch mode without DP attention).
  StepOutcome step();
  // One iteration under a gate decided elsewhere (no interval of its own). A
  // gate that allows neither returns an empty outcome.
  StepOutcome step(StepGate gate);
  // Would a prefill forward be attempted if allowed: a chunked request
  // mid-way, or a waiting request and a free running slot. (SGLang's
  // PrefillDelayer asks each rank this after its KV checks; here the KV
  // check is left to the forward, which may then admit nothing.)
  bool prefill_ready() const;
  bool mid_chunk() const { return chunked_ != nullptr; }
  // DP attention: tokens the group's other ranks put through the shared
  // expert-parallel MoE layers (StepTimeModel::set_moe_peer_tokens).
  void set_moe_peer_tokens(double tokens) { steps_.set_moe_peer_tokens(tokens); }
  // Requests whose KV arrived from a prefill engine and wait for room.
  std::int64_t transferred_waiting() const { return static_cast<std::int64_t>(transferred_.size()); }
  std::int64_t running_count() const { return static_cast<std::int64_t>(running_.size()); }

  EngineStats stats() const;
  const MemoryPlan& plan() const { return plan_; }
  const EngineConfig& config() const { return cfg_; }
  const ModelSpec& model() const { return model_; }
  const StepTimeModel& step_model() const { return steps_; }
  const RadixCache& cache() const { return cache_; }
  // Accept length drawn for one verify step (exposed for tests).
  int draw_accept_length();

 private:
  struct Req;
  // Requests admitted to one prefill forward, with the chunk each computes.
  struct PrefillBatch {
    struct Item {
      Req* r;
      std::int64_t chunk;
      std::int64_t before;  // tokens with KV before this chunk
    };
    std::vector<Item> items;
    double new_tokens = 0, attn_pairs = 0, kv_read_tokens = 0;
    double prefix_pairs = 0;  // of attn_pairs, those over each request's prefix
    double h2d_s = 0;  // host-to-device load-back time of the admitted prefixes
  };
  // Admission: the chunked request's next chunk, then waiting requests FCFS
  // while the token budget, KV, state slots and the running cap allow. With
  // reserve_outputs (SGLang's PrefillAdder) the KV check keeps room for the
  // running and the admitted requests' expected output (remaining tokens x
  // new_token_ratio); without (vLLM V1's Scheduler.schedule, which asks
  // allocate_slots for the tokens computed in this step only) a request is
  // admitted when its chunk fits, and the decodes that outgrow the pool later
  // preempt (retract_one); vLLM admits no waiting request in a step that
  // preempted one (admit_waiting false: the chunked request only). False
  // when nothing was admitted.
  bool select_prefill(std::int64_t budget, bool reserve_outputs, PrefillBatch& batch, bool admit_waiting = true);
  void complete_prefill(const PrefillBatch& batch, StepOutcome& out);
  bool try_prefill(StepOutcome& out);  // sglang: one prefill forward
  // Makes KV room for the running batch's next tokens (retracting the newest
  // when it cannot); returns the accept length, or 0 when the last request
  // could not fit and was failed.
  int prepare_decode(StepOutcome& out);
  void apply_decode(int accept_length, StepOutcome& out);
  double running_context() const;
  void decode(StepOutcome& out);       // sglang: one decode round
  bool mixed_step(StepOutcome& out);   // vllm: decode + prefill chunks in one forward
  // Disaggregated decode: takes transferred requests into the running batch
  // in an iteration of their own that runs no forward (SGLang's prebuilt
  // batch); true when any was taken.
  bool admit_transferred(StepOutcome& out);
  void finish(Req& r, StepOutcome& out);
  void retract_one();
  std::int64_t kv_available() const;
  bool make_room(std::int64_t tokens);
  bool take_state_slot();
  std::int64_t state_slots_used() const;
  std::vector<Token> sequence_of(const Req& r) const;
  Token output_token(const Req& r, std::int64_t i) const;

  ModelSpec model_;
  HardwareSpec hw_;
  double host_page_bytes_ = 0;  // bytes of one HiCache transfer unit (a page of one layer)
  EngineConfig cfg_;
  MemoryPlan plan_;
  StepTimeModel steps_;
  RadixCache cache_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Req>> reqs_;
  std::deque<Req*> waiting_;
  std::deque<Req*> transferred_;  // kv_transferred requests waiting for KV room (FCFS)
  std::vector<Req*> running_;
  Req* chunked_ = nullptr;
  std::vector<TokenEvent> pending_errors_;
  std::int64_t private_tokens_ = 0;
  std::int64_t running_slots_ = 0;
  // Prefix reuse bounded by a count of window tails (plan_.swa_prefix_tails >= 0).
  bool swa_tails_ = false;
  bool take_swa_tail();
  std::int64_t clock_ = 0;  // LRU clock: one tick per step
  int prefill_deferred_left_ = 0;  // step(): iterations --prefill-decode-interval still defers
  // --scheduler-recv-interval: requests that reached the scheduler's socket
  // and are not yet taken in (SGLang's SchedulerRecvSkipper), the weight of
  // the iterations since the last intake, and what the last iteration ran.
  std::vector<Req*> inbox_;
  int recv_counter_ = 0;
  int recv_last_weight_ = 1;
  // Takes the inbox in when the skipper allows (see step(StepGate)).
  void receive();
  double new_token_ratio_;
  Rng rng_;
  EngineStats stats_;
};

}  // namespace agentperf::sim
