#include "sim/predictor.h"

#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>

#include "common/clock.h"
#include "common/error.h"
#include "load/arrival_schedule.h"
#include "load/prompt_synth.h"
#include "load/request_builder.h"
#include "sim/virtual_client.h"
#include "sim/text_tokens.h"

namespace agentperf::sim {
namespace {

// The synthetic stream of `agentperf profile`, as token vectors.
class SyntheticSource {
 public:
  explicit SyntheticSource(const ProfileConfig& cfg) : synth_(cfg), text_(!cfg.uses_token_ids()) {}
  WorkItem make(std::uint64_t index) {
    const SynthPrompt p = synth_.make(index);
    auto tokens = std::make_shared<std::vector<Token>>();
    if (p.prefix) {
      auto it = prefix_cache_.find(p.prefix.get());
      if (it == prefix_cache_.end()) {
        std::vector<Token> t;
        if (text_) t = pseudo_tokenize(*p.prefix);
        else append_token_ids(*p.prefix, t);
        it = prefix_cache_.emplace(p.prefix.get(), std::move(t)).first;
      }
      *tokens = it->second;
    }
    if (text_) {
      auto more = pseudo_tokenize(*p.suffix);
      tokens->insert(tokens->end(), more.begin(), more.end());
    } else {
      append_token_ids(*p.suffix, *tokens);
    }
    WorkItem w;
    w.id = index;
    w.prompt_len = static_cast<std::int64_t>(tokens->size());
    w.prompt = std::move(tokens);
    w.max_tokens = p.osl;
    w.session = static_cast<std::int64_t>(index);
    w.exact = p.exact;
    return w;
  }

