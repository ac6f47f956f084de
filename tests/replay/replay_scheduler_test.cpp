// The replay schedule against AIPerf's AgentX code, with no sockets and no
// clocks: a ReplayScheduler driven in virtual time where every request
// takes a fixed time, on hand-made traces whose AIPerf schedule is worked
// out by hand (or, for t*, by running AIPerf's formula with numpy) from the
// AIPerf code quoted in the comments. Sources: the SemiAnalysis AIPerf fork
// as read for issue 17 (notes/issue17-aiperf.md):
//   trajectory_source.py @ SemiAnalysisAI/aiperf 996eca9d6947
//     (_seed_for_trace_lane, _build_timestamped_trajectory, _trace_time_bounds)
//   agentic_replay.py @ vngcloud/aiperf-semi a37da6c61417 (a mirror of the
//     fork: _execute_warmup, _capped_warmup_lead_ms, _build_handoff_states,
//     _handoff_replay_offset_ms, _profiling_phase_t0_offset_ms,
//     record_warmup_failure)
//   context_overflow.py @ ai-dynamo/aiperf 58028d5ba1cb
//     (is_context_overflow_response, Environment.AGENTX.CONTEXT_OVERFLOW_SUBSTRINGS)
#include "replay/replay_scheduler.h"
#include "common/error.h"
#include "metrics/export.h"

#include "support/subagent_trace.h"
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <tuple>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <tuple>

#include "metrics/export.h"
#include "trace/session_tree.h"
#include "trace/weka_trace.h"

using namespace agentperf;

namespace {

// Root r0 (0 s), r1 (15 s); subagent S spawned by r1: s0 (25), s1 (47),
// s2 (52); root r2 (56, joins S: S ended at 53), r3 (60). Every call 1 s.
const char* kH = R"({"id":"H","block_size":4,"requests":[
  {"type":"n","t":0,"in":4,"out":1,"hash_ids":[0],"api_time":1},
  {"type":"n","t":15,"in":8,"out":1,"hash_ids":[0,1],"api_time":1},
  {"type":"subagent","t":25,"agent_id":"S","requests":[
     {"type":"n","t":25,"in":8,"out":1,"hash_ids":[0,5],"api_time":1},
     {"type":"n","t":47,"in":12,"out":1,"hash_ids":[0,5,6],"api_time":1},
     {"type":"n","t":52,"in":16,"out":1,"hash_ids":[0,5,6,7],"api_time":1}]},
  {"type":"n","t":56,"in":12,"out":1,"hash_ids":[0,1,2],"api_time":1},
  {"type":"n","t":60,"in":16,"out":1,"hash_ids":[0,1,2,3],"api_time":1}]})";

// Root only: 0, 10, 40, 50 s, 1 s each.
const char* kH2 = R"({"id":"H2","block_size":4,"requests":[
  {"type":"n","t":0,"in":4,"out":1,"hash_ids":[0],"api_time":1},
  {"type":"n","t":10,"in":8,"out":1,"hash_ids":[0,1],"api_time":1},
  {"type":"n","t":40,"in":12,"out":1,"hash_ids":[0,1,2],"api_time":1},
  {"type":"n","t":50,"in":16,"out":1,"hash_ids":[0,1,2,3],"api_time":1}]})";

struct Sent {
  double at;
  std::string conversation;
  int turn;
  Phase phase;
  bool primer;
  int lane;
  std::int64_t play;
  RequestRecord rec;
};

using Fail = std::function<std::optional<ErrorInfo>(const replay::Dispatch&)>;

struct Run {
  std::vector<Sent> sent;
  replay::ReplayResult result;
  double profile_start = -1;
};

// Virtual time: each request takes `latency` seconds, fails as `fail` says,
// and the run is cut at `until` (or ends on its own).
// reverse_ties: requests that end at one instant are handed back in the
// reverse of the order they were sent (over HTTP that order is a race).
Run drive(const replay::ReplayConfig& cfg, const std::vector<trace::WekaTrace>& traces, double latency, double until,
          const Fail& fail = {}, bool reverse_ties = false) {
  replay::ReplayScheduler sched(cfg, traces, replay::MarkerEncoding{});
  Run out;
  std::multimap<double, replay::Dispatch> in_flight;
  double t = 0;
  sched.start();
  for (int guard = 0; guard < 100000; ++guard) {
    auto due = sched.poll(t);
    for (auto& d : due) {
      out.sent.push_back({t, d.rec.conversation_id, d.turn, d.rec.phase, d.primer, d.play->lane, d.play->index, d.rec});
      in_flight.emplace(t + latency, std::move(d));
    }
    if (sched.profiling() && out.profile_start < 0) out.profile_start = sched.profile_start();
    if (sched.cancel_reason()) {
      // Cancelled now: every request in flight ends at t with a 499.
      auto all = std::move(in_flight);
      in_flight.clear();
      for (auto& [at, d] : all) {
        RequestRecord rec = d.rec;
        rec.error = ErrorInfo{499, "RequestCancelled", *sched.cancel_reason()};
        sched.complete(d, std::move(rec), t);
      }
      continue;
    }
    if (sched.finished()) break;
    if (!due.empty()) continue;
    const double next = std::min(sched.next_wakeup(),
                                 in_flight.empty() ? std::numeric_limits<double>::infinity() : in_flight.begin()->first);
    if (next > until) break;
    t = next;
    std::vector<std::pair<double, replay::Dispatch>> ended;
    while (!in_flight.empty() && in_flight.begin()->first <= t) {
      auto node = in_flight.extract(in_flight.begin());
      ended.emplace_back(node.key(), std::move(node.mapped()));
    }
    if (reverse_ties) std::reverse(ended.begin(), ended.end());  // all end at t here (fixed latency)
    for (auto& [at, d] : ended) {
      RequestRecord rec = d.rec;
      if (fail)
        if (auto e = fail(d)) rec.error = *e;
      sched.complete(d, std::move(rec), at);
    }
  }
  out.result = std::move(sched.result());
  return out;
}

