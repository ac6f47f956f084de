#include "replay/replay_runner.h"

#include <openssl/sha.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/asio_aliases.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/run_control.h"
#include "metrics/progress.h"
#include "load/request_builder.h"
#include "net/http_client.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/exact_text.h"
#include "trace/prompt_builder.h"
#include "trace/session_tree.h"

namespace agentperf::replay {
using namespace aio;

std::string cache_bust_marker(const std::string& benchmark_id, std::int64_t pass, int lane, const std::string& trace_id) {
  const std::string key = benchmark_id + ":" + std::to_string(pass) + ":" + std::to_string(lane) + ":" + trace_id;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), digest);
  static const char* hex = "0123456789abcdef";
  std::string h;
  for (int i = 0; i < 6; ++i) {
    h += hex[digest[i] >> 4];
    h += hex[digest[i] & 15];
  }
  return "[rid:" + h + "]";
}

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

bool is_context_overflow(const ErrorInfo& e) {
  std::string m = e.message;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return m.find("context length") != std::string::npos || m.find("maximum context") != std::string::npos ||
         m.find("context window") != std::string::npos;
}

struct StreamState {
  int next = 0;
  bool spawned = false, finished = false, in_flight = false, scheduled = false;
  double ready_base = 0;  // when the current delay started counting
};

struct Play {
  const trace::WekaTrace* trace = nullptr;
  trace::SessionTree tree;
  std::unique_ptr<trace::PromptBuilder> builder;
  int lane = 0;
  std::int64_t index = 0, pass = 0;
  std::string root_id;
  std::shared_ptr<const std::string> marker_piece;
  std::int64_t marker_tokens = 0;
  std::vector<StreamState> st;
  std::vector<std::vector<char>> done;
  int in_flight = 0;
  double idle_since = 0;
  bool ended = false;
};

struct Primer {
  Play* play;
  int stream, turn;
  double lead_s;  // recorded time from the primer's start to t*
};

struct PendingTimer {
  double at;
  Play* play;
  int stream;
  int primer_turn = -1;  // >= 0: a warmup primer for that (history) turn
};

enum class Mode { primers, pressure, profiling };

class Runner {
 public:
  Runner(const ReplayConfig& cfg, const std::vector<trace::WekaTrace>& traces, std::string model)
      : cfg_(cfg), traces_(traces), model_(std::move(model)), url_(net::parse_url(cfg.client.url)),
        client_(io_, url_, client_options(cfg.client)), wake_(io_), progress_(cfg.output.quiet, cfg.output.progress_interval_s) {
    if (traces_.empty()) throw UserError("replay: no traces to play");
    client_.resolve();
    if (!cfg.client.tokenizer_path.empty()) {
      tok_ = std::make_shared<const tokenizer::BpeTokenizer>(tokenizer::BpeTokenizer::from_file(cfg.client.tokenizer_path));
      exact_ = std::make_shared<const tokenizer::ExactTextBuilder>(*tok_);
    }
    text_ = !cfg.client.uses_token_ids();
    if (text_ && !exact_)
      throw UserError("replay with text prompts (chat) needs --tokenizer so block text has exact token counts; "
                      "or use --endpoint-type completions (token-id prompts)");
    path_ = net::join_path(url_.path, cfg.client.endpoint_path());
    nlohmann::json fixed = nlohmann::json::object();
    fixed["model"] = model_;
    fixed["stream"] = true;
    fixed["stream_options"] = {{"include_usage", true}};
    fixed["ignore_eos"] = true;
    for (const auto& [k, v] : cfg.client.extra_inputs) fixed[k] = nlohmann::json::parse(v);
    const std::string d = fixed.dump();
    fixed_fields_ = d.substr(1, d.size() - 2);
  }

