#include "sim/engine.h"

#include <algorithm>
#include <cmath>

namespace agentperf::sim {

struct Engine::Req {
  SimRequestSpec spec;
  std::int64_t prompt_len = 0;
  enum class State { waiting, prefilling, running } state = State::waiting;
  std::int64_t prefix = 0;     // reused from the cache at the current admission
  std::int64_t prefilled = 0;  // tokens of the sequence with KV
  std::int64_t ctx = 0;        // tokens with KV while running (prefilled + decoded since)
  std::int64_t generated = 0;
  std::int64_t private_tokens = 0;
  RadixNode* lock_node = nullptr;
  bool slot = false;
  bool first_sent = false;
  std::int64_t cached_reported = -1;
  std::int64_t admitted_at = 0;
  std::vector<Token> seq;  // prompt + output, built when output must be part of a prefill/insert

  std::int64_t seq_len() const { return prompt_len + generated; }
  std::span<const Token> prompt_span() const {
    return std::span<const Token>(*spec.prompt).first(static_cast<std::size_t>(prompt_len));
  }
  std::int64_t remaining() const { return std::max<std::int64_t>(0, spec.max_new_tokens - generated); }
};

Engine::Engine(ModelSpec model, HardwareSpec hw, EngineConfig cfg)
    : model_(served_model(std::move(model), cfg, hw)), hw_(std::move(hw)), cfg_(cfg), plan_(plan_memory(model_, hw_, cfg_)),
      steps_(model_, hw_, cfg_),
      cache_(cfg_.page_size, model_.hybrid() || plan_.swa_prefix_tails >= 0, cfg_.hicache.enabled ? plan_.host_kv_tokens : 0,
             cfg_.hicache.enabled ? plan_.host_mamba_slots : 0, cfg_.hicache.write_policy,
             plan_.kv_bytes_per_token_rank + plan_.draft_kv_bytes_per_token_rank, plan_.state_bytes_per_request_rank),
      new_token_ratio_(cfg_.new_token_ratio_init), rng_(mix_seed(cfg_.seed, 0x51A)) {
  if (!cfg_.spec.enabled || !model_.mtp) cfg_.spec.enabled = false;
  recv_counter_ = cfg_.scheduler_recv_interval;  // the first iteration polls
  // A cap-sized sliding-window pool keeps swa_prefix_tails window tails for
  // the cache; the running requests' own windows are in its request cap.
  swa_tails_ = plan_.swa_prefix_tails >= 0 && !model_.hybrid();
  if (swa_tails_) cache_.protect_lock_ends_only();
  // HiCache moves one page of one layer's KV per transfer unit.
  host_page_bytes_ = cfg_.page_size * plan_.kv_bytes_per_token_rank / std::max(1, model_.layers_full);
}

Engine::~Engine() = default;

Token Engine::output_token(const Req& r, std::int64_t i) const {
  const std::uint64_t h = mix_seed(r.spec.id, static_cast<std::uint64_t>(i), 0x07);
  return static_cast<Token>(100000 + h % 100000);  // outside the client's synthetic id range
}

std::vector<Token> Engine::sequence_of(const Req& r) const {
  std::vector<Token> s;
  s.reserve(static_cast<std::size_t>(r.seq_len()));
  const auto p = r.prompt_span();
  s.insert(s.end(), p.begin(), p.end());
  for (std::int64_t i = 0; i < r.generated; ++i) s.push_back(output_token(r, i));
  return s;
}

void Engine::submit(SimRequestSpec spec) {
  const auto size = static_cast<std::int64_t>(spec.prompt ? spec.prompt->size() : 0);
  const std::int64_t len = spec.prompt_len > 0 ? std::min(spec.prompt_len, size) : size;
  ++stats_.requests_total;
  std::optional<std::string> error;
  if (len == 0) error = "the prompt is empty";
  else if (len + spec.max_new_tokens > model_.max_context)
    error = "Requested token count exceeds the model's maximum context length of " + std::to_string(model_.max_context) +
            " tokens. You requested a total of " + std::to_string(len + spec.max_new_tokens) + " tokens: " +
            std::to_string(len) + " tokens from the input messages and " + std::to_string(spec.max_new_tokens) +
            " tokens for the completion.";
  else if (len + 1 > plan_.kv_tokens)
    error = "the prompt (" + std::to_string(len) + " tokens) is larger than the KV cache (" +
            std::to_string(plan_.kv_tokens) + " tokens)";
  if (error) {
    TokenEvent ev;
    ev.id = spec.id;
    ev.finished = true;
    ev.prompt_tokens = len;
    ev.error = *error;
    pending_errors_.push_back(ev);
    ++stats_.rejected;
    return;
  }
  auto r = std::make_unique<Req>();
  r->spec = std::move(spec);
  r->prompt_len = len;
  if (r->spec.kv_transferred)
    transferred_.push_back(r.get());
  else if (cfg_.scheduler_recv_interval > 1)
    inbox_.push_back(r.get());
  else
    waiting_.push_back(r.get());
  reqs_[r->spec.id] = std::move(r);
}

// SGLang's SchedulerRecvSkipper (python/sglang/srt/managers/
// scheduler_recv_skipper.py; weights in environ.py,
// SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_*: decode 1, target verify 1, no
// forward 1, any other mode, prefill included, 1000): every iteration adds
// the weight of the one before, and the scheduler polls its socket once the
// sum reaches --scheduler-recv-interval, then starts again from 0. The
// counter starts full, so the first iteration polls. An engine with nothing
// to run takes requests in at once: its idle loop spins through the
// interval in a few scheduler passes.
void Engine::receive() {
  recv_counter_ += recv_last_weight_;
  const bool idle = running_.empty() && waiting_.empty() && !chunked_;
  if (recv_counter_ < cfg_.scheduler_recv_interval && !idle) return;
  recv_counter_ = 0;
  for (Req* r : inbox_) waiting_.push_back(r);
  inbox_.clear();
}

bool Engine::has_work() const {
  return !waiting_.empty() || !running_.empty() || chunked_ || !pending_errors_.empty() || !inbox_.empty() ||
         !transferred_.empty();
}

// SGLang's decode server (python/sglang/srt/disaggregation/decode.py
// @ 0035ca42c2d6, the module's life cycle and DecodePreallocQueue): a
// request is pre-allocated KV for its whole prompt plus
// --num-reserved-decode-tokens (512) once that much is free beyond what the
// running requests keep for their own decoding, waits for the transfer,
// and joins the running batch through a "prebuilt" batch that skips the
// forward. The decode side keeps no radix cache by default
// (--disaggregation-decode-enable-radix-cache is off), so nothing is
// matched and nothing is kept when the request ends. Here the transfer has
// already landed when the request is submitted (the driver times it); the
// pre-allocation and the prebuilt batch are one iteration, FCFS.
bool Engine::admit_transferred(StepOutcome& out) {
  constexpr std::int64_t kReservedDecodeTokens = 512;
  double kept = 0;
  for (const Req* r : running_) kept += static_cast<double>(std::min(r->remaining(), kReservedDecodeTokens));
  bool any = false;
  std::vector<Req*> done;
  while (!transferred_.empty()) {
    Req* r = transferred_.front();
    if (static_cast<std::int64_t>(running_.size()) >= plan_.max_running_requests) {
      ++stats_.admission_blocked_running_cap;
      break;
    }
    // The prefill engine sampled the first output token: it arrives with the KV.
    const std::int64_t held = std::max<std::int64_t>(r->seq_len(), r->prompt_len + 1);
    const double need = static_cast<double>(held + std::min(r->remaining(), kReservedDecodeTokens));
    if (static_cast<double>(kv_available() + cache_.evictable_device_tokens()) - kept < need) {
      ++stats_.admission_blocked_kv;
      break;
    }
    if (!take_state_slot()) {
      ++stats_.admission_blocked_state;
      break;
    }
    make_room(held);
    transferred_.pop_front();
    r->slot = model_.hybrid();
    r->prefix = r->prefilled = r->prompt_len;
    if (!r->first_sent) {
      r->first_sent = true;
      r->generated = 1;
      r->cached_reported = r->spec.cached_tokens;
      TokenEvent ev;
      ev.id = r->spec.id;
      ev.first = true;
      ev.new_tokens = 1;
      ev.prompt_tokens = r->prompt_len;
      ev.cached_tokens = r->cached_reported;
      ev.completion_tokens = 1;
      out.events.push_back(ev);
    }
    r->ctx = r->seq_len();
    r->private_tokens = r->ctx;
    private_tokens_ += r->ctx;
    r->state = Req::State::running;
    r->admitted_at = clock_;
    running_.push_back(r);
    kept += static_cast<double>(std::min(r->remaining(), kReservedDecodeTokens));
    if (r->remaining() == 0) done.push_back(r);  // asked for the first token only
    any = true;
  }
  for (Req* r : done) finish(*r, out);
  return any;
}

std::int64_t Engine::kv_available() const {
  return plan_.kv_tokens - cache_.counters().device_tokens - private_tokens_;
}

bool Engine::make_room(std::int64_t tokens) {
  const std::int64_t avail = kv_available();
  if (avail >= tokens) return true;
  cache_.evict_device(tokens - avail);
  return kv_available() >= tokens;
}

std::int64_t Engine::state_slots_used() const { return cache_.counters().device_states + running_slots_; }

bool Engine::take_state_slot() {
  if (!model_.hybrid()) return true;
  if (state_slots_used() >= plan_.mamba_slots && cache_.evict_device_states(1) == 0) return false;
  ++running_slots_;
  return true;
}

// A new tail for an insert point, the least recently used one evicted
// when all are taken (SGLang evicts SWA LRU: an internal node keeps its KV
// as a tombstone, sim/radix_cache.h).
bool Engine::take_swa_tail() {
  if (!swa_tails_) return false;
  if (cache_.counters().device_states < plan_.swa_prefix_tails) return true;
  if (cache_.evict_device_states(1) == 0) return false;
  ++stats_.swa_tails_evicted;
  return true;
}

int Engine::draw_accept_length() {
  const int max_len = cfg_.spec.max_accepted();
  const double al = std::clamp(cfg_.spec.accept_length, 1.0, static_cast<double>(max_len));
  const int lo = static_cast<int>(std::floor(al));
  const double frac = al - lo;
  const int l = lo + (rng_.uniform() < frac ? 1 : 0);
  return std::clamp(l, 1, max_len);
}

bool Engine::select_prefill(std::int64_t budget, bool reserve_outputs, PrefillBatch& batch, bool admit_waiting) {
  if ((waiting_.empty() || !admit_waiting) && !chunked_) return false;
  auto& items = batch.items;
  const double h2d_before = cache_.counters().h2d_bytes;
  const std::int64_t page = cache_.page_size();

  if (chunked_) {
    Req* r = chunked_;
    const std::int64_t chunk = std::min({r->seq_len() - r->prefilled, std::int64_t(cfg_.chunked_prefill_size), budget});
    if (!make_room(chunk)) return false;
    r->private_tokens += chunk;
    private_tokens_ += chunk;
    items.push_back({r, chunk, r->prefilled});
    budget -= chunk;
  }
  double reserve = 0;
  if (reserve_outputs)
   for (const Req* r : running_)
    reserve += static_cast<double>(std::min<std::int64_t>(r->remaining(), cfg_.max_new_tokens_estimate_clip)) *
               new_token_ratio_;
  const std::int64_t max_running = plan_.max_running_requests;
  bool chunk_left = chunked_ && items.front().chunk < chunked_->seq_len() - chunked_->prefilled;
  std::int64_t admitted_prefix = 0, admitted_len = 0;

  while (admit_waiting && !waiting_.empty() && budget > 0 && !chunk_left) {
    const std::int64_t in_flight = static_cast<std::int64_t>(running_.size()) + static_cast<std::int64_t>(items.size());
    if (in_flight >= max_running) {
      ++stats_.admission_blocked_running_cap;
      break;
    }
    Req* r = waiting_.front();
    if (r->generated > 0 && r->seq.size() != static_cast<std::size_t>(r->seq_len())) r->seq = sequence_of(*r);
    std::span<const Token> seq = r->generated > 0 ? std::span<const Token>(r->seq) : r->prompt_span();
    const std::int64_t seq_len = r->seq_len();
    PrefixMatch m = cache_.match(seq, clock_);
    std::int64_t use = m.device_usable;
    RadixNode* node = m.device_node;
    bool load = false;
    if (cfg_.hicache.enabled && m.host_usable - m.device_usable >= cfg_.hicache.load_back_threshold) {
      use = m.host_usable;
      node = m.host_node;
      load = true;
    }
    // At least one token is computed, to produce logits for the first output.
    if (use >= seq_len) use = std::max<std::int64_t>(0, (seq_len - 1) / page * page);
    const std::int64_t new_tokens = seq_len - use;
    // vLLM V1 (vllm/v1/core/sched/scheduler.py @ 00024d3, the waiting loop
    // of Scheduler.schedule): allocate_slots(request, num_new_tokens) for this
    // step's chunk, nothing for the output; make_room(chunk) below decides.
    const double estimate =
        reserve_outputs ? static_cast<double>(new_tokens) +
                              static_cast<double>(std::min<std::int64_t>(r->remaining(),
                                                                         cfg_.max_new_tokens_estimate_clip)) *
                                  new_token_ratio_
                        : 0.0;
    const std::int64_t load_tokens = load ? use - m.device_usable : 0;
    cache_.lock(node);
    const double room = static_cast<double>(kv_available() + cache_.evictable_device_tokens()) - reserve;
    if (room < estimate + static_cast<double>(load_tokens)) {
      cache_.unlock(node);
      ++stats_.admission_blocked_kv;
      break;
    }
    if (!take_state_slot()) {
      cache_.unlock(node);
      ++stats_.admission_blocked_state;
      break;
    }
    if (load) {
      make_room(load_tokens);
      cache_.load_back(node, clock_);
    }
    const std::int64_t chunk = std::min({new_tokens, std::int64_t(cfg_.chunked_prefill_size), budget});
    if (!make_room(chunk)) {
      if (model_.hybrid()) --running_slots_;
      cache_.unlock(node);
      ++stats_.admission_blocked_kv;
      break;
    }
    waiting_.pop_front();
    r->slot = model_.hybrid();
    r->lock_node = node;
    r->prefix = use;
    r->prefilled = use;
    r->private_tokens = chunk;
    private_tokens_ += chunk;
    r->state = Req::State::prefilling;
    r->admitted_at = clock_;
    if (r->cached_reported < 0) {
      if (swa_tails_) stats_.swa_tail_lost_tokens += std::max<std::int64_t>(0, m.matched - m.device_usable);
      r->cached_reported = use;
      stats_.cached_tokens_total += use;
      stats_.cached_tokens_host += load ? load_tokens : 0;
      stats_.cached_tokens_device += use - (load ? load_tokens : 0);
      stats_.prompt_tokens_total += r->prompt_len;
    }
    admitted_prefix += use;
    admitted_len += seq_len;
    items.push_back({r, chunk, use});
    budget -= chunk;
    if (chunk < new_tokens) {
      chunked_ = r;
      chunk_left = true;
    }
  }
  if (items.empty()) return false;
  if (admitted_len > 0) stats_.last_prefill_hit_rate = double(admitted_prefix) / double(admitted_len);
  for (const auto& it : items) {
    const double c = static_cast<double>(it.chunk), b = static_cast<double>(it.before);
    batch.new_tokens += c;
    batch.attn_pairs += c * b + c * (c + 1) / 2;
    batch.prefix_pairs += c * b;
    batch.kv_read_tokens += b + c;
  }
  // Load-back is consumed layer by layer, overlapped with the forward.
  batch.h2d_s = (cache_.counters().h2d_bytes - h2d_before) / hw_.host_link_rate(host_page_bytes_);
  stats_.computed_prefill_tokens_total += static_cast<std::int64_t>(batch.new_tokens);
  return true;
}

bool Engine::try_prefill(StepOutcome& out) {
  PrefillBatch batch;
  if (!select_prefill(cfg_.max_prefill_tokens, true, batch)) return false;
  const StepTerms terms = steps_.prefill(batch.new_tokens, batch.attn_pairs, batch.kv_read_tokens,
                                         static_cast<int>(batch.items.size()), batch.prefix_pairs);
  out.duration_s = std::max(terms.total_s, batch.h2d_s);
  out.prefill = true;
  out.batch = static_cast<int>(batch.items.size());
  out.tokens = static_cast<std::int64_t>(batch.new_tokens);
  complete_prefill(batch, out);
  return true;
}

void Engine::complete_prefill(const PrefillBatch& batch, StepOutcome& out) {
  std::vector<Req*> done;
  for (const auto& it : batch.items) {
    Req* r = it.r;
    r->prefilled += it.chunk;
    std::span<const Token> seq = r->generated > 0 ? std::span<const Token>(r->seq) : r->prompt_span();
    // Checkpoint what is prefilled: with a state (a hybrid model's, which
    // takes a slot of its own), or with a window tail, which SGLang's SWA
    // cache leaves at every chunk boundary too (cache_unfinished_req).
    auto checkpoint = [&](std::int64_t len) {
      bool with_state = false;
      if (model_.hybrid())
        with_state = state_slots_used() < plan_.mamba_slots || cache_.evict_device_states(1) > 0;
      else
        with_state = take_swa_tail();
      auto ins = cache_.insert(seq, len, with_state, clock_);
      cache_.lock(ins.node);
      if (r->lock_node) cache_.unlock(r->lock_node);
      r->lock_node = ins.node;
      const std::int64_t now_private = len - ins.node->depth_end;
      private_tokens_ += now_private - r->private_tokens;
      r->private_tokens = now_private;
    };
    if (r->prefilled < r->seq_len()) {  // more chunks to come
      if (swa_tails_) checkpoint(r->prefilled);
      continue;
    }
    if (chunked_ == r) chunked_ = nullptr;
    checkpoint(r->seq_len());
    r->ctx = r->seq_len();
    r->state = Req::State::running;
    running_.push_back(r);
    // The prefill forward also samples the next token.
    TokenEvent ev;
    ev.id = r->spec.id;
    ev.first = !r->first_sent;
    ev.new_tokens = 1;
    ev.prompt_tokens = r->prompt_len;
    ev.cached_tokens = r->cached_reported;
    r->first_sent = true;
    r->generated += 1;
    r->ctx += 1;
    r->private_tokens += 1;
    private_tokens_ += 1;
    ++stats_.generation_tokens_total;
    ev.completion_tokens = r->generated;
    out.events.push_back(ev);
    if (r->remaining() == 0) done.push_back(r);
  }
  for (Req* r : done) finish(*r, out);
}

void Engine::retract_one() {
  auto it = std::max_element(running_.begin(), running_.end(),
                             [](const Req* a, const Req* b) { return a->admitted_at < b->admitted_at; });
  Req* r = *it;
  running_.erase(it);
  cache_.unlock(r->lock_node);
  r->lock_node = nullptr;
  private_tokens_ -= r->private_tokens;
  r->private_tokens = 0;
  if (r->slot) {
    --running_slots_;
    r->slot = false;
  }
  r->state = Req::State::waiting;
  r->prefilled = r->ctx = 0;
  // A retracted decode-side request waits for room again; its KV is taken
  // as sent again (SGLang re-bootstraps it from the prefill side), at no
  // compute here.
  if (r->spec.kv_transferred)
    transferred_.push_front(r);
  else
    waiting_.push_front(r);
  ++stats_.retractions;
  new_token_ratio_ = cfg_.new_token_ratio_init;
}

int Engine::prepare_decode(StepOutcome& out) {
  const int l = cfg_.spec.enabled ? draw_accept_length() : 1;
  auto need = [&] {
    std::int64_t n = 0;
    for (const Req* r : running_) n += std::min<std::int64_t>(l, r->remaining());
    return n;
  };
  while (!make_room(need()) && running_.size() > 1) retract_one();
  if (!make_room(need())) {
    // A single request that no longer fits: it cannot finish on this engine.
    Req* r = running_.front();
    running_.clear();
    cache_.unlock(r->lock_node);
    private_tokens_ -= r->private_tokens;
    if (r->slot) --running_slots_;
    TokenEvent ev;
    ev.id = r->spec.id;
    ev.finished = true;
    ev.prompt_tokens = r->prompt_len;
    ev.completion_tokens = r->generated;
    ev.error = "KV cache exhausted: the request no longer fits in " + std::to_string(plan_.kv_tokens) + " tokens";
    out.events.push_back(ev);
    reqs_.erase(r->spec.id);
    return 0;
  }
  return l;
}

double Engine::running_context() const {
  double sum_ctx = 0;
  for (const Req* r : running_) sum_ctx += static_cast<double>(r->ctx);
  return sum_ctx;
}

void Engine::apply_decode(int l, StepOutcome& out) {
  if (cfg_.spec.enabled) {
    stats_.spec_accept_length_sum += l;
    ++stats_.spec_verify_steps;
  }
  std::vector<Req*> done;
  for (Req* r : running_) {
    const auto n = std::min<std::int64_t>(l, r->remaining());
    r->generated += n;
    r->ctx += n;
    r->private_tokens += n;
    private_tokens_ += n;
    stats_.generation_tokens_total += n;
    out.tokens += n;
    TokenEvent ev;
    ev.id = r->spec.id;
    ev.new_tokens = static_cast<int>(n);
    ev.prompt_tokens = r->prompt_len;
    ev.cached_tokens = r->cached_reported;
    ev.completion_tokens = r->generated;
    out.events.push_back(ev);
    if (r->remaining() == 0) done.push_back(r);
  }
  for (Req* r : done) finish(*r, out);
  new_token_ratio_ = std::max(cfg_.new_token_ratio_min, new_token_ratio_ - cfg_.new_token_ratio_decay);
}

void Engine::decode(StepOutcome& out) {
  const int l = prepare_decode(out);
  if (l == 0) return;
  const StepTerms terms = steps_.decode_round(static_cast<int>(running_.size()), running_context());
  out.duration_s = terms.total_s;
  out.batch = static_cast<int>(running_.size());
  apply_decode(l, out);
}

bool Engine::mixed_step(StepOutcome& out) {
  // vLLM V1 (vllm/v1/core/sched/scheduler.py, Scheduler.schedule): running
  // requests first, each its decode tokens (1, or 1 + the spec tokens), then
  // waiting requests' prefill chunks in the rest of the token budget, all in
  // one forward. KV is taken as it is needed and a request is preempted
  // (here: the newest, recomputed later) when a decode cannot get it; no
  // room is reserved ahead for any request's future tokens (select_prefill
  // without reserve_outputs).
  const bool had_running = !running_.empty();
  const std::int64_t retractions_before = stats_.retractions;
  int l = 0;
  if (had_running) l = prepare_decode(out);
  // Scheduler.schedule takes waiting requests only `if not preempted_reqs`.
  const bool preempted = stats_.retractions > retractions_before;
  const int decoding = l > 0 ? static_cast<int>(running_.size()) : 0;
  const double decode_ctx = decoding ? running_context() : 0.0;
  double longest_decode = 0, longest_prefill = 0;  // the longest context a request of this step attends over
  if (decoding)
    for (const Req* r : running_) longest_decode = std::max(longest_decode, static_cast<double>(r->ctx));
  const int width = cfg_.spec.enabled ? cfg_.spec.num_draft_tokens : 1;
  if (decoding) apply_decode(l, out);
  const std::int64_t budget = static_cast<std::int64_t>(cfg_.max_num_batched_tokens) - std::int64_t(decoding) * width;
  PrefillBatch batch;
  const bool prefill = budget > 0 && select_prefill(budget, false, batch, !preempted);
  if (!decoding && !prefill) return had_running;  // a failed decode is progress too
  for (const auto& it : batch.items) longest_prefill = std::max(longest_prefill, static_cast<double>(it.before + it.chunk));
  const StepTerms terms = steps_.mixed(decoding, decode_ctx, batch.new_tokens, batch.attn_pairs,
                                       batch.kv_read_tokens, static_cast<int>(batch.items.size()), batch.prefix_pairs,
                                       longest_decode, longest_prefill);
  out.duration_s = std::max(terms.total_s, batch.h2d_s);
  stats_.serial_walk_s += terms.walk_s;
  out.prefill = prefill;
  out.batch = decoding + static_cast<int>(batch.items.size());
  out.tokens += static_cast<std::int64_t>(batch.new_tokens);
  if (prefill) complete_prefill(batch, out);
  return true;
}

void Engine::finish(Req& r, StepOutcome& out) {
  running_.erase(std::remove(running_.begin(), running_.end(), &r), running_.end());
  // The request's working state becomes the tree's checkpoint (no new
  // slot), except on a disaggregated decode engine, which keeps no cache.
  if (!r.spec.kv_transferred) {
    const std::vector<Token> seq = sequence_of(r);
    cache_.insert(seq, static_cast<std::int64_t>(seq.size()), model_.hybrid() ? r.slot : take_swa_tail(), clock_);
  }
  if (r.slot) {
    --running_slots_;
    r.slot = false;
  }
  if (r.lock_node) cache_.unlock(r.lock_node);
  private_tokens_ -= r.private_tokens;
  r.private_tokens = 0;
  for (auto& ev : out.events)
    if (ev.id == r.spec.id) ev.finished = true;
  ++stats_.requests_finished;
  reqs_.erase(r.spec.id);
}

bool Engine::prefill_ready() const {
  if (chunked_) return true;
  if (waiting_.empty()) return false;
  return static_cast<std::int64_t>(running_.size()) < plan_.max_running_requests;
}

StepOutcome Engine::step() {
  StepGate gate;
  if (prefill_deferred_left_ > 0) {
    // SGLang's _should_defer_prefill: counts down on every iteration that
    // is not allowed to prefill, decode or idle alike.
    --prefill_deferred_left_;
    gate.allow_prefill = false;
  }
  StepOutcome out = step(gate);
  if (out.prefill) prefill_deferred_left_ = cfg_.prefill_decode_interval;
  return out;
}

StepOutcome Engine::step(StepGate gate) {
  StepOutcome out;
  ++clock_;
  ++stats_.steps;
  out.events = std::move(pending_errors_);
  pending_errors_.clear();
  if (cfg_.scheduler_recv_interval > 1) receive();
  bool progressed = true;
  if (!transferred_.empty() && admit_transferred(out)) {
    // The prebuilt batch: no forward, the scheduler's own pass only.
    out.duration_s = cfg_.costs.step_s;
  } else if (cfg_.scheduler == SchedulerKind::vllm) {
    progressed = mixed_step(out);
    if (progressed) ++(out.prefill ? stats_.prefill_steps : stats_.decode_steps);
  } else if (gate.allow_prefill && try_prefill(out)) {
    ++stats_.prefill_steps;
  } else if (gate.allow_decode && !running_.empty()) {
    decode(out);
    ++stats_.decode_steps;
  } else {
    progressed = false;
  }
  // A request is refused only when an iteration free to prefill, with
  // nothing running (or free to run it), could not admit it.
  const bool stuck_transfer = running_.empty() && waiting_.empty() && !chunked_ && !transferred_.empty();
  if (!progressed && ((gate.allow_prefill && (gate.allow_decode || running_.empty()) && !waiting_.empty()) ||
                      stuck_transfer)) {
    // Nothing runs and the head of the queue cannot be admitted even into an
    // idle engine: it can never run here.
    auto& queue = waiting_.empty() ? transferred_ : waiting_;
    Req* r = queue.front();
    queue.pop_front();
    TokenEvent ev;
    ev.id = r->spec.id;
    ev.finished = true;
    ev.prompt_tokens = r->prompt_len;
    ev.error = "the request cannot be scheduled: it needs more KV cache or state slots than the engine has";
    out.events.push_back(ev);
    ++stats_.rejected;
    reqs_.erase(r->spec.id);
  }
  recv_last_weight_ = out.prefill ? 1000 : 1;
  stats_.busy_s += out.duration_s;
  if (out.prefill) {
    stats_.prefill_busy_s += out.duration_s;
  } else if (out.batch > 0) {
    stats_.decode_busy_s += out.duration_s;
    stats_.decode_tokens += out.tokens;
  }
  return out;
}

EngineStats Engine::stats() const {
  EngineStats s = stats_;
  s.running = static_cast<std::int64_t>(running_.size()) + (chunked_ ? 1 : 0);
  s.waiting = static_cast<std::int64_t>(waiting_.size() + inbox_.size());
  s.kv_total = plan_.kv_tokens;
  s.kv_used = private_tokens_ + cache_.counters().locked_device_tokens;
  s.kv_evictable = cache_.evictable_device_tokens();
  s.state_slots = swa_tails_ ? plan_.swa_prefix_tails : plan_.mamba_slots;
  s.state_used = state_slots_used();
  s.host_total = cfg_.hicache.enabled ? plan_.host_kv_tokens : 0;
  s.host_used = cache_.counters().host_tokens;
  s.d2h_bytes = cache_.counters().d2h_bytes;
  s.h2d_bytes = cache_.counters().h2d_bytes;
  s.device_evicted_tokens = cache_.counters().device_evicted_tokens;
  return s;
}

const char* binding_pool(const EngineStats& s) {
  if (s.swa_tail_lost_tokens > 0 && 20 * s.swa_tail_lost_tokens > s.prompt_tokens_total) return "swa_tails";
  const std::int64_t kv = s.admission_blocked_kv + s.retractions;
  const std::int64_t most = std::max({kv, s.admission_blocked_state, s.admission_blocked_running_cap});
  if (most == 0) return "none";
  if (kv == most) return "kv";
  if (s.admission_blocked_state == most) return "state";
  return "running_cap";
}

}  // namespace agentperf::sim