replay::ReplayConfig base_config(int lanes) {
  replay::ReplayConfig c;
  c.client.endpoint_type = EndpointType::completions;
  c.output.quiet = true;
  c.lanes = lanes;
  c.duration_s = 1000;
  c.grace_s = 1;
  c.cache_bust = false;
  c.benchmark_id = "sched";
  c.seed = 42;
  return c;
}

std::vector<trace::WekaTrace> parse(std::initializer_list<const char*> jsons) {
  std::vector<trace::WekaTrace> v;
  for (const char* j : jsons) v.push_back(trace::parse_weka_trace(j, "test"));
  return v;
}

// Trace "agentx-17": call starts 0.5, 2.0, 9.875 (subagent), 6.25, 31.125 s;
// the last call takes 20 s, so a span of completions (51.125 s) would differ
// from the span of starts AIPerf uses.
const char* kA = R"({"id":"agentx-17","block_size":4,"requests":[
  {"type":"n","t":0.5,"in":4,"out":1,"hash_ids":[0],"api_time":1.0},
  {"type":"subagent","t":2.0,"agent_id":"s1","requests":[
     {"type":"n","t":2.0,"in":4,"out":1,"hash_ids":[0,9],"api_time":0.5},
     {"type":"n","t":9.875,"in":8,"out":1,"hash_ids":[0,9,10],"api_time":0.5}]},
  {"type":"n","t":6.25,"in":8,"out":1,"hash_ids":[0,1],"api_time":1.0},
  {"type":"n","t":31.125,"in":12,"out":1,"hash_ids":[0,1,2],"api_time":20.0}]})";

// Trace "trace/ü-β" (UTF-8 id): root 100.1, 130.7; subagent (background,
// the latest start) 120.0, 250.45.
const char* kB = R"({"id":"trace/ü-β","block_size":4,"requests":[
  {"type":"n","t":100.1,"in":4,"out":1,"hash_ids":[0],"api_time":1.0},
  {"type":"subagent","t":120.0,"agent_id":"bg","requests":[
     {"type":"n","t":120.0,"in":4,"out":1,"hash_ids":[0,3],"api_time":1.0},
     {"type":"n","t":250.45,"in":8,"out":1,"hash_ids":[0,3,4],"api_time":1.0}]},
  {"type":"n","t":130.7,"in":8,"out":1,"hash_ids":[0,1],"api_time":1.0}]})";

}  // namespace

