#include "replay/virtual_replay.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <unordered_map>

#include "common/clock.h"
#include "replay/replay_scheduler.h"
#include "sim/virtual_client.h"

namespace agentperf::replay {
namespace {

// The prompt of a dispatched turn as the engine's token ids: the turn's
// blocks and tail, with the play's cache-bust marker after the system
// blocks (where the HTTP driver writes it into a token-id prompt).
std::shared_ptr<const std::vector<sim::Token>> prompt_ids(const Dispatch& d, std::int64_t& isl) {
  Play& p = *d.play;
  const auto& turn = p.tree.streams[static_cast<std::size_t>(d.stream)].turns[static_cast<std::size_t>(d.turn)];
  const trace::TraceCall& call = *turn.call;
  auto ids = std::make_shared<std::vector<sim::Token>>();
  p.builder->append_token_ids(call, trace::TurnRef{d.stream, d.turn}, *ids);
  if (!p.marker_ids.empty()) {
    const std::int64_t bs = p.trace->block_size;
    const auto system_blocks = (p.trace->tool_tokens + p.trace->system_tokens + bs - 1) / bs;
    const std::int64_t full = std::min(static_cast<std::int64_t>(call.hash_ids.size()), call.in / bs);
    const std::int64_t pieces = full + (call.in - full * bs > 0 ? 1 : 0);
    const std::int64_t at = std::max<std::int64_t>(0, std::min(system_blocks, pieces - 1)) * bs;
    ids->insert(ids->begin() + std::min<std::int64_t>(at, static_cast<std::int64_t>(ids->size())), p.marker_ids.begin(),
                p.marker_ids.end());
  }
  isl = static_cast<std::int64_t>(ids->size());
  return ids;
}

}  // namespace

VirtualReplayResult predict_replay(sim::Engine& engine, const ReplayConfig& cfg,
                                   const std::vector<trace::WekaTrace>& traces, const VirtualReplayOptions& opts) {
  const double cpu0 = process_cpu_seconds();
  ReplayScheduler sched(cfg, traces, MarkerEncoding{});  // token ids: the engine's input
  sim::VirtualClient client(engine, opts.network_delay_s, wall_ns());
  const auto spacing = static_cast<std::int64_t>(opts.burst_spacing_s * 1e9);
  std::unordered_map<std::uint64_t, Dispatch> open;  // by request index
  std::int64_t t = 0, client_free_at = 0;
  auto seconds = [](std::int64_t ns) { return static_cast<double>(ns) / 1e9; };

  sched.start();
  for (;;) {
    auto due = sched.poll(seconds(t));
    for (auto& d : due) {
      std::int64_t isl = 0;
      auto prompt = prompt_ids(d, isl);
      const auto& call = *d.play->tree.streams[static_cast<std::size_t>(d.stream)].turns[static_cast<std::size_t>(d.turn)].call;
      const int max_tokens = d.one_token ? 1 : static_cast<int>(std::max<std::int64_t>(1, call.out));
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
      client.send(send_at, std::move(rec), sim::SimRequestSpec{id, std::move(prompt), max_tokens, isl});
      open.emplace(id, std::move(d));
    }
    if (!due.empty()) continue;
    if (sched.finished()) break;
    if (const auto& why = sched.cancel_reason()) {
      const std::string reason = *why;
      for (auto& f : client.cancel_all(t, reason)) {
        auto it = open.find(f.id);
        sched.complete(it->second, std::move(f.rec), seconds(std::max(t, f.at_ns)));
        open.erase(it);
      }
      continue;
    }
    const double wake = sched.next_wakeup();
    std::int64_t next = client.next_event_ns();
    if (std::isfinite(wake)) {
      auto w = static_cast<std::int64_t>(std::ceil(wake * 1e9));
      if (seconds(w) < wake) ++w;  // never wake a hair before the timer
      next = std::min(next, w);
    }
    if (next == sim::VirtualClient::kNever) break;  // nothing can move the run on (the scheduler ends it first)
    // Everything at or before t has been handled: time moves on.
    t = std::max(t + 1, next);
    for (auto& f : client.advance_to(t)) {
      auto it = open.find(f.id);
      sched.complete(it->second, std::move(f.rec), seconds(f.at_ns));
      open.erase(it);
    }
  }

  VirtualReplayResult out;
  out.replay = std::move(sched.result());
  auto& run = out.replay.run;
  std::sort(run.records.begin(), run.records.end(),
            [](const RequestRecord& a, const RequestRecord& b) { return a.start_ns < b.start_ns; });
  run.profiling_end_ns = t;
  run.abort_reason = out.replay.abort_reason;
  out.engine = engine.stats();
  out.virtual_seconds = seconds(t);
  out.cpu_seconds = process_cpu_seconds() - cpu0;
  return out;
}

}  // namespace agentperf::replay