  ReplayResult run() {
    start_ns_ = monotonic_ns();
    counters_.phase_start_ns = start_ns_;
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
    co_spawn(io_, scheduler(), failure_guard());
    io_.run();
    if (!failure_.empty()) {
      // The loop was stopped by a failed coroutine: the run ends as failed,
      // naming the cause (records already finished are kept and on disk).
      result_.abort_reason = result_.abort_reason.empty() ? failure_ : result_.abort_reason + "; " + failure_;
    }
    progress_.finish(counters_, Phase::profiling);
    std::sort(result_.run.records.begin(), result_.run.records.end(),
              [](const RequestRecord& a, const RequestRecord& b) { return a.start_ns < b.start_ns; });
    result_.run.profiling_end_ns = monotonic_ns();
    result_.run.abort_reason = result_.abort_reason;
    const auto& s = client_.stats();
    result_.run.client = {s.connects, s.connect_failures, s.reused, s.stale_dropped, s.retries};
    return std::move(result_);
  }

  LiveCounters& counters() { return counters_; }

 private:
  double now() const { return static_cast<double>(monotonic_ns() - start_ns_) / 1e9; }

  void begin_profiling(double t) {
    mode_ = Mode::profiling;
    counters_.phase = 1;
    profile_start_ = t;
    send_deadline_ = t + cfg_.duration_s;
    grace_deadline_ = send_deadline_ + cfg_.grace_s;
    result_.run.profiling_start_ns = start_ns_ + static_cast<std::int64_t>(t * 1e9);
  }

  void schedule_primers() {
    double max_lead = 0;
    for (const auto& pr : primers_) max_lead = std::max(max_lead, pr.lead_s);
    const double scale = max_lead > cfg_.warmup_spread_s ? cfg_.warmup_spread_s / max_lead : 1.0;
    primers_left_ = static_cast<std::int64_t>(primers_.size());
    // Spread: a primer that led t* by L goes out L (scaled) before the common instant.
    for (const auto& pr : primers_) timers_.push_back({(max_lead - pr.lead_s) * scale, pr.play, pr.stream, pr.turn});
    primers_.clear();
    if (primers_left_ == 0) start_pressure(0.0);
  }

  void start_pressure(double t) {
    mode_ = Mode::pressure;
    for (auto& lp : lanes_)
      if (lp) evaluate(*lp, t);
  }

  // Profiling resumes every stream at its next turn; the delay counts from
  // its last completion, so what is left of it is the residual.
  void handoff(double t) {
    begin_profiling(t);
    timers_.clear();
    for (auto& lp : lanes_) {
      if (!lp) continue;
      for (auto& ss : lp->st) ss.scheduled = false;
      evaluate(*lp, t);
    }
  }

  // Cuts a tree at t*: turns recorded before it are history (done).
  void snapshot(Play& p, int lane) {
    const auto& tree = p.tree;
    Rng rng(mix_seed(cfg_.seed, seed_of(p.trace->id), static_cast<std::uint64_t>(lane)));
    const double ratio = cfg_.t_star_min + (cfg_.t_star_max - cfg_.t_star_min) * rng.uniform();
    const double t_star = tree.t_begin + ratio * (tree.t_end - tree.t_begin);
    for (std::size_t s = 0; s < tree.streams.size(); ++s) {
      const auto& turns = tree.streams[s].turns;
      int before = 0;
      while (before < static_cast<int>(turns.size()) && turns[static_cast<std::size_t>(before)].call->t < t_star) {
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
        primers_.push_back({&p, static_cast<int>(s), k, t_star - stream.turns[static_cast<std::size_t>(k)].call->t});
      }
    }
  }