// AIPerf trajectory_source.py @ 996eca9d (_seed_for_trace_lane,
// _build_timestamped_trajectory, _trace_time_bounds):
//   seed = int.from_bytes(sha256(f"{base_seed}:{trace_id}:{lane}".encode()).digest()[:8], "big")
//   start_ms, end_ms = min/max turn timestamp_ms (t * 1000.0) over root + children
//   lo = start_ms + min_ratio * dur; hi = start_ms + max_ratio * dur; hi = max(hi, lo)
//   t_star_ms = float(lo if hi == lo else np.random.default_rng(seed).uniform(lo, hi))
// Expected values computed with exactly that formula in Debian's numpy
// 1.24.2 (/usr/bin/python3), printed with float.hex().
TEST(ReplayScheduler, TStarIsAiperfsDrawForSeedTraceAndLane) {
  const auto traces = parse({kA, kB});
  const auto tree_a = trace::build_session_tree(traces[0]);
  const auto tree_b = trace::build_session_tree(traces[1]);
  // The span is over request starts: 500 .. 31125 ms, not to the last end.
  EXPECT_EQ(replay::trajectory_time_bounds_ms(tree_a), std::make_pair(500.0, 31125.0));
  EXPECT_EQ(replay::trajectory_time_bounds_ms(tree_b), std::make_pair(100.1 * 1000.0, 250.45 * 1000.0));
  struct Row {
    std::uint64_t seed;
    const trace::SessionTree* tree;
    int lane;
    double min_ratio, max_ratio, t_star_ms;
  };
  const Row rows[] = {
      {42, &tree_a, 0, 0.25, 0.75, 0x1.457ed02e6b7e9p+14},  // 20831.703302077865
      {42, &tree_a, 1, 0.25, 0.75, 0x1.dc13b205b1b45p+13},  // 15234.461924923244
      {42, &tree_a, 7, 0.25, 0.75, 0x1.31c78b29c235ep+14},  // 19569.88590148405
      {0, &tree_a, 0, 0.25, 0.75, 0x1.1bc349fed12e4p+14},   // 18160.82226111264
      {18446744073709551615ull, &tree_a, 2, 0.25, 0.75, 0x1.c389180658ebep+13},  // 14449.136730856608
      {42, &tree_b, 0, 0.25, 0.75, 0x1.68eb9caf1cb76p+17},       // 184791.22409399942
      {42, &tree_b, 5, 0.25, 0.75, 0x1.306ecd0d873abp+17},       // 155869.6019753491
      {1234567, &tree_b, 3, 0.0, 1.0, 0x1.d0afdd9c64307p+16},    // 118959.86566759284
      {42, &tree_b, 0, 0.5, 0.5, 175275.0},                      // lo == hi: no draw
  };
  for (const auto& r : rows) {
    replay::ReplayConfig c = base_config(1);
    c.seed = r.seed;
    c.t_star_min = r.min_ratio;
    c.t_star_max = r.max_ratio;
    EXPECT_EQ(replay::trajectory_start_ms(c, *r.tree, r.lane), r.t_star_ms)
        << r.tree->trace->id << " seed " << r.seed << " lane " << r.lane;
  }

  // The scheduler cuts each lane's play at that t*: eight lanes of trace A,
  // seed 42; lane 0, 1 and 7 match the table.
  auto c = base_config(8);
  const auto one = parse({kA});
  replay::ReplayScheduler sched(c, one, replay::MarkerEncoding{});
  sched.start();
  std::map<int, double> t_star_by_lane;
  for (const auto& d : sched.poll(100.0)) t_star_by_lane[d.play->lane] = d.play->t_star_ms;
  ASSERT_EQ(t_star_by_lane.size(), 8u);  // every t* is past 2 s: every lane primes a turn
  EXPECT_EQ(t_star_by_lane[0], 0x1.457ed02e6b7e9p+14);
  EXPECT_EQ(t_star_by_lane[1], 0x1.dc13b205b1b45p+13);
  EXPECT_EQ(t_star_by_lane[7], 0x1.31c78b29c235ep+14);
}

// AIPerf draws t* over the trace's span after its loader cut every idle gap
// between request starts to --trace-idle-gap-cap-seconds (weka_trace.py
// _IdleGapTimeWarp, trace/idle_gap_warp.h). Root calls at 0, 1000, 1010,
// 1020, 1030 s; cap 300: the timeline reads 0, 300, 310, 320, 330 and
// ratios 0.95/0.95 put t* at 313.5 s, after three calls. On the recorded
// clock (a cap past every gap) t* would be 978.5 s, after one.
TEST(ReplayScheduler, TStarIsDrawnOverTheIdleCappedSpan) {
  const char* j = R"({"id":"idle","block_size":4,"requests":[
    {"type":"n","t":0,"in":4,"out":1,"hash_ids":[0],"api_time":1},
    {"type":"n","t":1000,"in":8,"out":1,"hash_ids":[0,1],"api_time":1},
    {"type":"n","t":1010,"in":12,"out":1,"hash_ids":[0,1,2],"api_time":1},
    {"type":"n","t":1020,"in":16,"out":1,"hash_ids":[0,1,2,3],"api_time":1},
    {"type":"n","t":1030,"in":20,"out":1,"hash_ids":[0,1,2,3,4],"api_time":1}]})";
  const auto traces = parse({j});
  // compressed: the 1,000 s gap between the first two starts keeps its first
  // `cap` seconds; the play's started tree reports the rest.
  for (const auto& [cap, t_star_ms, primed_turn, compressed] :
       {std::tuple{300.0, 313500.0, 2, 700.0}, std::tuple{1e6, 978500.0, 0, 0.0}}) {
    auto c = base_config(1);
    c.t_star_min = c.t_star_max = 0.95;
    c.tree_idle_cap_s = cap;
    replay::ReplayScheduler sched(c, traces, replay::MarkerEncoding{});
    sched.start();
    const auto sent = sched.poll(0.0);
    ASSERT_EQ(sent.size(), 1u) << "cap " << cap;
    EXPECT_EQ(sent[0].play->t_star_ms, t_star_ms) << "cap " << cap;
    EXPECT_TRUE(sent[0].primer);
    EXPECT_EQ(sent[0].turn, primed_turn) << "cap " << cap;  // the last call before t*
    EXPECT_DOUBLE_EQ(sched.result().idle_compressed_s, compressed) << "cap " << cap;
  }
}

