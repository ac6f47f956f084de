#include "replay/virtual_replay.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "replay/replay_scheduler.h"
#include "route/prefix_index.h"
#include "sim/lockstep_group.h"
#include "sim/virtual_client.h"

namespace agentperf::replay {
namespace {

// The prompt of a dispatched turn as the engine's token ids: the turn's
// blocks and tail, with the play's cache-bust marker after the stream's
// system blocks (where the HTTP driver writes it into a token-id prompt).
std::shared_ptr<const std::vector<sim::Token>> prompt_ids(const Dispatch& d, std::int64_t& isl) {
  Play& p = *d.play;
  const auto& turn = p.tree.streams[static_cast<std::size_t>(d.stream)].turns[static_cast<std::size_t>(d.turn)];
  const trace::TraceCall& call = *turn.call;
  auto ids = std::make_shared<std::vector<sim::Token>>();
  p.builder->append_token_ids(call, trace::TurnRef{d.stream, d.turn}, *ids);
  if (!p.marker_ids.empty()) {
    // Every piece before the marker is a whole block.
    const std::size_t piece = marker_piece_index(p.tree.streams[static_cast<std::size_t>(d.stream)],
                                                 trace::PromptBuilder::piece_count(call, p.trace->block_size));
    const auto at = static_cast<std::int64_t>(piece) * p.trace->block_size;
    ids->insert(ids->begin() + std::min<std::int64_t>(at, static_cast<std::int64_t>(ids->size())), p.marker_ids.begin(),
                p.marker_ids.end());
  }
  isl = static_cast<std::int64_t>(ids->size());
  return ids;
}

}  // namespace

VirtualReplayResult predict_replay(sim::Engine& engine, const ReplayConfig& cfg,
                                   const std::vector<trace::WekaTrace>& traces, const VirtualReplayOptions& opts) {
  return predict_replay(std::vector<sim::Engine*>{&engine}, cfg, traces, opts);
}

sim::EngineStats sum_engine_stats(const std::vector<sim::EngineStats>& per) {
  sim::EngineStats s;
  for (const auto& e : per) {
    s.running += e.running;
    s.waiting += e.waiting;
    s.kv_total += e.kv_total;
    s.kv_used += e.kv_used;
    s.kv_evictable += e.kv_evictable;
    s.state_slots += e.state_slots;
    s.state_used += e.state_used;
    s.host_total += e.host_total;
    s.host_used += e.host_used;
    s.d2h_bytes += e.d2h_bytes;
    s.h2d_bytes += e.h2d_bytes;
    s.prompt_tokens_total += e.prompt_tokens_total;
    s.generation_tokens_total += e.generation_tokens_total;
    s.cached_tokens_total += e.cached_tokens_total;
    s.cached_tokens_device += e.cached_tokens_device;
    s.cached_tokens_host += e.cached_tokens_host;
    s.computed_prefill_tokens_total += e.computed_prefill_tokens_total;
    s.requests_total += e.requests_total;
    s.requests_finished += e.requests_finished;
    s.retractions += e.retractions;
    s.rejected += e.rejected;
    s.spec_accept_length_sum += e.spec_accept_length_sum;
    s.spec_verify_steps += e.spec_verify_steps;
    s.steps += e.steps;
    s.prefill_steps += e.prefill_steps;
    s.decode_steps += e.decode_steps;
    s.busy_s = std::max(s.busy_s, e.busy_s);
    s.prefill_busy_s += e.prefill_busy_s;
    s.decode_busy_s += e.decode_busy_s;
    s.serial_walk_s += e.serial_walk_s;
    s.decode_tokens += e.decode_tokens;
    s.admission_blocked_kv += e.admission_blocked_kv;
    s.admission_blocked_state += e.admission_blocked_state;
    s.admission_blocked_running_cap += e.admission_blocked_running_cap;
    s.device_evicted_tokens += e.device_evicted_tokens;
    s.swa_tail_lost_tokens += e.swa_tail_lost_tokens;
    s.swa_tails_evicted += e.swa_tails_evicted;
  }
  return s;
}

nlohmann::ordered_json handoff_json(const VirtualReplayResult& r) {
  if (r.handoffs == 0) return nullptr;
  const auto n = static_cast<double>(r.handoffs);
  return {{"requests", r.handoffs}, {"mean_handoff_ms", 1000 * r.handoff_s / n},
          {"mean_kv_transfer_ms", 1000 * r.transfer_s / n}};
}

namespace {

// One pool of engines as the driver sees it: a virtual client per engine,
// the DP-attention groups stepping some of them together, and each
// engine's outstanding requests for the router.
struct EnginePool {
  std::vector<std::unique_ptr<sim::VirtualClient>> clients;
  std::vector<std::unique_ptr<sim::LockstepGroup>> groups;
  std::vector<route::TargetState> targets;

