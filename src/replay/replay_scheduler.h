// The AgentX replay schedule, apart from any transport or clock: which turn
// of which session tree goes out when, and what a completion unlocks. It
// knows nothing of sockets, wall clocks or the simulator. A driver tells it
// the time and each completion, and it answers with the turns to send now
// and the next time it wants to be asked (replay_runner.h states the rules
// it plays by and their sources).
//
// Two drivers use it, so a prediction and a measurement follow one rule
// book: the HTTP driver (replay_runner.cpp: Asio, real time, one HttpClient)
// and the virtual-time driver (virtual_replay.h: sim::VirtualClient over
// sim::Engine). Both hand every finished record back through complete(),
// which keeps the records, the counters and the gates (failed-request
// threshold, failed warmup primers, context overflows) in one place.
//
// The loop a driver runs:
//   sched.start();
//   for (;;) {
//     for (auto& d : sched.poll(now)) send(d);        // due turns, counted in flight
//     if (auto why = sched.cancel_reason()) cancel everything in flight (why);
//     if (sched.finished()) break;
//     wait until sched.next_wakeup() or a completion; on one: sched.complete(d, rec, now);
//   }
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/run_result.h"
#include "replay/replay_runner.h"
#include "trace/prompt_builder.h"
#include "trace/session_tree.h"

namespace agentperf::replay {

struct StreamState {
  int next = 0;
  bool spawned = false, finished = false, in_flight = false, scheduled = false;
  double ready_base = 0;  // when the current delay started counting
  // Set by the warmup handoff: the time the stream's next turn is due on
  // the recorded clock (AIPerf's next_dispatch_offset_ms less the phase
  // minimum); negative when unset. Cleared once that turn is sent.
  double handoff_at = -1;
  // Warmup pressure: the stream's turns before this index are its share of
  // the lane's pressure quota (ReplayScheduler::plan_pressure).
  int pressure_end = 0;
};

// One session tree held by a lane, from its first turn (or t*) until every
// stream of it drains.
struct Play {
  const trace::WekaTrace* trace = nullptr;
  trace::SessionTree tree;
  std::unique_ptr<trace::PromptBuilder> builder;
  int lane = 0;
  std::int64_t index = 0, pass = 0;
  // The trajectory start t* in recorded milliseconds when the play was cut
  // at t* (NaN otherwise), and the origin of its recorded clock at the
  // warmup handoff: t*, or the root's turn-0 timestamp for a play started
  // from turn 0 (AIPerf's replay_origin_ms_by_root).
  double t_star_ms = std::numeric_limits<double>::quiet_NaN();
  double origin_ms = 0;
  // The cache-bust marker as the request carries it: text ("[rid:...]\n\n")
  // or token-id items ("a,b,...,"); and as token ids for the simulator.
  std::shared_ptr<const std::string> marker_piece;
  std::int64_t marker_tokens = 0;
  std::vector<std::int32_t> marker_ids;
  std::vector<StreamState> st;
  // Per stream: its X-Correlation-ID, a UUID v4 per stream instance (AIPerf
  // mints str(uuid.uuid4()) per session; ours derive from the seed, the
  // benchmark id, the play and the stream). Stream 0's is the tree's
  // root_correlation_id; a child's parent_correlation_id is its parent's.
  std::vector<std::string> correlation_ids;
  std::vector<std::vector<char>> done;
  int in_flight = 0;
  double idle_since = 0;
  bool ended = false;
  bool dropped = false;  // its trace overflowed the context in warmup: the lane plays no more
  // ReplayScheduler::apply_idle_caps' scratch: the play's earliest pending
  // timer and the shift its timers take, valid during one call.
  double idle_scratch_earliest = 0, idle_scratch_shift = 0;
};

// A turn to send now. `rec` carries the request's identity (index, phase,
// ids, lane, conversation, turn); the driver fills in the prompt sizes and
// the timings.
struct Dispatch {
  Play* play = nullptr;
  int stream = 0;
  int turn = 0;
  bool primer = false;     // a warmup primer: the turn before t*, one output token
  bool one_token = false;  // primers and pressure requests ask for max_tokens 1
  RequestRecord rec;
};

// How a driver writes the cache-bust marker into prompts.
struct MarkerEncoding {
  bool text = false;  // true: chat text, counted with a tokenizer
  // Tokens of a text marker (the driver's tokenizer); unused for token ids.
  std::function<std::int64_t(const std::string&)> count_text_tokens;
};

class ReplayScheduler {
 public:
  ReplayScheduler(const ReplayConfig& cfg, const std::vector<trace::WekaTrace>& traces, MarkerEncoding marker,
                  std::shared_ptr<const tokenizer::ExactTextBuilder> exact = nullptr);