// first_trace: where in the dataset the lanes start (lane k takes the
// (first + k)-th trace, wrapping); a prediction turns it to see how much its
// numbers owe to which traces the lanes happen to replay.
TEST(ReplayScheduler, LanesStartAtTheFirstTraceAndWrap) {
  const auto traces = parse({kA, kB});
  for (const auto& [first, lane0, lane1] :
       {std::tuple{0, "agentx-17", "trace/ü-β"}, std::tuple{1, "trace/ü-β", "agentx-17"}, std::tuple{3, "trace/ü-β", "agentx-17"}}) {
    auto c = base_config(2);
    c.warmup = false;
    c.first_trace = first;
    replay::ReplayScheduler sched(c, traces, replay::MarkerEncoding{});
    sched.start();
    std::map<int, std::string> trace_of_lane;
    for (const auto& d : sched.poll(0.0)) trace_of_lane[d.play->lane] = d.play->trace->id;
    EXPECT_EQ(trace_of_lane[0], lane0) << "first " << first;
    EXPECT_EQ(trace_of_lane[1], lane1) << "first " << first;
  }
  auto bad = base_config(1);
  bad.first_trace = -1;
  EXPECT_THROW(replay::ReplayScheduler(bad, traces, replay::MarkerEncoding{}), UserError);
}

// agentic_replay.py _execute_warmup / _capped_warmup_lead_ms,
// _build_handoff_states / _handoff_replay_offset_ms and
// _execute_profiling / _profiling_phase_t0_offset_ms (vngcloud/aiperf-semi
// a37da6c6). Ratios 0.5/0.5, so t* = the middle of the span, no draw:
//   lane 0, trace H: starts 0..60 s, t* = 30 000 ms. History r0, r1, s0.
//     Primers: r1 (lead 15 000 ms, clamped to the 10 s system idle cap),
//     s0 (lead 5 000 ms).
//   lane 1, trace H2: starts 0..50 s, t* = 25 000 ms. History r0, r1.
//     Primer r1 (lead 15 000, clamped to 10 000).
//   max lead 10 000: r1(H) and r1(H2) at 0 s, s0(H) at 10 - 5 = 5 s (scaled
//   together instead, s0 would go at 6.67 s).
// Every request takes 0.5 s. Primers back at 5.5 s; pressure (K = 1 per
// lane): s1(H) (r2 waits for S), r2(H2), back at 6.0 s: handoff at 6.0.
// Handoff offsets = timestamp - t*: s2(H) 52 000 - 30 000 = 22 000;
// r2(H) 26 000 but waiting on children (joins S), so not in the minimum;
// r3(H2) 50 000 - 25 000 = 25 000. Phase t0 = 22 000 ms: s2(H) at 6.0,
// r3(H2) at 6 + 3 = 9.0, r2(H) at max(6 + 4, S done at 6.5) = 10.0.
// (The residual rule sent s2 4 s after s1 came back, at 10.0.) Then lane 1
// recycles (H2 done at 9.5) to H from turn 0 at 9.5; r3(H) goes 60 - 57 =
// 3 s after r2 came back (10.5), at 13.5.
TEST(ReplayScheduler, PrimerLeadsClampAndHandoffFollowsTheRecordedClock) {
  auto c = base_config(2);
  c.t_star_min = c.t_star_max = 0.5;
  c.warmup_requests_per_lane = 1;
  const auto traces = parse({kH, kH2});
  const auto run = drive(c, traces, 0.5, 13.6);
  struct Want {
    double at;
    std::string conversation;
    int turn;
    Phase phase;
    bool primer;
    int lane;
  };
  const std::vector<Want> want = {
      {0.0, "H", 1, Phase::warmup, true, 0},
      {0.0, "H2", 1, Phase::warmup, true, 1},
      {5.0, "H::sa:S", 0, Phase::warmup, true, 0},
      {5.5, "H2", 2, Phase::warmup, false, 1},
      {5.5, "H::sa:S", 1, Phase::warmup, false, 0},
      {6.0, "H::sa:S", 2, Phase::profiling, false, 0},
      {9.0, "H2", 3, Phase::profiling, false, 1},
      {9.5, "H", 0, Phase::profiling, false, 1},  // lane 1 recycled to trace H
      {10.0, "H", 2, Phase::profiling, false, 0},
      {13.5, "H", 3, Phase::profiling, false, 0},
  };
  auto sent = run.sent;
  std::stable_sort(sent.begin(), sent.end(), [](const Sent& a, const Sent& b) {
    return std::tie(a.at, a.lane, a.conversation) < std::tie(b.at, b.lane, b.conversation);
  });
  auto want_sorted = want;
  std::stable_sort(want_sorted.begin(), want_sorted.end(), [](const Want& a, const Want& b) {
    return std::tie(a.at, a.lane, a.conversation) < std::tie(b.at, b.lane, b.conversation);
  });
  ASSERT_EQ(sent.size(), want_sorted.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    SCOPED_TRACE("send " + std::to_string(i) + ": " + sent[i].conversation + " turn " + std::to_string(sent[i].turn));
    EXPECT_NEAR(sent[i].at, want_sorted[i].at, 1e-9);
    EXPECT_EQ(sent[i].conversation, want_sorted[i].conversation);
    EXPECT_EQ(sent[i].turn, want_sorted[i].turn);
    EXPECT_EQ(sent[i].phase, want_sorted[i].phase);
    EXPECT_EQ(sent[i].primer, want_sorted[i].primer);
    EXPECT_EQ(sent[i].lane, want_sorted[i].lane);
  }
  EXPECT_DOUBLE_EQ(run.profile_start, 6.0);
  EXPECT_EQ(run.result.warmup_primers, 3);
  EXPECT_EQ(run.result.warmup_pressure, 2);
  EXPECT_TRUE(run.result.abort_reason.empty()) << run.result.abort_reason;
}