 private:
  PromptSynth synth_;
  bool text_;
  std::map<const std::string*, std::vector<Token>> prefix_cache_;
};

}  // namespace

PredictResult predict(Engine& engine, const PredictConfig& cfg) {
  const ProfileConfig& load = cfg.load;
  const bool agentic = cfg.agentic.sessions > 0;
  const bool open_loop = !agentic && load.request_rate.has_value();
  const int lanes = agentic ? cfg.agentic.sessions : (open_loop ? 0 : load.concurrency.value_or(1));
  const double cpu0 = process_cpu_seconds();
  constexpr std::int64_t kNever = VirtualClient::kNever;

  SyntheticSource synthetic(load);
  Rng shared_rng(mix_seed(load.seed, 0x5E55));
  std::vector<AgenticLane> agentic_lanes;
  if (agentic) {
    auto system = make_tokens(shared_rng, cfg.agentic.system_tokens);
    for (int i = 0; i < lanes; ++i) agentic_lanes.emplace_back(cfg.agentic, i, load.seed, system);
  }
  Rng think_rng(mix_seed(load.seed, 0x7111));

  PredictResult result;
  // The client side (network delay, chunking, records) is the one the
  // virtual-time replay uses (sim/virtual_client.h).
  const std::int64_t wall_base = wall_ns();
  VirtualClient client(engine, cfg.network_delay_s, wall_base);
  std::unordered_map<std::uint64_t, int> lane_of;  // request id -> lane (-1: open loop)
  using Ready = std::pair<std::int64_t, int>;  // (time, lane)
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready;
  std::int64_t t = 0;
  std::uint64_t next_index = 0;
  const auto spacing = static_cast<std::int64_t>(cfg.burst_spacing_s * 1e9);

  auto issue = [&](int lane, std::int64_t at, std::int64_t scheduled, Phase phase) {
    WorkItem w = agentic ? agentic_lanes[static_cast<std::size_t>(lane)].next(next_index) : synthetic.make(next_index);
    ++next_index;
    RequestRecord r;
    r.request_index = w.id;
    r.phase = phase;
    r.session_num = w.session;
    r.conversation_id = std::to_string(w.session);
    r.turn_index = w.turn;
    r.x_request_id = "sim-" + std::to_string(w.id);
    r.x_correlation_id = "sim-session-" + std::to_string(w.session);
    r.requested_isl = static_cast<int>(w.prompt_len);
    r.requested_osl = w.max_tokens;
    r.prompt_exact = true;
    r.credit_issued_ns = at;
    r.scheduled_ns = scheduled;
    lane_of[w.id] = lane;
    client.send(at, std::move(r), SimRequestSpec{w.id, w.prompt, w.max_tokens, w.prompt_len});
  };

  // One phase (warmup, then profiling) of the closed or open loop: send
  // while the count and the duration allow, then wait for what is in
  // flight until the grace period ends; what is left is cancelled.
  auto run_phase = [&](Phase phase, std::optional<std::int64_t> count, std::optional<double> duration_s,
                       double grace_s) {
    const std::int64_t start = t;
    const std::int64_t send_deadline = duration_s ? start + static_cast<std::int64_t>(*duration_s * 1e9) : kNever;
    const std::int64_t grace_deadline =
        duration_s ? send_deadline + static_cast<std::int64_t>(grace_s * 1e9) : kNever;
    std::int64_t issued = 0;
    std::int64_t client_free_at = start;
    auto can_issue = [&](std::int64_t at) { return (!count || issued < *count) && at < send_deadline; };
    std::optional<ArrivalSchedule> arrivals;
    std::int64_t next_arrival = kNever;
    if (open_loop) {
      arrivals.emplace(load.arrival, *load.request_rate, 0, 1, mix_seed(load.seed, static_cast<std::uint64_t>(phase)));
      next_arrival = start + arrivals->next_offset_ns();
    } else {
      while (!ready.empty()) ready.pop();
      for (int l = 0; l < lanes; ++l) ready.push({start, l});
    }
    CountProgress* progress = phase == Phase::profiling ? cfg.progress : nullptr;
    if (progress) {
      if (duration_s) progress->start(static_cast<std::int64_t>(std::ceil(*duration_s)), "virtual s");
      else progress->start(count.value_or(0), "requests sent");
    }
    for (;;) {
      if (progress)
        progress->update(duration_s ? std::min<std::int64_t>((t - start) / 1'000'000'000, progress->total()) : issued);
      if (open_loop) {
        const int cap = load.concurrency.value_or(0);
        while (next_arrival <= t && can_issue(next_arrival) && (cap == 0 || static_cast<int>(client.in_flight()) < cap)) {
          issue(-1, next_arrival, next_arrival, phase);
          ++issued;
          next_arrival = start + arrivals->next_offset_ns();
        }
      } else {
        while (!ready.empty() && ready.top().first <= t && can_issue(ready.top().first)) {
          const auto [at, lane] = ready.top();
          ready.pop();
          // The client sends simultaneous requests one after another.
          const std::int64_t send_at = std::max(at, client_free_at);
          client_free_at = send_at + spacing;
          issue(lane, send_at, at, phase);
          ++issued;
        }
      }
      std::int64_t next = client.next_event_ns();
      if (open_loop) {
        if (can_issue(next_arrival)) next = std::min(next, next_arrival);
      } else if (!ready.empty() && can_issue(ready.top().first)) {
        next = std::min(next, ready.top().first);
      }
      if (next == kNever) break;
      if (next > grace_deadline) {
        t = grace_deadline;
        break;
      }
      t = std::max(t, next);
      for (auto& f : client.advance_to(t)) {
        const int lane = lane_of[f.id];
        lane_of.erase(f.id);
        result.run.records.push_back(std::move(f.rec));
        if (lane >= 0) {
          const double think = agentic ? agentic_lanes[static_cast<std::size_t>(lane)].think_time(think_rng) : 0.0;
          ready.push({f.at_ns + static_cast<std::int64_t>(think * 1e9), lane});
        }
      }
    }
    // Requests still running when the grace period ends are cancelled.
    for (auto& f : client.cancel_all(t, "cancelled: the grace period after the benchmark duration expired")) {
      lane_of.erase(f.id);
      if (f.rec.was_cancelled) ++result.run.profiling_cancelled;
      result.run.records.push_back(std::move(f.rec));
    }
  };

  if (load.warmup_request_count > 0) {
    run_phase(Phase::warmup, load.warmup_request_count, std::nullopt, 0);
    if (engine.has_work()) throw UserError("sim predict: warmup did not drain");
  }
  result.run.profiling_start_ns = t;
  result.run.profiling_start_wall_ns = wall_base + t;
  run_phase(Phase::profiling, load.request_count, load.duration_s, load.grace_period_s);
  result.run.profiling_end_ns = t;
  result.engine = engine.stats();
  result.virtual_seconds = static_cast<double>(t) / 1e9;
  result.cpu_seconds = process_cpu_seconds() - cpu0;
  if (cfg.progress) cfg.progress->finish(std::to_string(result.run.records.size()) + " requests");
  return result;
}

nlohmann::ordered_json prediction_json(const EngineStats& e, const MemoryPlan& plan, double virtual_s, double cpu_s) {
  nlohmann::ordered_json j = {{"virtual_seconds", virtual_s},
          {"cpu_seconds", cpu_s},
          {"speedup", cpu_s > 0 ? virtual_s / cpu_s : 0.0},
          {"kv_tokens", plan.kv_tokens},
          {"state_slots", plan.mamba_slots},
          {"retractions", e.retractions},
          {"cache_hit_rate", e.cache_hit_rate()},
          {"busy_share", virtual_s > 0 ? e.busy_s / virtual_s : 0.0},
          {"binding_pool", binding_pool(e)},
          {"admission_blocked",
           {{"kv", e.admission_blocked_kv},
            {"state", e.admission_blocked_state},
            {"running_cap", e.admission_blocked_running_cap}}},
          {"device_evicted_tokens", e.device_evicted_tokens},
          {"device_eviction_tokens_per_s",
           virtual_s > 0 ? static_cast<double>(e.device_evicted_tokens) / virtual_s : 0.0}};
  // vLLM's Triton attention walking contexts serially: its share of the busy time.
  if (const double walk = e.serial_walk_share(); walk > 0) j["serial_walk_share_of_busy"] = walk;
  // A cap-sized sliding-window pool: the tails it keeps and what their loss cost.
  if (plan.swa_prefix_tails >= 0)
    j["swa_tails"] = {{"kept", plan.swa_prefix_tails},
                      {"evicted", e.swa_tails_evicted},
                      {"lost_prompt_tokens", e.swa_tail_lost_tokens}};
  return j;
}

nlohmann::ordered_json per_engine_json(const std::vector<EngineStats>& engines) {
  nlohmann::ordered_json per = nlohmann::ordered_json::array();
  for (const auto& e : engines)
    per.push_back({{"requests", e.requests_total},
                   {"cache_hit_rate", e.cache_hit_rate()},
                   {"computed_prefill_tokens", e.computed_prefill_tokens_total},
                   {"busy_s", e.busy_s},
                   {"binding_pool", binding_pool(e)},
                   {"device_evicted_tokens", e.device_evicted_tokens}});
  return per;
}

}  // namespace agentperf::sim
