// The client side of a virtual-time run: what the real HTTP client would
// see of the simulated engine, without sockets or sleeping.
//
// A request sent at virtual time t reaches the engine's scheduler at t +
// network delay + its turn at the engine's front end (HTTP, chat template,
// tokenising the whole prompt: sim/front_end_queue.h) and waits there for the next step boundary, as a request that arrives
// while a real engine is mid-step does. Each step runs whole once it has
// started (its batch is fixed at its start), and every chunk it streams, and
// every end, reaches the client one network delay after the step ends;
// chunks are grouped by the engine's stream_interval as SGLang's detokenizer
// forwards them. Records get the same fields the real client fills: start,
// ack, one content stamp per streamed chunk, end, the usage block with
// cached tokens, or a 400 for a prompt the engine rejects.
//
// Drivers (the synthetic predictor, the virtual-time replay) send requests
// and ask for the next event; events come back in time order.
#pragma once
#include <cstdint>
#include <limits>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/record.h"
#include "sim/engine.h"
#include "sim/front_end_queue.h"
#include "sim/stream_chunker.h"

namespace agentperf::sim {

class VirtualClient {
 public:
  static constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

  // wall_base_ns: the wall-clock time that virtual time 0 stands for (the
  // records' start_wall_ns).
  VirtualClient(Engine& engine, double network_delay_s, std::int64_t wall_base_ns);

  // Sends a request at virtual time at_ns. `rec` carries its identity and
  // requested sizes; the timings are set here. `spec.id` must be unique
  // among requests in flight; it comes back as Finished::id.
  void send(std::int64_t at_ns, RequestRecord rec, SimRequestSpec spec);
  // The decode side of disaggregated serving: the request reaches this
  // engine's scheduler at `reaches_ns` (when its KV transfer lands), past no
  // front end and no network delay of its own; the record's start is at_ns.
  void send_handoff(std::int64_t at_ns, std::int64_t reaches_ns, RequestRecord rec, SimRequestSpec spec);

  struct Finished {
    std::uint64_t id = 0;
    std::int64_t at_ns = 0;  // when the end reached the client
    RequestRecord rec;
  };

  // The earliest virtual time at which something happens: a step starts
  // or a finished request reaches the client. kNever when idle.
  std::int64_t next_event_ns() const;
  // Runs every step that starts at or before t and returns, in time order,
  // the requests whose end reached the client by t.
  std::vector<Finished> advance_to(std::int64_t t);
  // Ends every request in flight at t as cancelled (499). The engine does
  // not abort them (it has no abort); their later events are dropped.
  std::vector<Finished> cancel_all(std::int64_t t, const std::string& reason);

  std::size_t in_flight() const { return in_flight_.size(); }

  // Lockstep (sim/lockstep_group.h): the engine's steps are started by the
  // group of DP-attention ranks it belongs to, not by this client. From
  // join_lockstep() on, next_event_ns() and advance_to() only see the ends
  // on their way to the client; the group calls begin_step() on every rank
  // at one start, and end_step() with the common end.
  void join_lockstep() { lockstep_ = true; }
  // When this rank would have a step to run, its engine free: now (0) when
  // it has work, else its next arrival at the scheduler; kNever when idle.
  std::int64_t ready_at() const;
  // Delivers the arrivals by `start` to the scheduler; then whether this
  // rank would prefill if allowed (Engine::prefill_ready) and whether it is
  // mid-way through a chunked prefill.
  void deliver_until(std::int64_t start) { deliver_arrivals(start); }
  bool prefill_ready() const { return engine_.prefill_ready(); }
  bool mid_chunk() const { return engine_.mid_chunk(); }
  std::int64_t running_count() const { return engine_.running_count(); }
  std::int64_t max_running() const { return engine_.plan().max_running_requests; }
  const EngineConfig& engine_config() const { return engine_.config(); }
  void set_moe_peer_tokens(double tokens) { engine_.set_moe_peer_tokens(tokens); }
  // Tokens the rank's running requests put through a decode round (their
  // verify width each).
  double decode_tokens_per_step() const {
    const EngineConfig& c = engine_.config();
    return static_cast<double>(engine_.running_count()) * (c.spec.enabled ? c.spec.num_draft_tokens : 1);
  }
  // The rank's step under the group's gate; no work: an empty outcome.
  StepOutcome begin_step(std::int64_t start, StepGate gate = {});
  void end_step(std::int64_t start, std::int64_t end, const StepOutcome& out);

  // Where the time to each first token went, summed over the requests that
  // got one: the wait for a free front-end worker, its service (template,
  // tokenizing), the wait at the scheduler until the step that produced the
  // first token began (the running batch's steps, other prefills, earlier
  // chunks of its own), and that step. The network delay is the rest.
  struct TtftBreakdown {
    long long requests = 0;
    double front_end_wait_s = 0, front_end_s = 0, scheduler_wait_s = 0, first_step_s = 0, network_s = 0;
    TtftBreakdown& operator+=(const TtftBreakdown& o);
  };
  const TtftBreakdown& ttft_breakdown() const { return ttft_; }
  std::int64_t engine_free_at_ns() const { return engine_free_at_; }

 private:
  std::int64_t next_step_start() const;
  void deliver_arrivals(std::int64_t t);
  void run_step(std::int64_t start);
  bool lockstep_ = false;

  struct Open {
    RequestRecord rec;
    StreamChunker chunker;
  };
  using Arrival = std::pair<std::int64_t, std::uint64_t>;  // (arrival at the engine, id)
  struct Delivery {
    std::int64_t at_ns;
    std::uint64_t seq;  // ties keep the order the engine finished them in
    std::uint64_t id;
    bool operator>(const Delivery& o) const { return at_ns != o.at_ns ? at_ns > o.at_ns : seq > o.seq; }
  };

  Engine& engine_;
  std::int64_t delay_ns_;
  FrontEndQueue front_end_;
  std::int64_t wall_base_ns_;
  int stream_interval_;
  std::int64_t engine_free_at_ = 0;
  std::uint64_t delivery_seq_ = 0;
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> arrivals_;
  std::unordered_map<std::uint64_t, SimRequestSpec> on_the_wire_;
  std::unordered_map<std::uint64_t, Open> in_flight_;
  std::priority_queue<Delivery, std::vector<Delivery>, std::greater<>> deliveries_;
  std::unordered_map<std::uint64_t, RequestRecord> finished_;
  struct FrontEndTimes {
    std::int64_t reached = 0, started = 0, done = 0;  // at the server, at a worker, at the scheduler
  };
  std::unordered_map<std::uint64_t, FrontEndTimes> front_end_times_;
  TtftBreakdown ttft_;
};

}  // namespace agentperf::sim