// Environment.AGENTX.CONTEXT_OVERFLOW_SUBSTRINGS (ai-dynamo/aiperf 58028d5b
// context_overflow.py is_context_overflow_response): case-insensitive
// substrings "context length", "maximum context", "context_length_exceeded",
// "prompt is too long", on the body / error message.
TEST(ReplayScheduler, ContextOverflowUsesAiperfsSubstrings) {
  EXPECT_TRUE(is_context_overflow_error(ErrorInfo{400, "Bad Request",
                                            "HTTP 400: This model's maximum context length is 8192 tokens."}));
  EXPECT_TRUE(is_context_overflow_error(ErrorInfo{400, "Bad Request", "HTTP 400: The input (9000 tokens) exceeds the CONTEXT LENGTH"}));
  EXPECT_TRUE(is_context_overflow_error(ErrorInfo{400, "Bad Request", "HTTP 400: Maximum Context exceeded"}));
  EXPECT_TRUE(is_context_overflow_error(ErrorInfo{400, "Bad Request",
                                            R"(HTTP 400 Bad Request: {"code":"context_length_exceeded"})"}));
  EXPECT_TRUE(is_context_overflow_error(ErrorInfo{400, "context_length_exceeded", "HTTP 400: invalid request"}));
  EXPECT_TRUE(is_context_overflow_error(ErrorInfo{400, "Bad Request", "HTTP 400: Prompt is too long: 210000 tokens"}));
  // Not on AIPerf's list.
  EXPECT_FALSE(is_context_overflow_error(ErrorInfo{400, "Bad Request", "HTTP 400: exceeds the context window"}));
  EXPECT_FALSE(is_context_overflow_error(ErrorInfo{500, "Internal Server Error", "HTTP 500: engine down"}));
  EXPECT_FALSE(is_context_overflow_error(ErrorInfo{429, "Too Many Requests", "HTTP 429: rate limited"}));
}

// The live --failed-request-threshold arms after max(concurrency, 10)
// profiling records (the rule InferenceX's launcher comment describes; the
// AIPerf code was not found, notes/issue17-aiperf.md section 3.1). Every
// request fails: with 12 lanes all 12 first calls come back together and
// the abort reads 12/12 (armed at 12, not 10); with 3 lanes it reads 10/10.
TEST(ReplayScheduler, FailedRequestThresholdArmsAfterMaxOfConcurrencyAndTen) {
  const auto traces = parse({kH2});
  const Fail all_fail = [](const replay::Dispatch&) {
    return std::optional<ErrorInfo>(ErrorInfo{500, "Internal Server Error", "HTTP 500: engine down"});
  };
  for (const auto& [lanes, want] : {std::pair{12, "12/12"}, std::pair{3, "10/10"}}) {
    auto c = base_config(lanes);
    c.warmup = false;
    c.failed_request_threshold = 0.1;
    const auto run = drive(c, traces, 0.5, 500, all_fail);
    EXPECT_NE(run.result.abort_reason.find(std::string("error rate ") + want), std::string::npos)
        << lanes << " lanes: " << run.result.abort_reason;
  }
}

// Context overflows are not errors for the live threshold (AIPerf gates them
// by their own rate, AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT): every
// request overflowing, the run is not aborted; each overflow ends its play.
TEST(ReplayScheduler, ContextOverflowsDoNotCountTowardTheFailedRequestThreshold) {
  const auto traces = parse({kH2});
  auto c = base_config(2);
  c.warmup = false;
  c.failed_request_threshold = 0.1;
  const auto run = drive(c, traces, 0.5, 30, [](const replay::Dispatch&) {
    return std::optional<ErrorInfo>(ErrorInfo{400, "Bad Request", "HTTP 400: maximum context length is 8192 tokens"});
  });
  EXPECT_TRUE(run.result.abort_reason.empty()) << run.result.abort_reason;
  EXPECT_GE(run.result.context_overflow_errors, 20);
  EXPECT_GE(run.result.overflow_terminations, 20);
}

// record_warmup_failure (agentic_replay.py, notes section 3.1): any
// terminal primer failure that is not a context overflow aborts the run at
// once -- a subagent's primer as well as the root's.
TEST(ReplayScheduler, FailedSubagentPrimerAbortsTheRun) {
  auto c = base_config(1);
  c.t_star_min = c.t_star_max = 0.5;
  const auto traces = parse({kH});
  const auto run = drive(c, traces, 0.5, 100, [](const replay::Dispatch& d) -> std::optional<ErrorInfo> {
    if (d.primer && d.rec.conversation_id == "H::sa:S") return ErrorInfo{500, "Internal Server Error", "HTTP 500: engine down"};
    return std::nullopt;
  });
  EXPECT_NE(run.result.abort_reason.find("warmup failed: the primer of H::sa:S turn 0 failed: HTTP 500: engine down"),
            std::string::npos)
      << run.result.abort_reason;
  for (const auto& s : run.sent) EXPECT_EQ(s.phase, Phase::warmup) << s.conversation << " " << s.turn;
  EXPECT_EQ(run.profile_start, -1);  // profiling never started
}

