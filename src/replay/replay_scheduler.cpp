#include "replay/replay_scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <tuple>

#include "common/clock.h"
#include "common/error.h"
#include "common/numpy_random.h"
#include "common/rng.h"
#include "common/run_control.h"
#include "metrics/export.h"
#include "load/request_builder.h"

namespace agentperf::replay {
namespace {
constexpr double kNever = std::numeric_limits<double>::infinity();
}  // namespace


std::pair<double, double> trajectory_time_bounds_ms(const trace::SessionTree& tree) {
  double lo = kNever, hi = -kNever;
  for (const auto& s : tree.streams)
    for (const auto& turn : s.turns) {
      const double ms = turn.t_s * 1000.0;  // the Weka loader: t_ms = req.t * 1000.0, on the idle-capped clock
      lo = std::min(lo, ms);
      hi = std::max(hi, ms);
    }
  if (lo == kNever) return {0.0, 0.0};
  return {lo, hi};
}

double trajectory_start_ms(const ReplayConfig& cfg, const trace::SessionTree& tree, int lane) {
  const auto [start_ms, end_ms] = trajectory_time_bounds_ms(tree);
  return aiperf_t_star_ms(cfg.seed, tree.trace->id, static_cast<std::uint64_t>(lane), start_ms, end_ms, cfg.t_star_min,
                          cfg.t_star_max);
}

std::size_t marker_piece_index(const trace::Stream& stream, std::size_t pieces) {
  return pieces == 0 ? 0 : std::min(static_cast<std::size_t>(stream.system_blocks), pieces - 1);
}

ReplayScheduler::ReplayScheduler(const ReplayConfig& cfg, const std::vector<trace::WekaTrace>& traces,
                                 MarkerEncoding marker, std::shared_ptr<const tokenizer::ExactTextBuilder> exact)
    : cfg_(cfg), traces_(traces), marker_(std::move(marker)), exact_(std::move(exact)),
      send_deadline_(kNever), grace_deadline_(kNever) {
  if (traces_.empty()) throw UserError("replay: no traces to play");
  if (cfg.first_trace < 0) throw UserError("replay: the first trace index must be >= 0");
  next_trace_ = cfg.first_trace % static_cast<std::int64_t>(traces_.size());
  if (cfg.lanes < 1) throw UserError("--lanes must be at least 1");
  if (cfg.duration_s <= 0) throw UserError("--duration must be > 0 seconds");
}

void ReplayScheduler::start() {
  counters_.phase_start_ns = monotonic_ns();
  counters_.phase = 1;
  lane_quota_.assign(static_cast<std::size_t>(cfg_.lanes), cfg_.warmup_requests_per_lane);
  if (cfg_.warmup) {
    mode_ = Mode::primers;
    counters_.phase = 0;
    for (int lane = 0; lane < cfg_.lanes; ++lane) start_play(lane, 0.0, true);
    schedule_primers();
  } else {
    begin_profiling(0.0);
    for (int lane = 0; lane < cfg_.lanes; ++lane) start_play(lane, 0.0);
  }
}

void ReplayScheduler::begin_profiling(double t) {
  mode_ = Mode::profiling;
  counters_.phase = 1;
  // The progress line counts each phase's own requests.
  counters_.done = 0;
  counters_.errors = 0;
  counters_.output_tokens = 0;
  profile_start_ = t;
  send_deadline_ = t + cfg_.duration_s;
  grace_deadline_ = send_deadline_ + cfg_.grace_s;
  result_.run.profiling_start_ns = static_cast<std::int64_t>(t * 1e9);  // the driver adds its clock's origin
}

// AIPerf agentic_replay.py _execute_warmup: each primer's lead (t* minus
// the primed turn's timestamp) is clamped on its own to the system idle
// cap (_capped_warmup_lead_ms), and the primer goes out max_lead - lead
// after the start, so every lane's t* lands at one instant.
void ReplayScheduler::schedule_primers() {
  double max_lead = 0;
  for (const auto& pr : primers_) max_lead = std::max(max_lead, pr.lead_ms);
  primers_left_ = static_cast<std::int64_t>(primers_.size());
  warmup_primers_planned_ = primers_left_;
  warmup_pressure_planned_ = static_cast<std::int64_t>(cfg_.lanes) * cfg_.warmup_requests_per_lane;
  for (const auto& pr : primers_)
    timers_.push_back({(max_lead - pr.lead_ms) / 1000.0, pr.play, pr.stream, pr.turn});
  primers_.clear();
  if (primers_left_ == 0) start_pressure(0.0);
}

void ReplayScheduler::start_pressure(double t) {
  mode_ = Mode::pressure;
  for (auto& lp : lanes_)
    if (lp) plan_pressure(*lp);
  for (auto& lp : lanes_)
    if (lp) evaluate(*lp, t);
}

// Which turns of a play are warmup pressure requests: the lane's next K
// calls (K: what is left of its quota) in recorded start order (ties: stream,
// then turn), decided when the play enters the pressure stage. Deciding by
// which stream's request came back first instead made the set depend on the
// order of near-simultaneous completions (parallel subagents end in one
// engine step): a race over HTTP that a virtual-time run settles its own
// way, and the turns each stream hands off to profiling (so every handoff
// offset) followed it. A planned turn still goes only once its stream's
// previous turn and its dependencies are done.
void ReplayScheduler::plan_pressure(Play& p) {
  int& quota = lane_quota_[static_cast<std::size_t>(p.lane)];
  struct Cand {
    double t;
    std::size_t s;
    int k;
  };
  std::vector<Cand> cand;
  for (std::size_t s = 0; s < p.st.size(); ++s) {
    auto& ss = p.st[s];
    ss.pressure_end = ss.next;
    if (ss.finished) continue;
    const auto& turns = p.tree.streams[s].turns;
    for (int k = ss.next; k < static_cast<int>(turns.size()); ++k)
      cand.push_back({turns[static_cast<std::size_t>(k)].t_s, s, k});
  }
  std::sort(cand.begin(), cand.end(),
            [](const Cand& a, const Cand& b) { return std::tie(a.t, a.s, a.k) < std::tie(b.t, b.s, b.k); });
  const std::size_t take = std::min(cand.size(), static_cast<std::size_t>(std::max(quota, 0)));
  // Each stream's share is a prefix of its remaining turns.
  for (std::size_t i = 0; i < take; ++i) ++p.st[cand[i].s].pressure_end;
  quota -= static_cast<int>(take);
}

// Planned pressure turns a play will not send (it ended early): they go
// back to the lane's quota for the next play.
int ReplayScheduler::unused_pressure(const Play& p) const {
  int n = 0;
  for (const auto& ss : p.st) n += std::max(0, ss.pressure_end - ss.next);
  return n;
}

// AIPerf agentic_replay.py finalize_phase -> _build_handoff_states and
// _execute_profiling (_profiling_phase_t0_offset_ms): every stream's next
// turn is due at max(0, its recorded timestamp - the play's origin (t*)),
// less the minimum of those offsets over every stream not waiting on
// children, across all lanes; a stream waiting on children goes at the
// later of its own offset and its children's completion. Time spent in
// warmup consumes no delay.
void ReplayScheduler::handoff(double t) {
  // A warmup cut off by its grace period was cancelled before it got here:
  // that cancellation is over, whichever way the warmup drained.
  cancel_reason_.reset();
  begin_profiling(t);
  timers_.clear();
  struct Due {
    StreamState* ss;
    double offset_ms;
  };
  std::vector<Due> due;
  double phase_t0_ms = kNever;
  for (auto& lp : lanes_) {
    if (!lp || lp->ended) continue;
    Play& p = *lp;
    for (std::size_t s = 0; s < p.st.size(); ++s) {
      auto& ss = p.st[s];
      ss.scheduled = false;
      ss.handoff_at = -1;
      if (!ss.spawned || ss.finished || ss.in_flight) continue;
      const auto& turn = p.tree.streams[s].turns[static_cast<std::size_t>(ss.next)];
      const double offset_ms = std::max(0.0, turn.t_s * 1000.0 - p.origin_ms);
      bool waiting_on_children = false;
      for (int c : turn.joins) waiting_on_children = waiting_on_children || !p.st[static_cast<std::size_t>(c)].finished;
      if (!waiting_on_children) phase_t0_ms = std::min(phase_t0_ms, offset_ms);
      due.push_back({&ss, offset_ms});
    }
  }
  if (phase_t0_ms == kNever) phase_t0_ms = 0;
  for (const auto& d : due) d.ss->handoff_at = t + std::max(0.0, d.offset_ms - phase_t0_ms) / 1000.0;
  for (auto& lp : lanes_)
    if (lp) evaluate(*lp, t);
}

// Cuts a tree at t*: turns recorded before it are history (done).
void ReplayScheduler::snapshot(Play& p, int lane) {
  const auto& tree = p.tree;
  // AIPerf trajectory_source.py _build_timestamped_trajectory; the split is
  // _next_turn_index_at_or_after: a turn with timestamp_ms < t* is history.
  const double t_star = trajectory_start_ms(cfg_, tree, lane);
  p.t_star_ms = t_star;
  p.origin_ms = t_star;
  const double lead_cap_ms = cfg_.system_idle_cap_s * 1000.0;
  for (std::size_t s = 0; s < tree.streams.size(); ++s) {
    const auto& turns = tree.streams[s].turns;
    int before = 0;
    while (before < static_cast<int>(turns.size()) && turns[static_cast<std::size_t>(before)].t_s * 1000.0 < t_star) {
      p.done[s][static_cast<std::size_t>(before)] = 1;
      ++before;
    }
    p.st[s].next = before;
    p.st[s].finished = before == static_cast<int>(turns.size());
  }
  for (std::size_t s = 0; s < tree.streams.size(); ++s) {
    const auto& stream = tree.streams[s];
    auto& ss = p.st[s];
    ss.spawned = s == 0 || p.done[static_cast<std::size_t>(stream.spawned_by.stream)][static_cast<std::size_t>(stream.spawned_by.turn)];
    if (ss.spawned && !ss.finished && ss.next > 0) {
      const int k = ss.next - 1;
      const double lead_ms = t_star - stream.turns[static_cast<std::size_t>(k)].t_s * 1000.0;
      primers_.push_back({&p, static_cast<int>(s), k, std::min(lead_ms, lead_cap_ms)});
    }
  }
}

void ReplayScheduler::start_play(int lane, double t, bool cut_at_t_star) {
  if (sending_done_) return;
  auto p = std::make_unique<Play>();
  const std::size_t ti = static_cast<std::size_t>(next_trace_++ % static_cast<std::int64_t>(traces_.size()));
  p->trace = &traces_[ti];
  p->tree = trace::build_session_tree(*p->trace, true, cfg_.tree_idle_cap_s);
  p->builder = std::make_unique<trace::PromptBuilder>(*p->trace, cfg_.seed, exact_, cfg_.token_ids);
  p->lane = lane;
  p->index = result_.plays_started++;
  result_.idle_compressed_s += p->tree.idle_compressed_s;
  p->pass = passes_[p->trace->id]++;
  if (cfg_.cache_bust) {
    const std::string marker = cache_bust_marker(cfg_.benchmark_id, p->pass, lane, p->trace->id);
    // Six token ids from the marker's hex digits.
    for (int i = 0; i < 6; ++i)
      p->marker_ids.push_back(cfg_.token_ids.marker_base +
                              std::stoi(marker.substr(5 + 2 * static_cast<std::size_t>(i), 2), nullptr, 16));
    if (marker_.text) {
      p->marker_piece = std::make_shared<const std::string>(marker + "\\n\\n");
      p->marker_tokens = marker_.count_text_tokens(marker + "\n\n");
    } else {
      std::string s;
      for (auto id : p->marker_ids) s += std::to_string(id) + ",";
      p->marker_piece = std::make_shared<const std::string>(s);
      p->marker_tokens = static_cast<std::int64_t>(p->marker_ids.size());
    }
  }
  p->st.assign(p->tree.streams.size(), StreamState{});
  {
    const std::uint64_t salt = mix_seed(cfg_.seed, seed_of(cfg_.benchmark_id), 0xC0E);
    for (std::size_t s = 0; s < p->tree.streams.size(); ++s)
      p->correlation_ids.push_back(make_request_id(mix_seed(salt, static_cast<std::uint64_t>(p->index), 2 * s),
                                                   mix_seed(salt, static_cast<std::uint64_t>(p->index), 2 * s + 1)));
  }
  p->done.resize(p->tree.streams.size());
  for (std::size_t s = 0; s < p->tree.streams.size(); ++s) p->done[s].assign(p->tree.streams[s].turns.size(), 0);
  p->st[0].spawned = true;
  p->st[0].ready_base = t;
  p->idle_since = t;
  if (!p->tree.streams.empty() && !p->tree.streams[0].turns.empty())
    p->origin_ms = p->tree.streams[0].turns[0].t_s * 1000.0;
  if (cut_at_t_star) snapshot(*p, lane);
  Play* raw = p.get();
  if (static_cast<std::size_t>(lane) >= lanes_.size()) lanes_.resize(static_cast<std::size_t>(lane) + 1);
  // The finished play may still be on the call stack: free it at the
  // scheduler's next turn, not here.
  if (lanes_[static_cast<std::size_t>(lane)]) retired_.push_back(std::move(lanes_[static_cast<std::size_t>(lane)]));
  lanes_[static_cast<std::size_t>(lane)] = std::move(p);
  if (mode_ == Mode::pressure) plan_pressure(*raw);  // recycled during warmup: the rest of the lane's quota
  if (!cut_at_t_star) evaluate(*raw, t);
}

bool ReplayScheduler::deps_met(const Play& p, int s) const {
  const auto& turn = p.tree.streams[static_cast<std::size_t>(s)].turns[static_cast<std::size_t>(p.st[static_cast<std::size_t>(s)].next)];
  for (int c : turn.joins)
    if (!p.st[static_cast<std::size_t>(c)].finished) return false;
  for (const auto& b : turn.barriers)
    if (!p.done[static_cast<std::size_t>(b.stream)][static_cast<std::size_t>(b.turn)]) return false;
  return true;
}

// Schedules every stream of the play whose next turn can now start.
void ReplayScheduler::evaluate(Play& p, double t) {
  if (mode_ == Mode::primers) return;  // primers first; the rest waits for them
  bool all_finished = true;
  for (std::size_t s = 0; s < p.st.size(); ++s) {
    auto& ss = p.st[s];
    if (!ss.finished) all_finished = false;
    if (!ss.spawned || ss.finished || ss.in_flight || ss.scheduled) continue;
    if (!deps_met(p, static_cast<int>(s))) continue;
    if (mode_ == Mode::pressure && ss.next >= ss.pressure_end) continue;  // not one of its planned turns
    const auto& turn = p.tree.streams[s].turns[static_cast<std::size_t>(ss.next)];
    // The end-to-start delay counts from the previous completion (or the
    // spawn); a dependency met later holds the turn until then. Warmup
    // pressure requests go with no delay.
    // After the warmup handoff, the turn's handoff time replaces its delay.
    const double at = mode_ == Mode::pressure ? t
                      : ss.handoff_at >= 0    ? std::max(ss.handoff_at, t)
                                              : std::max(ss.ready_base + turn.start_delay_s, t);
    ss.scheduled = true;
    timers_.push_back({at, &p, static_cast<int>(s)});
  }
  // A play ended early (context overflow) recycles once its last request
  // is back, so no request in flight points at a retired play.
  if (all_finished && !p.ended && !p.dropped && p.in_flight == 0) {
    p.ended = true;
    if (mode_ == Mode::pressure) lane_quota_[static_cast<std::size_t>(p.lane)] += unused_pressure(p);
    ++result_.plays_finished;
    start_play(p.lane, t);  // recycle: the next trace from turn 0
  }
}

bool ReplayScheduler::break_deadlocks(double t) {
  bool released = false;
  for (auto& lp : lanes_) {
    if (!lp || lp->ended || lp->in_flight > 0) continue;
    for (std::size_t s = 0; s < lp->st.size(); ++s) {
      auto& ss = lp->st[s];
      if (!ss.spawned || ss.finished || ss.in_flight || ss.scheduled) continue;
      ss.scheduled = true;
      timers_.push_back({t, lp.get(), static_cast<int>(s)});
      released = true;
    }
  }
  if (released) ++result_.deadlocks_broken;
  return released;
}

void ReplayScheduler::end_play_early(Play& p, double t) {
  // Context overflow: the trajectory stops; drop its timers and recycle
  // once its in-flight requests are back.
  for (auto& s : p.st) s.finished = true;
  timers_.erase(std::remove_if(timers_.begin(), timers_.end(), [&](const PendingTimer& x) { return x.play == &p; }),
                timers_.end());
  ++result_.overflow_terminations;
  if (p.in_flight == 0) evaluate(p, t);
}

// AIPerf's record_warmup_failure: a context overflow in warmup drops every
// lane of that trace (the trajectories of that conversation id); the lanes
// play nothing more. Their pending primers are dropped and counted as done.
void ReplayScheduler::drop_trace_lanes(const std::string& trace_id) {
  for (auto& lp : lanes_) {
    Play* p = lp.get();
    if (!p || p->dropped || p->trace->id != trace_id) continue;
    p->dropped = true;
    p->ended = true;
    for (auto& s : p->st) s.finished = true;
    const auto before = timers_.size();
    timers_.erase(std::remove_if(timers_.begin(), timers_.end(),
                                 [&](const PendingTimer& x) { return x.play == p; }),
                  timers_.end());
    primers_left_ -= static_cast<std::int64_t>(before - timers_.size());  // only primers are pending now
    ++result_.warmup_dropped_lanes;
  }
}

void ReplayScheduler::apply_idle_caps(double t) {
  if (timers_.empty() || mode_ == Mode::primers) return;  // the primer spread is deliberate
  // Per tree: nothing in flight for longer than the cap. Each tree's
  // earliest timer in one pass over the timers and the shifts in another,
  // kept on the plays themselves: polled on every event, a scan of the
  // timers per lane cost lanes x timers (a 4,096-lane virtual-time replay
  // spent 94 % of its CPU here).
  auto reset = [](Play* p) {
    p->idle_scratch_earliest = kNever;
    p->idle_scratch_shift = 0;
  };
  for (auto& lp : lanes_)
    if (lp) reset(lp.get());
  for (const auto& x : timers_) reset(x.play);
  for (const auto& x : timers_) x.play->idle_scratch_earliest = std::min(x.play->idle_scratch_earliest, x.at);
  bool shifted = false;
  for (auto& lp : lanes_) {
    Play* p = lp.get();
    if (!p || p->in_flight > 0 || p->ended || p->idle_scratch_earliest == kNever || p->idle_scratch_shift > 0) continue;
    const double limit = p->idle_since + cfg_.tree_idle_cap_s;
    if (p->idle_scratch_earliest > limit) {
      p->idle_scratch_shift = p->idle_scratch_earliest - limit;
      result_.idle_skipped_s += p->idle_scratch_shift;
      shifted = true;
    }
  }
  if (shifted)
    for (auto& x : timers_) x.at -= x.play->idle_scratch_shift;
  // Whole system: nothing in flight anywhere.
  if (in_flight_ == 0) {
    double earliest = kNever;
    for (const auto& x : timers_) earliest = std::min(earliest, x.at);
    const double limit = system_idle_since_ + cfg_.system_idle_cap_s;
    if (earliest > limit) {
      const double shift = earliest - limit;
      for (auto& x : timers_) x.at -= shift;
      result_.idle_skipped_s += shift;
    }
  }
}

void ReplayScheduler::stop_sending(const std::string& reason) {
  if (result_.abort_reason.empty()) result_.abort_reason = reason;
  sending_done_ = true;
  timers_.clear();
}

// X-Request-ID: salted with the per-run benchmark id, so ids never repeat
// across runs (prompts stay seeded).
std::string ReplayScheduler::make_id(std::uint64_t i) const {
  const std::uint64_t salt = mix_seed(cfg_.seed, seed_of(cfg_.benchmark_id));
  return make_request_id(mix_seed(salt, 0x4E9, i), mix_seed(salt, 0x4EA, i));
}

Dispatch ReplayScheduler::make_dispatch(const PendingTimer& timer, double t) {
  Play* p = timer.play;
  auto& ss = p->st[static_cast<std::size_t>(timer.stream)];
  const auto& stream = p->tree.streams[static_cast<std::size_t>(timer.stream)];
  ss.scheduled = false;
  Dispatch d;
  d.play = p;
  d.stream = timer.stream;
  d.primer = timer.primer_turn >= 0;
  d.turn = d.primer ? timer.primer_turn : ss.next;
  d.one_token = d.primer || mode_ == Mode::pressure;
  if (!d.primer) {
    ss.in_flight = true;
    ss.handoff_at = -1;
    // AIPerf BranchOrchestrator.on_credit_issued: branches that overlapped
    // their spawning call in the recording start when it is sent (never for
    // a warmup primer); their first-call offsets count from now.
    const auto& spawns = stream.turns[static_cast<std::size_t>(d.turn)].spawns_on_send;
    for (int c : spawns) {
      p->st[static_cast<std::size_t>(c)].spawned = true;
      p->st[static_cast<std::size_t>(c)].ready_base = t;
    }
    if (!spawns.empty()) spawned_on_send_.push_back(p);
  }
  ++p->in_flight;
  ++in_flight_;
  if (d.primer) ++result_.warmup_primers;
  else if (d.one_token) ++result_.warmup_pressure;
  RequestRecord& rec = d.rec;
  rec.request_index = static_cast<std::uint64_t>(next_request_++);
  rec.phase = d.one_token ? Phase::warmup : Phase::profiling;
  rec.session_num = p->index;
  rec.worker_id = p->lane;  // the lane: the report draws one row per lane
  rec.conversation_id = stream.conversation_id;
  rec.turn_index = d.turn;
  rec.x_request_id = make_id(rec.request_index);
  rec.x_correlation_id = p->correlation_ids[static_cast<std::size_t>(timer.stream)];
  rec.root_correlation_id = p->correlation_ids[0];
  rec.agent_depth = stream.depth;
  if (stream.parent >= 0) rec.parent_correlation_id = p->correlation_ids[static_cast<std::size_t>(stream.parent)];
  counters_.sent++;
  counters_.in_flight++;
  return d;
}

std::vector<Dispatch> ReplayScheduler::poll(double t) {
  retired_.clear();
  std::vector<Dispatch> out;
  if (finished_) return out;
  if (cfg_.stop && cfg_.stop->requested() && result_.abort_reason.empty()) {
    stop_sending(cfg_.stop->reason());
    grace_deadline_ = t;  // cancel what is in flight now
  }
  if (stop_requested() && result_.abort_reason.empty()) {
    // SIGINT/SIGTERM: no new requests; those in flight get the grace
    // period, are counted, then cancelled; the outputs are written as
    // partial (common/run_control.h).
    stop_sending(stop_reason());
    result_.run.interrupted = true;
    result_.run.stop_signal = stop_signal();
    grace_deadline_ = std::min(grace_deadline_, t + cfg_.grace_s);
    if (!cfg_.output.quiet && in_flight_ > 0)
      std::fprintf(stderr, "\nagentperf: %s: sending stopped; waiting up to %.3g s for %d requests in flight "
                           "(a second signal cancels them at once)\n",
                   result_.abort_reason.c_str(), cfg_.grace_s, in_flight_);
  }
  for (;;) {
    if (mode_ != Mode::profiling && !sending_done_) {
      if (mode_ == Mode::pressure && in_flight_ == 0 && timers_.empty()) {
        handoff(t);
        continue;
      }
      if (t >= cfg_.warmup_grace_s) {
        // Warmup ran past its grace: what is left of it is cancelled, then
        // profiling starts.
        if (in_flight_ > 0) {
          cancel_reason_ = "cancelled: the warmup grace period expired";
          return out;
        }
        cancel_reason_.reset();
        handoff(t);
        continue;
      }
    }
    if (mode_ == Mode::profiling && !sending_done_ && t >= send_deadline_) {
      sending_done_ = true;
      timers_.clear();
    }
    if (sending_done_) {
      if (in_flight_ == 0) {
        finished_ = true;
        cancel_reason_.reset();
      } else if (result_.run.interrupted && cancel_requested()) {
        cancel_reason_ = "cancelled: a second signal during the grace period";
      } else if (t >= grace_deadline_) {
        cancel_reason_ = result_.run.interrupted ? "cancelled: the grace period after the stop request expired"
                                                 : "cancelled: the grace period after the benchmark duration expired";
      }
      return out;
    }
    apply_idle_caps(t);
    // Every due timer, earliest first.
    auto it = std::partition(timers_.begin(), timers_.end(), [&](const PendingTimer& x) { return x.at > t; });
    std::vector<PendingTimer> due(it, timers_.end());
    timers_.erase(it, timers_.end());
    std::sort(due.begin(), due.end(), [](const PendingTimer& a, const PendingTimer& b) { return a.at < b.at; });
    for (const auto& d : due) out.push_back(make_dispatch(d, t));
    // Children spawned by those sends: schedule their first calls.
    for (Play* p : spawned_on_send_)
      if (!p->ended) evaluate(*p, t);
    spawned_on_send_.clear();
    if (!out.empty()) return out;
    if (mode_ == Mode::profiling && in_flight_ == 0 && timers_.empty()) {
      // Every lane is waiting on a dependency that can never be met (a
      // trace whose joins and barriers contradict each other): release the
      // waiting turns rather than end the run.
      if (break_deadlocks(t)) continue;
      stop_sending("replay stalled: no request can be sent (no lanes left)");
      finished_ = true;
    }
    return out;
  }
}

double ReplayScheduler::next_wakeup() const {
  if (finished_) return kNever;
  double next = sending_done_ ? grace_deadline_ : mode_ == Mode::profiling ? send_deadline_ : cfg_.warmup_grace_s;
  if (!sending_done_)
    for (const auto& x : timers_) next = std::min(next, x.at);
  return next;
}

void ReplayScheduler::complete(const Dispatch& d, RequestRecord rec, double t) {
  Play* p = d.play;
  const int s = d.stream;
  auto& ss = p->st[static_cast<std::size_t>(s)];
  const auto& stream = p->tree.streams[static_cast<std::size_t>(s)];
  const auto& turn = stream.turns[static_cast<std::size_t>(d.turn)];
  --in_flight_;
  --p->in_flight;
  counters_.in_flight--;
  counters_.done++;
  if (!rec.ok()) counters_.errors++;
  counters_.output_tokens += rec.usage_completion_tokens.value_or(rec.content_events);
  if (in_flight_ == 0) system_idle_since_ = t;
  if (p->in_flight == 0) p->idle_since = t;
  const bool overflow = rec.error && is_context_overflow_error(*rec.error);  // metrics/export.h: AIPerf's list
  if (overflow) ++result_.context_overflow_errors;
  if (!d.one_token) {
    // The live failed-request threshold: profiling records only; a context
    // overflow is not an error here (AIPerf gates overflows separately, by
    // their own rate); armed after max(concurrency, 10) records.
    ++profiled_done_;
    if (!rec.ok() && !overflow) ++profiled_errors_;
    const std::int64_t arm_after = std::max<std::int64_t>(cfg_.lanes, 10);
    if (cfg_.failed_request_threshold < 1.0 && profiled_done_ >= arm_after && result_.abort_reason.empty() &&
        static_cast<double>(profiled_errors_) / static_cast<double>(profiled_done_) > cfg_.failed_request_threshold)
      stop_sending("error rate " + std::to_string(profiled_errors_) + "/" + std::to_string(profiled_done_) +
                   " exceeded --failed-request-threshold");
  }
  const bool failed = !rec.ok();
  std::string failure = failed ? rec.error->message : std::string();
  const bool cancelled_by_us = failed && cancel_reason_.has_value() && rec.error->code == 499;
  if (cfg_.sink) cfg_.sink->on_record(rec);
  result_.run.records.push_back(std::move(rec));
  if (d.primer) {
    // The primer's turn is history: the stream's next turn counts its delay
    // from here.
    ss.ready_base = t;
    --primers_left_;
    // AIPerf's record_warmup_failure: a primer (root or subagent) that ends
    // in a context overflow drops its trace's lanes; any other failure aborts
    // the run at once, without waiting for the rest of warmup. A primer we
    // cancelled ourselves (the warmup grace period ran out) is not one.
    if (failed && result_.abort_reason.empty() && !p->dropped) {
      if (overflow) {
        drop_trace_lanes(p->trace->id);
      } else if (!cancelled_by_us) {
        stop_sending("warmup failed: the primer of " + stream.conversation_id + " turn " + std::to_string(d.turn) +
                     " failed: " + failure);
        grace_deadline_ = t;  // cancel the rest of warmup now
      }
    }
    if (primers_left_ <= 0 && mode_ == Mode::primers && !sending_done_) start_pressure(t);
    return;
  }
  ss.in_flight = false;
  // Errors advance the session as a completion would (AIPerf); a context
  // overflow ends the trajectory.
  p->done[static_cast<std::size_t>(s)][static_cast<std::size_t>(ss.next)] = 1;
  for (int c : turn.spawns) {
    p->st[static_cast<std::size_t>(c)].spawned = true;
    p->st[static_cast<std::size_t>(c)].ready_base = t;
  }
  ++ss.next;
  ss.ready_base = t;
  if (ss.next >= static_cast<int>(stream.turns.size())) ss.finished = true;
  if (overflow && cfg_.context_overflow_ends_play && !p->ended) end_play_early(*p, t);
  else if (!sending_done_) evaluate(*p, t);
}

}  // namespace agentperf::replay