  void start_play(int lane, double t, bool cut_at_t_star = false) {
    if (sending_done_) return;
    auto p = std::make_unique<Play>();
    const std::size_t ti = static_cast<std::size_t>(next_trace_++ % static_cast<std::int64_t>(traces_.size()));
    p->trace = &traces_[ti];
    p->tree = trace::build_session_tree(*p->trace);
    p->builder = std::make_unique<trace::PromptBuilder>(*p->trace, cfg_.seed, exact_, cfg_.token_ids);
    p->lane = lane;
    p->index = result_.plays_started++;
    p->pass = passes_[p->trace->id]++;
    p->root_id = p->trace->id + "#" + std::to_string(p->index);
    if (cfg_.cache_bust) {
      const std::string marker = cache_bust_marker(cfg_.benchmark_id, p->pass, lane, p->trace->id);
      if (text_) {
        p->marker_piece = std::make_shared<const std::string>(marker + "\\n\\n");
        p->marker_tokens = static_cast<std::int64_t>(tok_->count(marker + "\n\n"));
      } else {
        // Six token ids from the marker's hex digits.
        std::string s;
        for (int i = 0; i < 6; ++i) s += std::to_string(cfg_.token_ids.marker_base + std::stoi(marker.substr(5 + 2 * static_cast<std::size_t>(i), 2), nullptr, 16)) + ",";
        p->marker_piece = std::make_shared<const std::string>(s);
        p->marker_tokens = 6;
      }
    }
    p->st.assign(p->tree.streams.size(), StreamState{});
    p->done.resize(p->tree.streams.size());
    for (std::size_t s = 0; s < p->tree.streams.size(); ++s) p->done[s].assign(p->tree.streams[s].turns.size(), 0);
    p->st[0].spawned = true;
    p->st[0].ready_base = t;
    p->idle_since = t;
    if (cut_at_t_star) snapshot(*p, lane);
    for (const auto& s : p->tree.streams)
      for (const auto& turn : s.turns) {
        result_.theoretical_hit_blocks += turn.theoretical_hit_blocks;
        result_.theoretical_total_blocks += static_cast<std::int64_t>(turn.call->hash_ids.size());
      }
    Play* raw = p.get();
    if (static_cast<std::size_t>(lane) >= lanes_.size()) lanes_.resize(static_cast<std::size_t>(lane) + 1);
    // The finished play may still be on the call stack: free it at the
    // scheduler's next turn, not here.
    if (lanes_[static_cast<std::size_t>(lane)]) retired_.push_back(std::move(lanes_[static_cast<std::size_t>(lane)]));
    lanes_[static_cast<std::size_t>(lane)] = std::move(p);
    if (!cut_at_t_star) evaluate(*raw, t);
  }

  bool deps_met(const Play& p, int s) const {
    const auto& turn = p.tree.streams[static_cast<std::size_t>(s)].turns[static_cast<std::size_t>(p.st[static_cast<std::size_t>(s)].next)];
    for (int c : turn.joins)
      if (!p.st[static_cast<std::size_t>(c)].finished) return false;
    for (const auto& b : turn.barriers)
      if (!p.done[static_cast<std::size_t>(b.stream)][static_cast<std::size_t>(b.turn)]) return false;
    return true;
  }

  // Schedules every stream of the play whose next turn can now start.
  void evaluate(Play& p, double t) {
    if (mode_ == Mode::primers) return;  // primers first; the rest waits for them
    bool all_finished = true;
    int& quota = lane_quota_[static_cast<std::size_t>(p.lane)];
    for (std::size_t s = 0; s < p.st.size(); ++s) {
      auto& ss = p.st[s];
      if (!ss.finished) all_finished = false;
      if (!ss.spawned || ss.finished || ss.in_flight || ss.scheduled) continue;
      if (!deps_met(p, static_cast<int>(s))) continue;
      if (mode_ == Mode::pressure && quota <= 0) continue;
      const auto& turn = p.tree.streams[s].turns[static_cast<std::size_t>(ss.next)];
      // The end-to-start delay counts from the previous completion (or the
      // spawn); a dependency met later holds the turn until then. Warmup
      // pressure requests go with no delay.
      const double at = mode_ == Mode::pressure ? t : std::max(ss.ready_base + turn.start_delay_s, t);
      if (mode_ == Mode::pressure) --quota;
      ss.scheduled = true;
      timers_.push_back({at, &p, static_cast<int>(s)});
    }
    if (all_finished && !p.ended) {
      p.ended = true;
      ++result_.plays_finished;
      start_play(p.lane, t);  // recycle: the next trace from turn 0
    }
  }