// record_warmup_failure: a context overflow in warmup drops every lane of
// that trace (trajectories of that conversation id) and is not fatal. Lanes
// 0 and 2 play H, lane 1 H2; H's primer r1 overflows: lanes 0 and 2 send
// nothing more (their pending primer s0 included), lane 1 plays on.
TEST(ReplayScheduler, ContextOverflowInWarmupDropsThatTracesLanes) {
  auto c = base_config(3);
  c.t_star_min = c.t_star_max = 0.5;
  c.warmup_requests_per_lane = 1;
  const auto traces = parse({kH, kH2});
  const auto run = drive(c, traces, 0.5, 9.2, [](const replay::Dispatch& d) -> std::optional<ErrorInfo> {
    if (d.primer && d.rec.conversation_id == "H") return ErrorInfo{400, "Bad Request", "HTTP 400: Prompt is too long"};
    return std::nullopt;
  });
  EXPECT_TRUE(run.result.abort_reason.empty()) << run.result.abort_reason;
  EXPECT_EQ(run.result.warmup_dropped_lanes, 2);
  std::vector<std::tuple<double, std::string, int, int>> got;
  for (const auto& s : run.sent) got.emplace_back(s.at, s.conversation, s.turn, s.lane);
  std::sort(got.begin(), got.end());
  // H2 alone: primer r1 at 0 (lead 10 000 ms, the largest left), pressure r2
  // when the primers are back (0.5), handoff at 1.0 with r3 at offset 0
  // (50 000 - 25 000 - its own 25 000 minimum).
  const std::vector<std::tuple<double, std::string, int, int>> want = {
      {0.0, "H", 1, 0}, {0.0, "H", 1, 2}, {0.0, "H2", 1, 1}, {0.5, "H2", 2, 1}, {1.0, "H2", 3, 1},
      {1.5, "H2", 0, 1},  // lane 1 recycles to the next trace (H2 again: 3 % 2) from turn 0
  };
  ASSERT_GE(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << i;
  for (const auto& s : run.sent) EXPECT_TRUE(s.lane == 1 || (s.primer && s.turn == 1)) << s.conversation << " lane " << s.lane;
  EXPECT_DOUBLE_EQ(run.profile_start, 1.0);
}

// Subagent timing and ids after AIPerf (SemiAnalysisAI/aiperf @ 2141c6217b7f
// src/aiperf/dataset/loader/weka_trace.py _reconstruct_serial, _sa_end_seconds,
// _replay_scope_for_session; src/aiperf/timing/branch_orchestrator.py
// @ 7ee18816f7d1 intercept -> _spawn_children_and_register_gates,
// _child_dispatch_offset_ms, _maybe_suspend_parent / _arm_join_replay_deadline).
// Trace J (as in tests/trace SubagentOffsetsFromTheEntryAndJoinsByRecordedEnd):
// root r0 0 (api 2), r1 6, r2 8; A entry 3 (duration 4000 ms: end 7) calls
// 4, 5 (api 0.5); B entry 3.5 (end 4.5) call 3.6; C entry 3.2 (end 3.7) call
// 3.3. Branches: (r0, r2) = {A} start 3; (r0, r1) = {B, C} start 3.2.
// Every request takes 2 s, no warmup:
//   r0 0 -> 2. Spawned at 2: c0 at 2 + 0.1 = 2.1, b0 at 2 + 0.4 = 2.4,
//   a0 at 2 + 1 = 3 (-> 5); a1 0.5 after a0 came back: 5.5 (-> 7.5).
//   r1: 6 - (0 + 2) = 4 after r0 came back: 6.0; it joins B and C (back at
//   4.1 and 4.4) only -- A, still running until 7.5, neither joins it (A's
//   recorded end 7 is after r1's 6) nor gates it (root and A are separate
//   barrier scopes). r1 -> 8.0.
//   r2: 8 - (6 + 1) = 1 after r1: 9.0 (A back at 7.5). At the
//   gated-turn release: the later of that delay and the children.
// Before: offsets counted from the spawning call's end (a0 at 4, b0 3.6,
// c0 3.3), A joined r1 (its calls ended by 5.5 <= 6) and r1 had a barrier on
// a1: r1 at 9.5.
TEST(ReplayScheduler, SubagentFirstCallsJoinsAndScopesFollowAiperf) {
  const char* j = test_support::kSubagentTrace;
  auto c = base_config(1);
  c.warmup = false;
  const auto traces = parse({j});
  const auto run = drive(c, traces, 2.0, 9.5);
  const std::vector<std::tuple<double, std::string, int>> want = {
      {0.0, "J", 0}, {2.1, "J::sa:C", 0}, {2.4, "J::sa:B", 0}, {3.0, "J::sa:A", 0},
      {5.5, "J::sa:A", 1}, {6.0, "J", 1}, {9.0, "J", 2},
  };
  ASSERT_EQ(run.sent.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(run.sent[i].at, std::get<0>(want[i]), 1e-9) << i;
    EXPECT_EQ(run.sent[i].conversation, std::get<1>(want[i])) << i;
    EXPECT_EQ(run.sent[i].turn, std::get<2>(want[i])) << i;
  }

  // Records (MetricRecordMetadata @ 2141c621: agent_depth, parent_correlation_id,
  // root_correlation_id = the root session's x_correlation_id): a UUID v4 per
  // stream instance, shared by its turns.
  const std::regex uuid4("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::map<std::string, std::string> corr;
  for (const auto& sent : run.sent) {
    const auto& r = sent.rec;
    EXPECT_TRUE(std::regex_match(r.x_correlation_id, uuid4)) << r.x_correlation_id;
    if (corr.count(r.conversation_id)) {
      EXPECT_EQ(corr[r.conversation_id], r.x_correlation_id);
    }
    corr[r.conversation_id] = r.x_correlation_id;
  }
  ASSERT_EQ(corr.size(), 4u);
  std::set<std::string> distinct;
  for (const auto& [conv, id] : corr) distinct.insert(id);
  EXPECT_EQ(distinct.size(), 4u);
  for (const auto& sent : run.sent) {
    const auto& r = sent.rec;
    EXPECT_EQ(r.root_correlation_id, corr["J"]);
    if (r.conversation_id == "J") {
      EXPECT_EQ(r.agent_depth, 0);
      EXPECT_TRUE(r.parent_correlation_id.empty());
    } else {
      EXPECT_EQ(r.agent_depth, 1);
      EXPECT_EQ(r.parent_correlation_id, corr["J"]);
    }
  }
  // profile_export.jsonl metadata (record_to_json): agent_depth and
  // parent_correlation_id beside x_correlation_id / root_correlation_id.
  const auto root_json = record_to_json(run.sent[0].rec)["metadata"];
  EXPECT_EQ(root_json["agent_depth"], 0);
  EXPECT_TRUE(root_json["parent_correlation_id"].is_null());
  EXPECT_EQ(root_json["x_correlation_id"], corr["J"]);
  EXPECT_EQ(root_json["root_correlation_id"], corr["J"]);
  const auto child_json = record_to_json(run.sent[1].rec)["metadata"];
  EXPECT_EQ(child_json["agent_depth"], 1);
  EXPECT_EQ(child_json["parent_correlation_id"], corr["J"]);
  EXPECT_EQ(child_json["x_correlation_id"], corr["J::sa:C"]);
  // Deterministic from the seed and benchmark id; another benchmark id, other ids.
  EXPECT_EQ(drive(c, traces, 2.0, 9.5).sent[0].rec.x_correlation_id, corr["J"]);
  auto c2 = c;
  c2.benchmark_id = "other";
  EXPECT_NE(drive(c2, traces, 2.0, 9.5).sent[0].rec.x_correlation_id, corr["J"]);
}

// branch_orchestrator.py on_credit_issued (@ 7ee18816f7d1): X's branch
// (start 2) begins before r0's recorded end (0 + 5), so X starts when r0 is
// SENT, its first call max(0, 2.5 - 0) = 2.5 s later, while r0 is still
// in flight (every request takes 4 s). r0 0 -> 4; x0 2.5 -> 6.5;
// r1: 10 - 5 = 5 after r0 came back = 9.0, joined on X (back at 6.5): 9.0.
TEST(ReplayScheduler, OverlappingBranchStartsWhenItsSpawningCallIsSent) {
  const char* o = R"({"id":"O","block_size":4,"requests":[
    {"type":"n","t":0,"in":4,"out":1,"hash_ids":[0],"api_time":5},
    {"type":"subagent","t":2,"agent_id":"X","requests":[
      {"type":"n","t":2.5,"in":8,"out":1,"hash_ids":[0,5],"api_time":1}]},
    {"type":"n","t":10,"in":8,"out":1,"hash_ids":[0,1],"api_time":1}]})";
  auto c = base_config(1);
  c.warmup = false;
  const auto run = drive(c, parse({o}), 4.0, 9.5);
  const std::vector<std::tuple<double, std::string, int>> want = {{0.0, "O", 0}, {2.5, "O::sa:X", 0}, {9.0, "O", 1}};
  ASSERT_EQ(run.sent.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(run.sent[i].at, std::get<0>(want[i]), 1e-9) << i;
    EXPECT_EQ(run.sent[i].conversation, std::get<1>(want[i])) << i;
    EXPECT_EQ(run.sent[i].turn, std::get<2>(want[i])) << i;
  }
}

