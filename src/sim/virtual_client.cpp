#include "sim/virtual_client.h"

#include <algorithm>

namespace agentperf::sim {

VirtualClient::VirtualClient(Engine& engine, double network_delay_s, std::int64_t wall_base_ns)
    : engine_(engine),
      delay_ns_(static_cast<std::int64_t>(network_delay_s * 1e9)),
      front_end_(engine.config().costs, engine.config().tokenizer_workers),
      wall_base_ns_(wall_base_ns),
      stream_interval_(engine.config().stream_interval) {}

void VirtualClient::send(std::int64_t at_ns, RequestRecord rec, SimRequestSpec spec) {
  rec.start_ns = at_ns;
  rec.ack_ns = at_ns;
  rec.start_wall_ns = wall_base_ns_ + at_ns;
  rec.streamed = true;
  rec.http_status = 200;
  const std::uint64_t id = spec.id;
  const std::int64_t size = spec.prompt ? static_cast<std::int64_t>(spec.prompt->size()) : 0;
  const std::int64_t prompt_tokens = spec.prompt_len > 0 ? std::min(spec.prompt_len, size) : size;
  const std::int64_t reached = at_ns + delay_ns_;
  const auto fe = front_end_.admit(reached, prompt_tokens);
  front_end_times_[id] = {reached, fe.start_ns, fe.done_ns};
  arrivals_.push({fe.done_ns, id});
  on_the_wire_.emplace(id, std::move(spec));
  in_flight_.emplace(id, Open{std::move(rec), StreamChunker(stream_interval_)});
}

void VirtualClient::send_handoff(std::int64_t at_ns, std::int64_t reaches_ns, RequestRecord rec, SimRequestSpec spec) {
  rec.start_ns = at_ns;
  rec.start_wall_ns = wall_base_ns_ + at_ns;
  rec.streamed = true;
  rec.http_status = 200;
  const std::uint64_t id = spec.id;
  arrivals_.push({reaches_ns, id});
  on_the_wire_.emplace(id, std::move(spec));
  in_flight_.emplace(id, Open{std::move(rec), StreamChunker(stream_interval_)});
}

std::int64_t VirtualClient::ready_at() const {
  if (engine_.has_work()) return 0;
  return arrivals_.empty() ? kNever : arrivals_.top().first;
}

std::int64_t VirtualClient::next_step_start() const {
  if (lockstep_) return kNever;  // the group starts this engine's steps
  if (engine_.has_work()) return engine_free_at_;
  if (!arrivals_.empty()) return std::max(engine_free_at_, arrivals_.top().first);
  return kNever;
}

std::int64_t VirtualClient::next_event_ns() const {
  const std::int64_t d = deliveries_.empty() ? kNever : deliveries_.top().at_ns;
  return std::min(d, next_step_start());
}

void VirtualClient::deliver_arrivals(std::int64_t t) {
  while (!arrivals_.empty() && arrivals_.top().first <= t) {
    auto it = on_the_wire_.find(arrivals_.top().second);
    arrivals_.pop();
    if (it == on_the_wire_.end()) continue;  // cancelled on the way
    engine_.submit(std::move(it->second));
    on_the_wire_.erase(it);
  }
}

void VirtualClient::run_step(std::int64_t start) {
  deliver_arrivals(start);
  if (!engine_.has_work()) {
    engine_free_at_ = std::max(engine_free_at_, start);
    return;
  }
  const StepOutcome out = engine_.step();
  // A step always moves time on, so a stuck engine cannot spin in place.
  end_step(start, start + std::max<std::int64_t>(1, static_cast<std::int64_t>(out.duration_s * 1e9)), out);
}

StepOutcome VirtualClient::begin_step(std::int64_t start, StepGate gate) {
  deliver_arrivals(start);
  if (!engine_.has_work()) return {};
  return engine_.step(gate);
}

void VirtualClient::end_step(std::int64_t start, std::int64_t end, const StepOutcome& out) {
  engine_free_at_ = std::max(engine_free_at_, end);
  const std::int64_t seen = end + delay_ns_;
  for (const TokenEvent& ev : out.events) {
    auto it = in_flight_.find(ev.id);
    if (it == in_flight_.end()) continue;  // cancelled
    auto& r = it->second.rec;
    if (ev.error) {
      r.error = ErrorInfo{400, "Bad Request", *ev.error};
    } else if (ev.new_tokens > 0) {
      if (ev.first && r.phase == Phase::profiling) {
        if (auto fe = front_end_times_.find(ev.id); fe != front_end_times_.end()) {
          const auto& t = fe->second;
          ttft_.requests += 1;
          ttft_.front_end_wait_s += static_cast<double>(t.started - t.reached) / 1e9;
          ttft_.front_end_s += static_cast<double>(t.done - t.started) / 1e9;
          ttft_.scheduler_wait_s += static_cast<double>(std::max<std::int64_t>(0, start - t.done)) / 1e9;
          ttft_.first_step_s += static_cast<double>(end - start) / 1e9;
          ttft_.network_s += 2.0 * static_cast<double>(delay_ns_) / 1e9;
        }
      }
      if (it->second.chunker.on_tokens(ev.new_tokens, ev.first, ev.finished) > 0) {
        r.content_ns.push_back(seen);
        ++r.content_events;
      }
    }
    if (!ev.finished) continue;
    front_end_times_.erase(ev.id);
    r.end_ns = seen;
    if (!r.error) {
      r.saw_done = true;
      r.usage_prompt_tokens = ev.prompt_tokens;
      r.usage_completion_tokens = ev.completion_tokens;
      r.usage_total_tokens = ev.prompt_tokens + ev.completion_tokens;
      r.usage_cached_tokens = ev.cached_tokens;
    }
    finished_.emplace(ev.id, std::move(r));
    in_flight_.erase(it);
    deliveries_.push({seen, delivery_seq_++, ev.id});
  }
}

VirtualClient::TtftBreakdown& VirtualClient::TtftBreakdown::operator+=(const TtftBreakdown& o) {
  requests += o.requests;
  front_end_wait_s += o.front_end_wait_s;
  front_end_s += o.front_end_s;
  scheduler_wait_s += o.scheduler_wait_s;
  first_step_s += o.first_step_s;
  network_s += o.network_s;
  return *this;
}

std::vector<VirtualClient::Finished> VirtualClient::advance_to(std::int64_t t) {
  for (std::int64_t s = next_step_start(); s <= t; s = next_step_start()) run_step(s);
  std::vector<Finished> out;
  while (!deliveries_.empty() && deliveries_.top().at_ns <= t) {
    const Delivery d = deliveries_.top();
    deliveries_.pop();
    auto it = finished_.find(d.id);
    out.push_back({d.id, d.at_ns, std::move(it->second)});
    finished_.erase(it);
  }
  return out;
}

std::vector<VirtualClient::Finished> VirtualClient::cancel_all(std::int64_t t, const std::string& reason) {
  std::vector<Finished> out;
  // Ends already on their way to the client arrive first.
  for (auto& f : advance_to(t)) out.push_back(std::move(f));
  for (auto& [id, open] : in_flight_) {
    auto& r = open.rec;
    r.error = ErrorInfo{499, "RequestCancelled", reason};
    r.was_cancelled = true;
    r.cancellation_ns = t;
    r.end_ns = t;
    out.push_back({id, t, std::move(r)});
    on_the_wire_.erase(id);
  }
  in_flight_.clear();
  front_end_times_.clear();
  // Ends the engine produced but that have not reached the client: cancelled too.
  while (!deliveries_.empty()) {
    const Delivery d = deliveries_.top();
    deliveries_.pop();
    auto it = finished_.find(d.id);
    auto& r = it->second;
    r.error = ErrorInfo{499, "RequestCancelled", reason};
    r.was_cancelled = true;
    r.cancellation_ns = t;
    r.end_ns = t;
    out.push_back({d.id, t, std::move(r)});
    finished_.erase(it);
  }
  std::sort(out.begin(), out.end(), [](const Finished& a, const Finished& b) { return a.at_ns < b.at_ns; });
  return out;
}

}  // namespace agentperf::sim