  bool break_deadlocks(double t) {
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

  void end_play_early(Play& p, double t) {
    // Context overflow: the trajectory stops; drop its timers and recycle
    // once its in-flight requests are back.
    for (auto& s : p.st) s.finished = true;
    timers_.erase(std::remove_if(timers_.begin(), timers_.end(), [&](const PendingTimer& x) { return x.play == &p; }),
                  timers_.end());
    ++result_.overflow_terminations;
    if (p.in_flight == 0) evaluate(p, t);
  }

  void apply_idle_caps(double t) {
    if (timers_.empty() || mode_ == Mode::primers) return;  // the primer spread is deliberate
    // Per tree: nothing in flight for longer than the cap.
    for (auto& lp : lanes_) {
      Play* p = lp.get();
      if (!p || p->in_flight > 0 || p->ended) continue;
      double earliest = kNever;
      for (const auto& x : timers_)
        if (x.play == p) earliest = std::min(earliest, x.at);
      if (earliest == kNever) continue;
      const double limit = p->idle_since + cfg_.tree_idle_cap_s;
      if (earliest > limit) {
        const double shift = earliest - limit;
        for (auto& x : timers_)
          if (x.play == p) x.at -= shift;
        result_.idle_skipped_s += shift;
      }
    }
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

  net::HttpRequest build_request(Play& p, int s, int k, const trace::Turn& turn, RequestRecord& rec, bool one_token) {
    const trace::TurnRef ref{s, k};
    trace::PromptPieces pieces = p.builder->build(*turn.call, ref);
    const std::int64_t bs = p.trace->block_size;
    const auto system_blocks = static_cast<std::size_t>((p.trace->tool_tokens + p.trace->system_tokens + bs - 1) / bs);
    net::HttpRequest req;
    req.path = path_;
    req.headers.emplace_back("X-Request-ID", rec.x_request_id);
    req.headers.emplace_back("X-Correlation-ID", rec.x_correlation_id);
    if (cfg_.routing_headers) {
      // Routers keep a tree on one backend by the root key, subagents included.
      req.headers.emplace_back("X-SMG-Routing-Key", rec.root_correlation_id);
      req.headers.emplace_back("X-Session-ID", rec.x_correlation_id);
    }
    if (!cfg_.client.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + cfg_.client.api_key);
    for (const auto& h : cfg_.client.headers) req.headers.push_back(h);
    const std::int64_t max_tokens = one_token ? 1 : std::max<std::int64_t>(1, turn.call->out);
    std::string head = "{" + fixed_fields_ + ",\"max_tokens\":" + std::to_string(max_tokens);
    head += text_ ? ",\"messages\":[" : ",\"prompt\":[";
    req.body.push_back(std::make_shared<const std::string>(std::move(head)));
    if (text_) {
      // System / user / assistant messages over the shared block pieces; the
      // marker opens the first user message.
      const auto& stream = p.tree.streams[static_cast<std::size_t>(s)];
      const auto spans = trace::segment_messages(stream, k, *p.trace, pieces.pieces.size());
      bool marked = false;
      for (std::size_t m = 0; m < spans.size(); ++m) {
        const std::string_view role = spans[m].role;
        req.body.push_back(role == "system" ? open_system_ : role == "assistant" ? open_assistant_ : open_user_);
        if (role == "user" && !marked && p.marker_piece) {
          req.body.push_back(p.marker_piece);
          marked = true;
        }
        for (std::size_t i = 0; i < spans[m].pieces; ++i) req.body.push_back(pieces.pieces[spans[m].first_piece + i]);
        req.body.push_back(m + 1 < spans.size() ? close_message_ : close_messages_);
      }
    } else {
      // The marker goes after the system blocks, never last (the last piece
      // closes the token list).
      const std::size_t at = p.marker_piece ? std::min(system_blocks, pieces.pieces.size() - 1) : pieces.pieces.size();
      for (std::size_t i = 0; i < pieces.pieces.size(); ++i) {
        if (i == at) req.body.push_back(p.marker_piece);
        req.body.push_back(pieces.pieces[i]);
      }
      req.body.push_back(close_ids_);
    }
    rec.requested_isl = static_cast<int>(pieces.tokens + (p.marker_piece ? p.marker_tokens : 0));
    rec.requested_osl = static_cast<int>(max_tokens);
    rec.prompt_exact = true;
    return req;
  }

  asio::awaitable<void> send_turn(Play* p, int s, int primer_turn) {
    auto& ss = p->st[static_cast<std::size_t>(s)];
    const auto& stream = p->tree.streams[static_cast<std::size_t>(s)];
    const bool primer = primer_turn >= 0;
    const int k = primer ? primer_turn : ss.next;
    const auto& turn = stream.turns[static_cast<std::size_t>(k)];
    const bool warm = primer || mode_ == Mode::pressure;
    if (primer) ++result_.warmup_primers;
    else if (warm) ++result_.warmup_pressure;
    RequestRecord rec;
    rec.request_index = static_cast<std::uint64_t>(next_request_++);
    rec.phase = warm ? Phase::warmup : Phase::profiling;
    rec.session_num = p->index;
    rec.worker_id = p->lane;  // the lane: the report draws one row per lane
    rec.conversation_id = stream.conversation_id;
    rec.root_correlation_id = p->root_id;
    rec.turn_index = k;
    rec.x_request_id = make_id(rec.request_index);
    rec.x_correlation_id = stream.conversation_id + "#" + std::to_string(p->index);
    rec.capture_text = tok_ != nullptr;
    auto req = build_request(*p, s, k, turn, rec, warm);
    rec.credit_issued_ns = monotonic_ns();
    rec.scheduled_ns = rec.credit_issued_ns;
    counters_.sent++;
    counters_.in_flight++;
    net::InFlight inflight;
    inflight_set_.push_back(&inflight);
    co_await client_.send(req, rec, &inflight);
    inflight_set_.erase(std::find(inflight_set_.begin(), inflight_set_.end(), &inflight));
    if (tok_ && rec.ok() && !rec.usage_completion_tokens)
      rec.client_output_tokens = static_cast<std::int64_t>(tok_->count(rec.output_text));
    std::string().swap(rec.output_text);
    const double t = now();
    --in_flight_;
    --p->in_flight;
    counters_.in_flight--;
    counters_.done++;
    if (!rec.ok()) counters_.errors++;
    counters_.output_tokens += rec.usage_completion_tokens.value_or(rec.content_events);
    if (in_flight_ == 0) system_idle_since_ = t;
    if (p->in_flight == 0) p->idle_since = t;
    const bool overflow = rec.error && is_context_overflow(*rec.error);
    if (overflow) ++result_.context_overflow_errors;
    if (!primer && !warm) {
      ++profiled_done_;
      if (!rec.ok()) ++profiled_errors_;
      if (cfg_.failed_request_threshold < 1.0 && profiled_done_ >= 10 && result_.abort_reason.empty() &&
          static_cast<double>(profiled_errors_) / static_cast<double>(profiled_done_) > cfg_.failed_request_threshold) {
        result_.abort_reason = "error rate " + std::to_string(profiled_errors_) + "/" + std::to_string(profiled_done_) +
                               " exceeded --failed-request-threshold";
        sending_done_ = true;
        timers_.clear();
      }
    }
    const bool failed = !rec.ok();
    std::string failure = failed ? rec.error->message : std::string();
    if (cfg_.sink) cfg_.sink->on_record(rec);
    result_.run.records.push_back(std::move(rec));
    if (primer) {
      // The primer's turn is history: the stream's next turn counts its
      // delay from here.
      ss.ready_base = t;
      if (failed && s == 0 && result_.abort_reason.empty()) {
        result_.abort_reason = "warmup failed: the root primer of trace " + p->trace->id + " failed: " + failure;
        sending_done_ = true;
        timers_.clear();
      }
      if (--primers_left_ == 0 && !sending_done_) start_pressure(t);
      wake_.cancel();
      co_return;
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
    wake_.cancel();
  }

  // Completion of the scheduler and of each request coroutine: an exception
  // (out of memory building a prompt, a bug) stops the loop with its cause
  // instead of vanishing into asio::detached and leaving the run hanging.
  std::function<void(std::exception_ptr)> failure_guard() {
    return [this](std::exception_ptr e) {
      if (!e || !failure_.empty()) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::bad_alloc&) {
        failure_ = "replay failed: out of memory (std::bad_alloc)";
      } catch (const std::exception& ex) {
        failure_ = std::string("replay failed: ") + ex.what();
      } catch (...) {
        failure_ = "replay failed: unknown exception";
      }
      for (auto* f : inflight_set_) f->cancel("cancelled: " + failure_);
      io_.stop();
    };
  }

  // X-Request-ID: salted with the per-run benchmark id, so ids never repeat
  // across runs (prompts stay seeded).
  std::string make_id(std::uint64_t i) const {
    const std::uint64_t salt = mix_seed(cfg_.seed, seed_of(cfg_.benchmark_id));
    return make_request_id(mix_seed(salt, 0x4E9, i), mix_seed(salt, 0x4EA, i));
  }

  asio::awaitable<void> scheduler() {
    for (;;) {
      retired_.clear();
      const double t = now();
      if (cfg_.stop && cfg_.stop->requested() && result_.abort_reason.empty()) {
        result_.abort_reason = cfg_.stop->reason();
        sending_done_ = true;
        timers_.clear();
        grace_deadline_ = t;  // cancel what is in flight now
      }
      if (stop_requested() && result_.abort_reason.empty()) {
        // SIGINT/SIGTERM: no new requests; those in flight get the grace
        // period, are counted, then cancelled; the outputs are written as
        // partial (common/run_control.h).
        result_.abort_reason = stop_reason();
        result_.run.interrupted = true;
        result_.run.stop_signal = stop_signal();
        sending_done_ = true;
        timers_.clear();
        grace_deadline_ = std::min(grace_deadline_, t + cfg_.grace_s);
        if (!cfg_.output.quiet && in_flight_ > 0)
          std::fprintf(stderr, "\nagentperf: %s: sending stopped; waiting up to %.3g s for %d requests in flight "
                               "(a second signal exits at once)\n",
                       result_.abort_reason.c_str(), cfg_.grace_s, in_flight_);
      }
      progress_.maybe_print(counters_, mode_ == Mode::profiling ? Phase::profiling : Phase::warmup, std::nullopt,
                            start_ns_ + static_cast<std::int64_t>(profile_start_ * 1e9),
                            start_ns_ + static_cast<std::int64_t>(send_deadline_ * 1e9));
      if (mode_ != Mode::profiling && !sending_done_) {
        if (mode_ == Mode::pressure && in_flight_ == 0 && timers_.empty()) {
          handoff(t);
          continue;
        }
        if (t >= cfg_.warmup_grace_s) {
          // Warmup ran past its grace: cancel what is left of it and profile.
          auto copy = inflight_set_;
          for (auto* f : copy) f->cancel("cancelled: the warmup grace period expired");
          while (in_flight_ > 0) {
            wake_.expires_after(std::chrono::milliseconds(5));
            co_await wake_.async_wait(nothrow);
          }
          handoff(now());
          continue;
        }
      }
      if (mode_ == Mode::profiling && !sending_done_ && t >= send_deadline_) {
        sending_done_ = true;
        timers_.clear();
      }
      if (sending_done_) {
        if (in_flight_ == 0) co_return;
        if (t >= grace_deadline_) {
          auto copy = inflight_set_;
          for (auto* f : copy) f->cancel("cancelled: the grace period after the benchmark duration expired");
          // Wait for the cancelled requests to come back.
          while (in_flight_ > 0) {
            wake_.expires_after(std::chrono::milliseconds(5));
            co_await wake_.async_wait(nothrow);
          }
          co_return;
        }
      } else {
        apply_idle_caps(t);
        // Fire every due timer.
        std::vector<PendingTimer> due;
        auto it = std::partition(timers_.begin(), timers_.end(), [&](const PendingTimer& x) { return x.at > t; });
        due.assign(it, timers_.end());
        timers_.erase(it, timers_.end());
        std::sort(due.begin(), due.end(), [](const PendingTimer& a, const PendingTimer& b) { return a.at < b.at; });
        for (const auto& d : due) {
          auto& ss = d.play->st[static_cast<std::size_t>(d.stream)];
          ss.scheduled = false;
          // Counted as in flight from here: the coroutine starts later, and
          // the loop must not see an idle system in between.
          if (d.primer_turn < 0) ss.in_flight = true;
          ++d.play->in_flight;
          ++in_flight_;
          co_spawn(io_, send_turn(d.play, d.stream, d.primer_turn), failure_guard());
        }
        if (!due.empty()) continue;
      }
      double next = sending_done_ ? grace_deadline_ : mode_ == Mode::profiling ? send_deadline_ : cfg_.warmup_grace_s;
      for (const auto& x : timers_) next = std::min(next, x.at);
      if (mode_ == Mode::profiling && !sending_done_ && in_flight_ == 0 && timers_.empty()) {
        // Every lane is waiting on a dependency that can never be met (a
        // trace whose joins and barriers contradict each other): release
        // the waiting turns rather than end the run.
        if (break_deadlocks(t)) continue;
        result_.abort_reason = "replay stalled: no request can be sent (no lanes left)";
        sending_done_ = true;
        co_return;
      }
      // Poll stop requests (signals, a sweep's StopSignal) at least every 0.25 s.
      double wait = std::max(0.0, std::min({next - t, cfg_.output.progress_interval_s, 0.25}));
      wake_.expires_after(std::chrono::nanoseconds(static_cast<std::int64_t>(wait * 1e9)));
      co_await wake_.async_wait(nothrow);
    }
  }

  const ReplayConfig& cfg_;
  const std::vector<trace::WekaTrace>& traces_;
  std::string model_;
  net::Url url_;
  asio::io_context io_{1};
  net::HttpClient client_;
  asio::steady_timer wake_;
  ProgressPrinter progress_;
  LiveCounters counters_;
  std::shared_ptr<const tokenizer::BpeTokenizer> tok_;
  std::shared_ptr<const tokenizer::ExactTextBuilder> exact_;
  bool text_ = false;
  std::string path_, fixed_fields_;
  std::shared_ptr<const std::string> close_ids_ = std::make_shared<const std::string>("]}");
  std::shared_ptr<const std::string> open_system_ = std::make_shared<const std::string>("{\"role\":\"system\",\"content\":\"");
  std::shared_ptr<const std::string> open_user_ = std::make_shared<const std::string>("{\"role\":\"user\",\"content\":\"");
  std::shared_ptr<const std::string> open_assistant_ = std::make_shared<const std::string>("{\"role\":\"assistant\",\"content\":\"");
  std::shared_ptr<const std::string> close_message_ = std::make_shared<const std::string>("\"},");
  std::shared_ptr<const std::string> close_messages_ = std::make_shared<const std::string>("\"}]}");
  std::vector<std::unique_ptr<Play>> lanes_;
  std::vector<std::unique_ptr<Play>> retired_;
  std::vector<PendingTimer> timers_;
  std::vector<net::InFlight*> inflight_set_;
  std::string failure_;
  std::unordered_map<std::string, std::int64_t> passes_;
  std::int64_t next_trace_ = 0, next_request_ = 0;
  int in_flight_ = 0;
  double system_idle_since_ = 0;
  std::int64_t start_ns_ = 0;
  double send_deadline_ = kNever, grace_deadline_ = kNever, profile_start_ = 0;
  Mode mode_ = Mode::profiling;
  std::vector<Primer> primers_;
  std::int64_t primers_left_ = 0;
  std::vector<int> lane_quota_;
  std::int64_t profiled_done_ = 0, profiled_errors_ = 0;
  bool sending_done_ = false;
  ReplayResult result_;
};

}  // namespace

ReplayResult run_replay(const ReplayConfig& cfg, const std::vector<trace::WekaTrace>& traces, const std::string& model) {
  if (cfg.lanes < 1) throw UserError("--lanes must be at least 1");
  if (cfg.duration_s <= 0) throw UserError("--duration must be > 0 seconds");
  Runner r(cfg, traces, model);
  return r.run();
}

}  // namespace agentperf::replay