// Warmup pressure takes each lane's next K calls in recorded start order,
// whatever order simultaneous completions come back in. Root r0 (0 s)
// spawns subagents A (calls at 2, 4, 6, 8 s) and B (2.5, 4.5, 6.5, 8.5 s),
// joined by r1 (20 s). t* = 5 s: a0, a1, b0, b1 are history, a1 and b1 the
// primers. K = 3: a2 (6), b2 (6.5), a3 (8) -- a2 and b2 go together and end
// together; the third goes to a3 whichever of them comes back first (it
// used to go to the stream handed back first, so the hand-off differed:
// b3 (8.5 - 5 = 3.5 s) or a3 (3 s) opened profiling). Every call 0.5 s:
// primers 0-5 s, pressure 5-6 s, handoff at 6 s. Profiling: b3 at the
// handoff (the phase minimum), then r1 at its offset 20 - 5 - 3.5 = 11.5 s,
// less 1 s of the system idle cap (idle since 6.5 s, cap 10 s).
TEST(ReplayScheduler, PressureTurnsDoNotDependOnTheOrderOfSimultaneousCompletions) {
  const char* j = R"({"id":"P","block_size":4,"requests":[
    {"type":"n","t":0,"in":4,"out":1,"hash_ids":[0],"api_time":1},
    {"type":"subagent","t":2,"agent_id":"A","requests":[
      {"type":"n","t":2,"in":8,"out":1,"hash_ids":[0,5],"api_time":1},
      {"type":"n","t":4,"in":12,"out":1,"hash_ids":[0,5,6],"api_time":1},
      {"type":"n","t":6,"in":16,"out":1,"hash_ids":[0,5,6,7],"api_time":1},
      {"type":"n","t":8,"in":20,"out":1,"hash_ids":[0,5,6,7,8],"api_time":1}]},
    {"type":"subagent","t":2.5,"agent_id":"B","requests":[
      {"type":"n","t":2.5,"in":8,"out":1,"hash_ids":[0,9],"api_time":1},
      {"type":"n","t":4.5,"in":12,"out":1,"hash_ids":[0,9,10],"api_time":1},
      {"type":"n","t":6.5,"in":16,"out":1,"hash_ids":[0,9,10,11],"api_time":1},
      {"type":"n","t":8.5,"in":20,"out":1,"hash_ids":[0,9,10,11,12],"api_time":1}]},
    {"type":"n","t":20,"in":8,"out":1,"hash_ids":[0,1],"api_time":1}]})";
  auto c = base_config(1);
  c.t_star_min = c.t_star_max = 0.25;  // of the 0..20 s span of starts: t* = 5 s
  c.warmup_requests_per_lane = 3;
  const auto traces = parse({j});
  using Key = std::tuple<std::string, int, Phase, bool>;
  auto sends = [](const ::Run& r) {
    std::set<Key> s;
    for (const auto& x : r.sent) s.insert({x.conversation, x.turn, x.phase, x.primer});
    return s;
  };
  const auto in_order = drive(c, traces, 0.5, 16.9);  // before the lane recycles (17 s)
  const auto reversed = drive(c, traces, 0.5, 16.9, {}, true);
  const std::set<Key> want = {
      {"P", 0, Phase::warmup, true},           {"P::sa:A", 1, Phase::warmup, true},
      {"P::sa:B", 1, Phase::warmup, true},     {"P::sa:A", 2, Phase::warmup, false},
      {"P::sa:B", 2, Phase::warmup, false},    {"P::sa:A", 3, Phase::warmup, false},
      {"P::sa:B", 3, Phase::profiling, false}, {"P", 1, Phase::profiling, false},
  };
  EXPECT_EQ(sends(in_order), want);
  EXPECT_EQ(sends(reversed), want);
  // The same profiling schedule either way: b3 at the handoff, r1 10.5 s later.
  for (const ::Run* r : {&in_order, &reversed}) {
    std::vector<std::pair<std::string, double>> prof;
    for (const auto& x : r->sent)
      if (x.phase == Phase::profiling) prof.emplace_back(x.conversation, x.at - r->profile_start);
    ASSERT_EQ(prof.size(), 2u);
    EXPECT_EQ(prof[0].first, "P::sa:B");
    EXPECT_NEAR(prof[0].second, 0.0, 1e-9);
    EXPECT_EQ(prof[1].first, "P");
    EXPECT_NEAR(prof[1].second, 10.5, 1e-9);
    EXPECT_NEAR(r->profile_start, 6.0, 1e-9);
    EXPECT_EQ(r->result.warmup_pressure, 3);
  }
}

