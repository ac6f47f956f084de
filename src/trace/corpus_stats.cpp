#include "trace/corpus_stats.h"

#include <algorithm>
#include <map>

namespace agentperf::trace {
namespace {

struct Interval {
  double start, end;
};

// Start-sorted call intervals merged into busy stretches.
std::vector<Interval> busy_stretches(std::vector<Interval> calls) {
  std::sort(calls.begin(), calls.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> out;
  for (const auto& c : calls) {
    if (!out.empty() && c.start <= out.back().end) out.back().end = std::max(out.back().end, c.end);
    else out.push_back(c);
  }
  return out;
}

std::vector<Interval> call_intervals(const WekaTrace& t) {
  std::vector<Interval> v;
  for (const auto& e : t.entries) {
    if (!e.is_subagent) v.push_back({e.call.t, e.call.t + e.call.api_time});
    else
      for (const auto& c : e.subagent.calls) v.push_back({c.t, c.t + c.api_time});
  }
  return v;
}

}  // namespace

void CorpusStatsAccumulator::add(const WekaTrace& t) {
  ++s_.traces;
  std::int64_t main_calls = 0;
  bool any_sub = false;
  const TraceCall* prev = nullptr;
  // The session's time-averaged context (area over span): each main-agent
  // call's context holds until the next call starts; the last one until it
  // ends.
  double context_area = 0, first_start = 0;
  for (const auto& e : t.entries) {
    if (e.is_subagent) {
      any_sub = true;
      ++s_.subagent_groups;
      for (const auto& c : e.subagent.calls) {
        ++s_.subagent_calls;
        sub_in_.push_back(static_cast<double>(c.in));
        sub_out_.push_back(static_cast<double>(c.out));
      }
      continue;
    }
    ++main_calls;
    main_in_.push_back(static_cast<double>(e.call.in));
    main_out_.push_back(static_cast<double>(e.call.out));
    if (prev) {
      gaps_.push_back(std::max(0.0, e.call.t - (prev->t + prev->api_time)));
      context_area += static_cast<double>(prev->in + prev->out) * (e.call.t - prev->t);
    } else {
      first_start = e.call.t;
    }
    prev = &e.call;
  }
  if (prev) {
    context_area += static_cast<double>(prev->in + prev->out) * prev->api_time;
    const double last_end = prev->t + prev->api_time;
    if (last_end > first_start) contexts_.push_back(context_area / (last_end - first_start));
  }
  s_.main_calls += main_calls;
  mains_.push_back(static_cast<double>(main_calls));
  if (any_sub) ++s_.traces_with_subagents;
  const auto stretches = busy_stretches(call_intervals(t));
  if (!stretches.empty()) {
    double end = 0;
    for (const auto& b : stretches) {
      busy_ += b.end - b.start;
      end = std::max(end, b.end);
    }
    span_ += end - stretches.front().start;
  }
}

CorpusStats CorpusStatsAccumulator::result() const {
  CorpusStats s = s_;
  s.requests = s.main_calls + s.subagent_calls;
  auto gaps = gaps_, mains = mains_, contexts = contexts_;  // summarize sorts its input
  auto joined = [](const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> v(a);
    v.insert(v.end(), b.begin(), b.end());
    return v;
  };
  auto in = joined(main_in_, sub_in_), out = joined(main_out_, sub_out_);
  s.input_tokens = summarize(in);
  s.output_tokens = summarize(out);
  auto main_in = main_in_, main_out = main_out_, sub_in = sub_in_, sub_out = sub_out_;
  s.main_input_tokens = summarize(main_in);
  s.main_output_tokens = summarize(main_out);
  s.subagent_input_tokens = summarize(sub_in);
  s.subagent_output_tokens = summarize(sub_out);
  s.main_gap_s = summarize(gaps);
  s.main_calls_per_trace = summarize(mains);
  s.session_context = summarize(contexts);
  s.waiting_share = span_ > 0 ? 1.0 - busy_ / span_ : 0.0;
  return s;
}

CorpusStats corpus_stats(const std::vector<WekaTrace>& traces) {
  CorpusStatsAccumulator acc;
  for (const auto& t : traces) acc.add(t);
  return acc.result();
}

std::vector<TraceWorkingSet> time_averaged_working_sets(const std::vector<WekaTrace>& traces, double cap) {
  std::vector<TraceWorkingSet> out;
  out.reserve(traces.size());
  for (const auto& t : traces) out.push_back(time_averaged_working_set(t, cap));
  return out;
}

TraceWorkingSet time_averaged_working_set(const WekaTrace& t, double cap) {
  // The replayed clock: idle stretches longer than the cap shrink to it.
  const auto stretches = busy_stretches(call_intervals(t));
  std::vector<std::pair<double, double>> shifts;  // (original time from which, cumulative shift)
  double shift = 0;
  for (std::size_t i = 1; i < stretches.size(); ++i) {
    const double idle = stretches[i].start - stretches[i - 1].end;
    if (idle > cap) shift += idle - cap;
    shifts.push_back({stretches[i].start, shift});
  }
  auto replayed = [&](double x) {
    double sft = 0;
    for (const auto& [from, s] : shifts) {
      if (x < from) break;
      sft = s;
    }
    return x - sft;
  };
  // Events: a stream's context changes at each call's start; a subagent
  // group leaves at its last end; the main stream stays to the end.
  std::map<double, std::vector<std::pair<int, double>>> events;  // time -> (stream, new context; <0 = leaves)
  int stream = 0;
  double trace_end = 0;
  for (const auto& e : t.entries) {
    if (!e.is_subagent) {
      events[replayed(e.call.t)].push_back({0, static_cast<double>(e.call.in + e.call.out)});
      trace_end = std::max(trace_end, replayed(e.call.t + e.call.api_time));
      continue;
    }
    ++stream;
    double last_end = 0;
    for (const auto& c : e.subagent.calls) {
      events[replayed(c.t)].push_back({stream, static_cast<double>(c.in + c.out)});
      last_end = std::max(last_end, replayed(c.t + c.api_time));
    }
    if (!e.subagent.calls.empty()) events[last_end].push_back({stream, -1});
    trace_end = std::max(trace_end, last_end);
  }
  TraceWorkingSet ws;
  if (events.empty()) return ws;
  std::map<int, double> live;
  double current = 0, area = 0, last = events.begin()->first;
  for (const auto& [at, changes] : events) {
    area += current * (at - last);
    last = at;
    for (const auto& [st, ctx] : changes) {
      if (ctx < 0) live.erase(st);
      else live[st] = ctx;
    }
    current = 0;
    for (const auto& [st, ctx] : live) current += ctx;
    ws.peak_tokens = std::max(ws.peak_tokens, current);
  }
  area += current * std::max(0.0, trace_end - last);
  ws.span_s = std::max(0.0, trace_end - events.begin()->first);
  ws.mean_tokens = ws.span_s > 0 ? area / ws.span_s : current;
  return ws;
}

double lane_working_set(const std::vector<TraceWorkingSet>& sets) {
  double area = 0, span = 0;
  for (const auto& s : sets) {
    area += s.mean_tokens * s.span_s;
    span += s.span_s;
  }
  return span > 0 ? area / span : 0.0;
}

}  // namespace agentperf::trace