  EnginePool(const std::vector<sim::Engine*>& engines, int lockstep_ranks, double delay_s, std::int64_t wall_base) {
    for (auto* e : engines) clients.push_back(std::make_unique<sim::VirtualClient>(*e, delay_s, wall_base));
    const int n = static_cast<int>(clients.size());
    targets.resize(static_cast<std::size_t>(n));
    if (lockstep_ranks <= 1) return;
    if (n % lockstep_ranks != 0)
      throw std::invalid_argument("predict_replay: " + std::to_string(n) + " engines are not whole groups of " +
                                  std::to_string(lockstep_ranks) + " DP-attention ranks");
    for (int g = 0; g < n; g += lockstep_ranks) {
      std::vector<sim::VirtualClient*> ranks;
      for (int k = 0; k < lockstep_ranks; ++k) ranks.push_back(clients[static_cast<std::size_t>(g + k)].get());
      groups.push_back(std::make_unique<sim::LockstepGroup>(std::move(ranks)));
    }
  }
  int size() const { return static_cast<int>(clients.size()); }
  std::int64_t next_event() const {
    std::int64_t next = sim::VirtualClient::kNever;
    for (const auto& c : clients) next = std::min(next, c->next_event_ns());
    for (const auto& g : groups) next = std::min(next, g->next_step_start());
    return next;
  }
  // Runs every step that starts by t; the requests whose ends reached the client by t.
  std::vector<sim::VirtualClient::Finished> advance_to(std::int64_t t) {
    std::vector<sim::VirtualClient::Finished> ended;
    for (auto& g : groups) g->advance_to(t);  // their steps; the ranks' ends come below
    for (auto& c : clients)
      for (auto& f : c->advance_to(t)) ended.push_back(std::move(f));
    return ended;
  }
  std::vector<sim::VirtualClient::Finished> cancel_all(std::int64_t t, const std::string& reason) {
    std::vector<sim::VirtualClient::Finished> ended;
    for (auto& g : groups) g->advance_to(t);
    for (auto& c : clients)
      for (auto& f : c->cancel_all(t, reason)) ended.push_back(std::move(f));
    return ended;
  }
};

}  // namespace

VirtualReplayResult predict_replay(const std::vector<sim::Engine*>& engines, const ReplayConfig& cfg,
                                   const std::vector<trace::WekaTrace>& traces, const VirtualReplayOptions& opts) {
  const double cpu0 = process_cpu_seconds();
  ReplayScheduler sched(cfg, traces, MarkerEncoding{});  // token ids: the engine's input
  const std::int64_t wall_base = wall_ns();
  EnginePool prefill(engines, opts.lockstep_ranks, opts.network_delay_s, wall_base);
  std::optional<EnginePool> decode;
  if (opts.decode) {
    if (opts.decode->engines.empty()) throw std::invalid_argument("predict_replay: a decode pool without engines");
    if (!(opts.decode->transfer_bytes_per_s > 0))
      throw std::invalid_argument("predict_replay: a decode pool needs a KV transfer bandwidth");
    decode.emplace(opts.decode->engines, opts.decode->lockstep_ranks, opts.network_delay_s, wall_base);
  }
  const int n = prefill.size();
  auto policy = n > 1 ? route::make_policy(opts.policy, n, opts.policy_opts) : nullptr;
  auto decode_policy = decode && decode->size() > 1
                           ? route::make_policy(route::Policy::least_outstanding, decode->size(), {})
                           : nullptr;
  const auto spacing = static_cast<std::int64_t>(opts.burst_spacing_s * 1e9);
  const auto delay_ns = static_cast<std::int64_t>(opts.network_delay_s * 1e9);
  struct Open {
    Dispatch d;
    int target = 0;
    int decode_target = -1;  // disaggregated: the decode engine, once the prefill handed over
    int max_tokens = 1;
    std::shared_ptr<const std::vector<sim::Token>> prompt;  // disaggregated: kept for the decode side
    std::int64_t isl = 0;
    std::int64_t prefill_first_ns = 0;  // when the prefill engine's first token reached the client side
    std::int64_t transfer_ns = 0;
  };
  std::unordered_map<std::uint64_t, Open> open;  // by request index
  std::int64_t t = 0, client_free_at = 0;
  double handoff_s = 0, transfer_s = 0;
  long long handoffs = 0;
  auto seconds = [](std::int64_t ns) { return static_cast<double>(ns) / 1e9; };
  auto finish = [&](std::uint64_t id, RequestRecord rec, std::int64_t at) {
    auto it = open.find(id);
    auto& o = it->second;
    if (o.decode_target >= 0) {
      --decode->targets[static_cast<std::size_t>(o.decode_target)].outstanding;
      if (rec.phase == Phase::profiling && !rec.content_ns.empty()) {
        handoff_s += seconds(rec.content_ns.front() - o.prefill_first_ns);
        transfer_s += seconds(o.transfer_ns);
        ++handoffs;
      }
    } else {
      --prefill.targets[static_cast<std::size_t>(o.target)].outstanding;
    }
    sched.complete(o.d, std::move(rec), seconds(at));
    open.erase(it);
  };
  // Disaggregated: a prefill that ended well hands its request to a decode
  // engine once its KV has crossed (VirtualReplayOptions::DecodePool). The
  // transfer starts when the prefill step ended, a network delay before its
  // end reached the driver; it lands no earlier than now.
  auto hand_over = [&](sim::VirtualClient::Finished f) {
    auto& o = open.at(f.id);
    --prefill.targets[static_cast<std::size_t>(o.target)].outstanding;
    const sim::MemoryPlan& plan = engines[static_cast<std::size_t>(o.target)]->plan();
    const double bytes = static_cast<double>(o.isl) *
                             (plan.kv_bytes_per_token_rank + plan.draft_kv_bytes_per_token_rank) +
                         plan.state_bytes_per_request_rank;
    o.transfer_ns = static_cast<std::int64_t>(
        std::ceil((opts.decode->transfer_latency_s + bytes / opts.decode->transfer_bytes_per_s) * 1e9));
    const std::int64_t reaches = std::max(t, f.at_ns - delay_ns + o.transfer_ns);
    int dt = 0;
    if (decode_policy) {
      route::RouteRequest rr;
      rr.key = f.rec.root_correlation_id;
      rr.now_s = seconds(t);
      const auto decision = decode_policy->choose(rr, decode->targets);
      dt = decision.target >= 0 ? decision.target : 0;
      decode_policy->routed(dt, rr);
    }
    ++decode->targets[static_cast<std::size_t>(dt)].outstanding;
    o.decode_target = dt;
    o.prefill_first_ns = f.rec.content_ns.empty() ? f.at_ns : f.rec.content_ns.front();
    RequestRecord rec = std::move(f.rec);
    rec.content_ns.clear();
    rec.content_events = 0;
    rec.end_ns = 0;
    rec.saw_done = false;
    rec.usage_prompt_tokens.reset();
    rec.usage_completion_tokens.reset();
    rec.usage_total_tokens.reset();
    const std::int64_t cached = rec.usage_cached_tokens.value_or(0);
    rec.usage_cached_tokens.reset();
    sim::SimRequestSpec spec{f.id, o.prompt, o.max_tokens, o.isl};
    spec.kv_transferred = true;
    spec.cached_tokens = cached;
    const std::int64_t start = rec.start_ns;
    decode->clients[static_cast<std::size_t>(dt)]->send_handoff(start, reaches, std::move(rec), std::move(spec));
  };
  // Disaggregated: the prefills among `ended` that ended well hand over,
  // earliest first; the rest (failed or cancelled) stay to end there.
  auto hand_over_prefilled = [&](std::vector<sim::VirtualClient::Finished>& ended) {
    if (!decode) return;
    const auto failed_end = std::stable_partition(ended.begin(), ended.end(),
                                                  [](const auto& f) { return f.rec.error.has_value(); });
    std::vector<sim::VirtualClient::Finished> prefilled(std::make_move_iterator(failed_end),
                                                        std::make_move_iterator(ended.end()));
    ended.erase(failed_end, ended.end());
    std::sort(prefilled.begin(), prefilled.end(), [](const auto& a, const auto& b) { return a.at_ns < b.at_ns; });
    for (auto& f : prefilled) hand_over(std::move(f));
  };

  const auto sending_s = std::isfinite(cfg.duration_s) ? static_cast<std::int64_t>(std::ceil(cfg.duration_s)) : 0;
  if (opts.progress) opts.progress->start(sending_s, "virtual s");
  sched.start();
  for (;;) {
    if (opts.progress && sched.profiling())
      opts.progress->update(std::clamp<std::int64_t>(
          static_cast<std::int64_t>(seconds(t) - sched.profile_start()), 0, sending_s));
    auto due = sched.poll(seconds(t));
    for (auto& d : due) {
      std::int64_t isl = 0;
      auto prompt = prompt_ids(d, isl);
      const auto& call = *d.play->tree.streams[static_cast<std::size_t>(d.stream)].turns[static_cast<std::size_t>(d.turn)].call;
      const int max_tokens = d.one_token ? 1 : static_cast<int>(std::max<std::int64_t>(1, call.out));
      int target = 0;
      if (policy) {
        route::RouteRequest rr;
        rr.key = cfg.routing_headers ? d.rec.root_correlation_id : d.rec.x_correlation_id;
        rr.now_s = seconds(t);
        if (opts.policy == route::Policy::cache_aware) {
          route::PrefixHasher h(opts.policy_opts.block_bytes);
          h.feed(std::string_view(reinterpret_cast<const char*>(prompt->data()), prompt->size() * sizeof(sim::Token)));
          rr.prefix = h.blocks();
        }
        const auto decision = policy->choose(rr, prefill.targets);
        target = decision.target >= 0 ? decision.target : 0;
        policy->routed(target, rr);
      }
      ++prefill.targets[static_cast<std::size_t>(target)].outstanding;
      RequestRecord rec = std::move(d.rec);
      rec.requested_isl = static_cast<int>(isl);
      rec.requested_osl = max_tokens;
      rec.prompt_exact = true;
      rec.credit_issued_ns = t;
      rec.scheduled_ns = t;
      // The client sends requests that fall due together one after another.
      const std::int64_t send_at = std::max(t, client_free_at);
      client_free_at = send_at + spacing;
      const std::uint64_t id = rec.request_index;
      // Disaggregated: the prefill engine samples the first token only.
      Open o{std::move(d), target, -1, max_tokens, decode ? prompt : nullptr, isl, 0, 0};
      prefill.clients[static_cast<std::size_t>(target)]->send(
          send_at, std::move(rec), sim::SimRequestSpec{id, std::move(prompt), decode ? 1 : max_tokens, isl});
      open.emplace(id, std::move(o));
    }
    if (!due.empty()) continue;
    if (sched.finished()) break;
    if (const auto& why = sched.cancel_reason()) {
      const std::string reason = *why;
      // Disaggregated: a prefill that ended by now hands over, and the
      // decode pool's cancellation below cancels it with the rest.
      auto ended = prefill.cancel_all(t, reason);
      hand_over_prefilled(ended);
      for (auto& f : ended) finish(f.id, std::move(f.rec), std::max(t, f.at_ns));
      if (decode)
        for (auto& f : decode->cancel_all(t, reason)) finish(f.id, std::move(f.rec), std::max(t, f.at_ns));
      continue;
    }
    const double wake = sched.next_wakeup();
    std::int64_t next = prefill.next_event();
    if (decode) next = std::min(next, decode->next_event());
    if (std::isfinite(wake)) {
      auto w = static_cast<std::int64_t>(std::ceil(wake * 1e9));
      if (seconds(w) < wake) ++w;  // never wake a hair before the timer
      next = std::min(next, w);
    }
    if (next == sim::VirtualClient::kNever) break;  // nothing can move the run on (the scheduler ends it first)
    // Everything at or before t has been handled: time moves on.
    t = std::max(t + 1, next);
    auto ended = prefill.advance_to(t);
    if (decode) {
      // A prefill that ends now hands over after the decode pool has run to
      // now: its transfer lands later still.
      auto decoded = decode->advance_to(t);
      hand_over_prefilled(ended);
      for (auto& f : decoded) ended.push_back(std::move(f));
    }
    std::sort(ended.begin(), ended.end(), [](const auto& a, const auto& b) { return a.at_ns < b.at_ns; });
    for (auto& f : ended) finish(f.id, std::move(f.rec), f.at_ns);
  }

  VirtualReplayResult out;
  out.replay = std::move(sched.result());
  auto& run = out.replay.run;
  std::sort(run.records.begin(), run.records.end(),
            [](const RequestRecord& a, const RequestRecord& b) { return a.start_ns < b.start_ns; });
  run.profiling_end_ns = t;
  run.abort_reason = out.replay.abort_reason;
  for (auto* e : engines) out.per_engine.push_back(e->stats());
  if (opts.decode)
    for (auto* e : opts.decode->engines) out.per_engine.push_back(e->stats());
  for (const auto& c : prefill.clients) out.ttft_breakdown += c->ttft_breakdown();
  out.engine = sum_engine_stats(out.per_engine);
  if (opts.decode) {
    // Every request passes a prefill and a decode engine: counted once, at
    // the prefill side; the decode side adds its own retractions,
    // rejections, tokens and busy time.
    for (std::size_t i = engines.size(); i < out.per_engine.size(); ++i) {
      out.engine.requests_total -= out.per_engine[i].requests_total;
      out.engine.requests_finished -= out.per_engine[i].requests_finished;
    }
    out.handoff_s = handoff_s;
    out.transfer_s = transfer_s;
    out.handoffs = handoffs;
  }
  out.virtual_seconds = seconds(t);
  out.cpu_seconds = process_cpu_seconds() - cpu0;
  if (opts.progress) opts.progress->finish(std::to_string(run.records.size()) + " requests");
  return out;
}

}  // namespace agentperf::replay