// Warmup cut off by its grace period while its last pressure request is in
// flight: the driver cancels it, the drained warmup hands over, and the
// profiling phase starts with no cancellation pending (a stale one had the
// virtual-time driver cancel every profiling request at the same instant,
// forever: a disaggregated sweep point spun there for minutes).
TEST(ReplayScheduler, AWarmupCutByItsGraceLeavesNoCancellationForProfiling) {
  auto c = base_config(1);
  c.warmup_requests_per_lane = 1;
  c.warmup_grace_s = 3;  // the primer ends at 2 s, the pressure request is in flight at 3 s
  const auto r = drive(c, parse({kH2}), 2.0, 60);
  int cancelled_warmup = 0, profiled_ok = 0, profiled_cancelled = 0;
  for (const auto& rec : r.result.run.records) {
    const bool cancelled = rec.error && rec.error->code == 499;
    if (rec.phase == Phase::warmup && cancelled) ++cancelled_warmup;
    if (rec.phase == Phase::profiling) ++(cancelled ? profiled_cancelled : profiled_ok);
  }
  EXPECT_EQ(cancelled_warmup, 1);
  EXPECT_GT(profiled_ok, 0);
  EXPECT_EQ(profiled_cancelled, 0);
  EXPECT_NEAR(r.profile_start, 3.0, 1e-9);
}