  // Starts every lane at time 0 (cut at t* with warmup).
  void start();
  // Everything due at time t (seconds since start): stop requests,
  // deadlines, the warmup hand-off, idle caps, then the due turns, already
  // counted as in flight. Call it again after a batch of sends.
  std::vector<Dispatch> poll(double t);
  // A request ended at t: its record is kept (and streamed to cfg.sink),
  // the gates are applied and the turns it unlocks are scheduled.
  void complete(const Dispatch& d, RequestRecord rec, double t);

  // Set when the driver must cancel every request in flight now (the grace
  // period after --duration ran out, warmup ran past its grace, a stop).
  const std::optional<std::string>& cancel_reason() const { return cancel_reason_; }
  // Nothing left to send and nothing in flight: the run is over.
  bool finished() const { return finished_; }
  // The next time poll() has something to do (a timer or a deadline);
  // infinity when only completions can move the run on.
  double next_wakeup() const;
  int in_flight() const { return in_flight_; }
  bool profiling() const { return mode_ == Mode::profiling; }
  double profile_start() const { return profile_start_; }
  double send_deadline() const { return send_deadline_; }
  // For the warmup's progress line: its planned requests (primers plus each
  // lane's pressure quota; recycled trees may send fewer) and the time it
  // may take at most (--warmup-grace-period), both known once start() ran.
  std::int64_t warmup_planned() const { return warmup_primers_planned_ + warmup_pressure_planned_; }
  std::int64_t warmup_primers_planned() const { return warmup_primers_planned_; }
  std::int64_t warmup_pressure_planned() const { return warmup_pressure_planned_; }

  LiveCounters& counters() { return counters_; }
  // The result so far; take it once finished (records sorted by start).
  ReplayResult& result() { return result_; }

 private:
  enum class Mode { primers, pressure, profiling };
  struct Primer {
    Play* play;
    int stream, turn;
    double lead_ms;  // recorded time from the primer's start to t*, capped
  };
  struct PendingTimer {
    double at;
    Play* play;
    int stream;
    int primer_turn = -1;  // >= 0: a warmup primer for that (history) turn
  };

  void begin_profiling(double t);
  void schedule_primers();
  void start_pressure(double t);
  void plan_pressure(Play& p);
  int unused_pressure(const Play& p) const;
  void handoff(double t);
  void snapshot(Play& p, int lane);
  void start_play(int lane, double t, bool cut_at_t_star = false);
  bool deps_met(const Play& p, int s) const;
  void evaluate(Play& p, double t);
  bool break_deadlocks(double t);
  void end_play_early(Play& p, double t);
  void drop_trace_lanes(const std::string& trace_id);
  void apply_idle_caps(double t);
  void stop_sending(const std::string& reason);
  Dispatch make_dispatch(const PendingTimer& timer, double t);
  std::string make_id(std::uint64_t i) const;

  const ReplayConfig& cfg_;
  const std::vector<trace::WekaTrace>& traces_;
  MarkerEncoding marker_;
  std::shared_ptr<const tokenizer::ExactTextBuilder> exact_;
  LiveCounters counters_;
  std::vector<std::unique_ptr<Play>> lanes_;
  std::vector<std::unique_ptr<Play>> retired_;
  std::vector<PendingTimer> timers_;
  std::vector<Play*> spawned_on_send_;  // plays whose sends in this poll spawned children
  std::unordered_map<std::string, std::int64_t> passes_;
  std::int64_t next_trace_ = 0, next_request_ = 0;
  int in_flight_ = 0;
  double system_idle_since_ = 0;
  double send_deadline_, grace_deadline_, profile_start_ = 0;
  Mode mode_ = Mode::profiling;
  std::vector<Primer> primers_;
  std::int64_t primers_left_ = 0;
  std::int64_t warmup_primers_planned_ = 0, warmup_pressure_planned_ = 0;
  std::vector<int> lane_quota_;
  std::int64_t profiled_done_ = 0, profiled_errors_ = 0;
  bool sending_done_ = false;
  bool finished_ = false;
  std::optional<std::string> cancel_reason_;
  ReplayResult result_;
};

// The piece of a prompt of `pieces` pieces before which the play's
// cache-bust marker goes: after the stream's own system blocks
// (trace::Stream::system_blocks: where its first user message starts), never
// after the last piece (which closes a token-id list). Both drivers place it
// here, at the same place in every turn of a stream.
std::size_t marker_piece_index(const trace::Stream& stream, std::size_t pieces);


// AIPerf's TrajectorySource._trace_time_bounds: the min and max recorded
// request START time over every stream of the tree, in ms (t * 1000.0).
std::pair<double, double> trajectory_time_bounds_ms(const trace::SessionTree& tree);
// AIPerf's t* for the tree's trace played on `lane` (the lane version of
// the seed, _seed_for_trace_lane): default_rng(sha256("{seed}:{trace}:{lane}")
// [:8] big-endian).uniform(lo, hi) over the bounds above, lo/hi at the
// --trajectory-start-min/max-ratio shares of the span. In ms.
double trajectory_start_ms(const ReplayConfig& cfg, const trace::SessionTree& tree, int lane);

}  // namespace agentperf::replay
