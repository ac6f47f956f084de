// Replay schedules on hand-written traces against a local server that
// answers at once (or, for one stream, slowly), with the expected send
// times worked out by hand from the recorded timestamps.
#include "replay/replay_outputs.h"
#include "replay/replay_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <mutex>
#include <thread>

#include "testserver/openai_scripts.h"
#include "testserver/scripted_server.h"
#include "trace/weka_trace.h"

using namespace agentperf;
using namespace std::chrono_literals;

namespace {
// Root call r0 at t=0 (api 0.05); subagent A (entry t 0.10): a0 at 0.10,
// a1 at 0.20 (api 0.05 each); root call r1 at 0.40 (api 0.01), joined on A
// (A's recorded end 0.25 <= 0.40); background B (entry 0.45): b0 at 0.45.
// AIPerf (branch_orchestrator.py _child_dispatch_offset_ms, weka_trace.py
// @ SemiAnalysisAI/aiperf 2141c621): a child's first call goes (its t - the
// entry t) after the spawning call completes. With instant answers: r0 at
// 0; a0 0.10-0.10 = 0 after r0; a1 0.20-0.15 = 0.05 after a0 (0.05); r1
// 0.40-0.05 = 0.35 after r0 (A is done by then); b0 0.45-0.45 = 0 after r1
// (0.35). Root and subagents are separate barrier scopes: no barriers. B
// ends the tree; the lane recycles to the next trace.
const char* kTree = R"({"id":"T1","block_size":4,"requests":[
  {"type":"n","t":0,"in":8,"out":2,"hash_ids":[0,1],"api_time":0.05},
  {"type":"subagent","t":0.1,"agent_id":"A","requests":[
     {"type":"n","t":0.10,"in":8,"out":2,"hash_ids":[0,5],"api_time":0.05},
     {"type":"n","t":0.20,"in":12,"out":2,"hash_ids":[0,5,6],"api_time":0.05}]},
  {"type":"n","t":0.40,"in":12,"out":2,"hash_ids":[0,1,2],"api_time":0.01},
  {"type":"subagent","t":0.45,"agent_id":"B","requests":[{"type":"n","t":0.45,"in":8,"out":1,"hash_ids":[0,7],"api_time":0.01}]}
]})";

struct Seen {
  std::string conversation;
  double at_s;
  std::string body;
  std::string routing_key;
};

class ReplayRecorder {
 public:
  testserver::Handler handler(std::chrono::nanoseconds slow_a = 0ns) {
    return [this, slow_a](const testserver::ReceivedRequest& req) {
      bool is_a = false;
      {
        std::lock_guard lk(mu);
        if (t0 == 0) t0 = req.received_ns;
        const std::string corr = req.header("x-correlation-id");
        seen.push_back({corr, static_cast<double>(req.received_ns - t0) / 1e9, req.body,
                        req.header("x-smg-routing-key")});
        // X-Correlation-ID is a UUID per stream: the first one seen is the
        // root's (r0), the second subagent A's (a0 goes next).
        if (std::find(corrs.begin(), corrs.end(), corr) == corrs.end()) corrs.push_back(corr);
        is_a = corrs.size() >= 2 && corr == corrs[1];
      }
      testserver::StreamScript s;
      s.chat = false;
      s.tokens = 2;
      if (is_a) s.ttft = slow_a;
      return testserver::openai_stream_response(s);
    };
  }
  std::vector<Seen> snapshot() {
    std::lock_guard lk(mu);
    return seen;
  }

 private:
  std::mutex mu;
  std::int64_t t0 = 0;
  std::vector<Seen> seen;
  std::vector<std::string> corrs;
};

// The requests' X-Correlation-IDs (UUIDs) as "<conversation>#<play>", from
// the run's records.
std::vector<Seen> relabel(std::vector<Seen> v, const replay::ReplayResult& res) {
  std::map<std::string, std::string> name;
  for (const auto& r : res.run.records)
    name[r.x_correlation_id] = r.conversation_id + "#" + std::to_string(r.session_num);
  for (auto& s : v)
    if (name.count(s.conversation)) s.conversation = name[s.conversation];
  return v;
}

replay::ReplayConfig config(const std::string& url, double duration) {
  replay::ReplayConfig c;
  c.client.url = url;
  c.client.endpoint_type = EndpointType::completions;
  c.output.quiet = true;
  c.lanes = 1;
  c.duration_s = duration;
  c.grace_s = 1;
  c.benchmark_id = "bench-1";
  c.warmup = false;  // the schedules below are of profiling; warmup has its own test
  return c;
}

// The token ids of a completions request's "prompt" array, as text.
std::vector<std::string> prompt_ids(const std::string& body) {
  std::vector<std::string> ids;
  std::string cur;
  for (std::size_t i = body.find("\"prompt\":[") + 10; i < body.size() && body[i] != ']'; ++i) {
    if (body[i] == ',') {
      ids.push_back(cur);
      cur.clear();
    } else {
      cur += body[i];
    }
  }
  ids.push_back(cur);
  return ids;
}

// The cache-bust marker's ids in a token-id prompt: five digits from 31000
// (trace/prompt_builder.h's marker range in these tests).
bool is_marker_id(const std::string& id) { return id.size() == 5 && id.rfind("31", 0) == 0; }

double first_send(const std::vector<Seen>& v, const std::string& conv_prefix, std::size_t nth = 0) {
  std::size_t k = 0;
  for (const auto& s : v)
    if (s.conversation.rfind(conv_prefix, 0) == 0 && k++ == nth) return s.at_s;
  return -1;
}
}  // namespace

TEST(Replay, SpawnJoinDelaysBackgroundAndRecycle) {
  ReplayRecorder rec;
  testserver::ScriptedServer server(rec.handler());
  server.start();
  std::vector<trace::WekaTrace> traces = {trace::parse_weka_trace(kTree, "t")};
  auto res = replay::run_replay(config(server.url(), 0.7), traces, "m");
  auto seen = relabel(rec.snapshot(), res);
  ASSERT_GE(seen.size(), 5u);
  EXPECT_EQ(seen[0].conversation, "T1#0");
  EXPECT_NEAR(first_send(seen, "T1::sa:A#0", 0), 0.0, 0.015);
  EXPECT_NEAR(first_send(seen, "T1::sa:A#0", 1), 0.05, 0.015);
  EXPECT_NEAR(first_send(seen, "T1#0", 1), 0.35, 0.015);
  EXPECT_NEAR(first_send(seen, "T1::sa:B#0", 0), 0.35, 0.015);
  // Recycled: the second play of the trace starts when B is back.
  EXPECT_NEAR(first_send(seen, "T1#1", 0), 0.35, 0.015);
  EXPECT_GE(res.plays_started, 2);
  EXPECT_GE(res.plays_finished, 1);
  // Cut-off: nothing is sent after the duration.
  for (const auto& s : seen) EXPECT_LT(s.at_s, 0.72);
  for (const auto& r : res.run.records) ASSERT_TRUE(r.ok()) << r.error->message;
}

TEST(Replay, JoinWaitsForSlowChildren) {
  ReplayRecorder rec;
  testserver::ScriptedServer server(rec.handler(300ms));  // each A call takes 0.3 s
  server.start();
  std::vector<trace::WekaTrace> traces = {trace::parse_weka_trace(kTree, "t")};
  auto res = replay::run_replay(config(server.url(), 1.2), traces, "m");
  auto seen = relabel(rec.snapshot(), res);
  // a0 at 0 ends 0.30; a1 at 0.35 ends 0.65: r1 waits for the join (not
  // its own 0.35).
  EXPECT_NEAR(first_send(seen, "T1::sa:A#0", 1), 0.35, 0.02);
  EXPECT_NEAR(first_send(seen, "T1#0", 1), 0.65, 0.02);
}

TEST(Replay, IdleCapsShortenLongGaps) {
  const char* gap = R"({"id":"G","block_size":4,"requests":[
    {"type":"n","t":0,"in":4,"out":1,"hash_ids":[0],"api_time":0.01},
    {"type":"n","t":30.01,"in":8,"out":1,"hash_ids":[0,1],"api_time":0.01}]})";
  ReplayRecorder rec;
  testserver::ScriptedServer server(rec.handler());
  server.start();
  std::vector<trace::WekaTrace> traces = {trace::parse_weka_trace(gap, "t")};
  auto c = config(server.url(), 1.0);
  c.system_idle_cap_s = 0.2;  // nothing in flight anywhere: a 30 s gap becomes 0.2 s
  auto res = replay::run_replay(c, traces, "m");
  auto seen = relabel(rec.snapshot(), res);
  EXPECT_NEAR(first_send(seen, "G#0", 1), 0.2, 0.02);
  EXPECT_GT(res.idle_skipped_s, 29.0);

  // The per-tree cap applies while another tree keeps the system busy.
  ReplayRecorder rec2;
  testserver::ScriptedServer server2(rec2.handler());
  server2.start();
  auto c2 = config(server2.url(), 1.0);
  c2.tree_idle_cap_s = 0.3;
  c2.system_idle_cap_s = 100;
  auto res2 = replay::run_replay(c2, traces, "m");
  EXPECT_NEAR(first_send(relabel(rec2.snapshot(), res2), "G#0", 1), 0.3, 0.02);
}

TEST(Replay, CacheBustMarkerPerPlayAndSharedByTheTree) {
  EXPECT_EQ(replay::cache_bust_marker("b", 0, 0, "T").size(), 18u);
  EXPECT_NE(replay::cache_bust_marker("b", 0, 0, "T"), replay::cache_bust_marker("b", 1, 0, "T"));
  EXPECT_NE(replay::cache_bust_marker("b", 0, 0, "T"), replay::cache_bust_marker("c", 0, 0, "T"));
  ReplayRecorder rec;
  testserver::ScriptedServer server(rec.handler());
  server.start();
  std::vector<trace::WekaTrace> traces = {trace::parse_weka_trace(kTree, "t")};
  auto res = replay::run_replay(config(server.url(), 0.7), traces, "m");
  auto seen = relabel(rec.snapshot(), res);
  // Token-id marker: six ids from the digest, the same across the tree's
  // streams in one play, different in the next play.
  auto marker_of = [](const std::string& body) {
    std::string m;
    for (const auto& id : prompt_ids(body))
      if (is_marker_id(id)) m += id + ",";
    return m;
  };
  std::map<std::string, std::string> by_conv;
  for (const auto& s : seen) by_conv[s.conversation] = marker_of(s.body);
  ASSERT_FALSE(by_conv["T1#0"].empty());
  EXPECT_EQ(by_conv["T1#0"], by_conv["T1::sa:A#0"]);
  EXPECT_EQ(by_conv["T1#0"], by_conv["T1::sa:B#0"]);
  if (by_conv.count("T1#1")) {
    EXPECT_NE(by_conv["T1#0"], by_conv["T1#1"]);
  }
}

// The marker opens each stream's first user message: after the root's
// declared system blocks (8 tokens = 2 blocks of 4 here) in every root turn,
// and at the very front of every turn of a subagent that declares no prefix
// of its own (AIPerf never gives a subagent the trace's system message). It
// once followed the trace's system blocks in subagent streams too, and so
// sat at token 8 of a subagent's longer turns but at token 4 of its 2-block
// first turn (capped before the last piece): a marker that moved between
// turns of one stream broke that stream's prefix reuse.
TEST(Replay, CacheBustMarkerOpensEachStreamsFirstUserMessage) {
  const char* j = R"({"id":"M","block_size":4,"system_tokens":8,"requests":[
    {"type":"n","t":0,"in":12,"out":2,"hash_ids":[0,1,2],"api_time":0.05},
    {"type":"subagent","t":0.1,"agent_id":"A","requests":[
       {"type":"n","t":0.10,"in":8,"out":2,"hash_ids":[40,41],"api_time":0.05},
       {"type":"n","t":0.20,"in":16,"out":2,"hash_ids":[40,41,42,43],"api_time":0.05},
       {"type":"n","t":0.30,"in":20,"out":2,"hash_ids":[40,41,42,43,44],"api_time":0.05}]},
    {"type":"n","t":0.40,"in":16,"out":2,"hash_ids":[0,1,2,3],"api_time":0.01}]})";
  ReplayRecorder rec;
  testserver::ScriptedServer server(rec.handler());
  server.start();
  std::vector<trace::WekaTrace> traces = {trace::parse_weka_trace(j, "t")};
  auto res = replay::run_replay(config(server.url(), 0.45), traces, "m");
  auto seen = relabel(rec.snapshot(), res);
  // The index in the token-id prompt of the marker's first id; -1 when absent.
  auto marker_at = [](const std::string& body) {
    const auto ids = prompt_ids(body);
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (is_marker_id(ids[i])) return static_cast<int>(i);
    return -1;
  };
  int root_turns = 0, sub_turns = 0;
  for (const auto& s : seen) {
    if (s.conversation.rfind("M#0", 0) == 0 && s.conversation == "M#0") {
      EXPECT_EQ(marker_at(s.body), 8) << s.body;
      ++root_turns;
    } else if (s.conversation.rfind("M::sa:A#0", 0) == 0) {
      EXPECT_EQ(marker_at(s.body), 0) << s.body;
      ++sub_turns;
    }
  }
  EXPECT_EQ(root_turns, 2);
  EXPECT_EQ(sub_turns, 3);
}

TEST(Replay, GraceExpiryCancelsInFlight) {
  const char* slow = R"({"id":"S","block_size":4,"requests":[{"type":"n","t":0,"in":4,"out":1,"hash_ids":[0],"api_time":5}]})";
  ReplayRecorder rec;
  testserver::ScriptedServer server(rec.handler());
  server.start();
  testserver::ScriptedServer slow_server([](const testserver::ReceivedRequest&) {
    testserver::StreamScript s;
    s.chat = false;
    s.ttft = 3s;
    return testserver::openai_stream_response(s);
  });
  slow_server.start();
  std::vector<trace::WekaTrace> traces = {trace::parse_weka_trace(slow, "t")};
  auto c = config(slow_server.url(), 0.2);
  c.grace_s = 0.2;
  const auto t0 = std::chrono::steady_clock::now();
  auto res = replay::run_replay(c, traces, "m");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
  ASSERT_EQ(res.run.records.size(), 1u);
  ASSERT_FALSE(res.run.records[0].ok());
  EXPECT_EQ(res.run.records[0].error->code, 499);
}

#include "metrics/inferencex_aggregate.h"
#include "sim/sim_server.h"
#include "support/sim_backend.h"
#include "trace/synth.h"

TEST(Replay, SixtyFourLanesAgainstTheSimulator) {
  trace::SynthOptions o;
  o.traces = 80;
  o.mean_turns = 6;
  o.system_tokens = 3000;
  o.tool_tokens = 1000;
  o.mean_turn_input = 600;
  o.mean_output = 60;
  o.max_context = 30000;
  o.mean_think_time = 1.0;
  o.subagent_probability = 0.3;
  auto traces = trace::synthesize_traces(o);
  auto backend = test_support::start_sim_backend(20);
  auto& server = *backend;
  auto c = config(server.url(), 2.0);
  c.lanes = 64;
  c.grace_s = 5;
  c.system_idle_cap_s = 0.5;
  auto res = replay::run_replay(c, traces, "Qwen/Qwen3-8B");
  server.stop();
  ASSERT_GT(res.run.records.size(), 100u);
  std::set<std::string> roots;
  bool subagents = false;
  for (const auto& r : res.run.records) {
    ASSERT_TRUE(r.ok()) << r.error->message;
    roots.insert(r.root_correlation_id);
    subagents = subagents || r.conversation_id.find("::sa:") != std::string::npos;
    EXPECT_EQ(*r.usage_prompt_tokens, r.requested_isl);  // exact prompts: the server counts what we built
  }
  EXPECT_GE(roots.size(), 64u);
  EXPECT_TRUE(subagents);
  InferenceXInputs ix;
  const auto th = replay::theoretical_hit_of_records(res.run.records, traces);
  ix.theoretical_hit_blocks = th.hit_blocks;
  ix.theoretical_total_blocks = th.total_blocks;
  auto agg = inferencex_request_metrics(res.run.records, ix);
  EXPECT_TRUE(agg["validity"]["valid"].get<bool>());
  EXPECT_GT(agg["throughput"]["per_gpu"]["total_tput_tps"].get<double>(), 0);
  EXPECT_GT(agg["cache"]["observed_cache_hit_rate"].get<double>(), 0.3);  // later turns reuse earlier ones
  EXPECT_GT(agg["cache"]["theoretical_cache_hit_rate"].get<double>(),
            agg["cache"]["observed_cache_hit_rate"].get<double>() - 0.05);
  for (const char* k : {"ttft", "e2el", "itl", "intvty", "e2e_norm_intvty", "full_response_itl"})
    EXPECT_FALSE(agg["latency"][k].is_null()) << k;
  std::printf("64 lanes: %zu requests, %zu trees, observed hit %.3f, theoretical %.3f\n", res.run.records.size(),
              roots.size(), agg["cache"]["observed_cache_hit_rate"].get<double>(),
              agg["cache"]["theoretical_cache_hit_rate"].get<double>());
}

TEST(Replay, WarmupPrimersPressureAndRecordedClockHandoff) {
  // Root calls at 0, 0.1, 0.2, 0.3, 0.4 (10 ms each). t* = half the span of
  // recorded starts (0.2 s; AIPerf trajectory_source.py): calls 0-1 are
  // history; call 1 goes out first as the primer (1 token), call 2 as the
  // lane's one pressure request (1 token, no delay); at the handoff call 3
  // is due at its timestamp - t* = 0.1 s less the phase-wide minimum (its
  // own 0.1 s), so at once (AIPerf agentic_replay.py _build_handoff_states,
  // _profiling_phase_t0_offset_ms); call 4 then keeps its recorded delay,
  // 0.4 - 0.31 = 0.09 s after call 3 came back.
  const char* five = R"({"id":"W","block_size":4,"requests":[
    {"type":"n","t":0.0,"in":4,"out":3,"hash_ids":[0],"api_time":0.01},
    {"type":"n","t":0.1,"in":8,"out":3,"hash_ids":[0,1],"api_time":0.01},
    {"type":"n","t":0.2,"in":12,"out":3,"hash_ids":[0,1,2],"api_time":0.01},
    {"type":"n","t":0.3,"in":16,"out":3,"hash_ids":[0,1,2,3],"api_time":0.01},
    {"type":"n","t":0.4,"in":20,"out":3,"hash_ids":[0,1,2,3,4],"api_time":0.01}]})";
  ReplayRecorder rec;
  testserver::ScriptedServer server(rec.handler());
  server.start();
  std::vector<trace::WekaTrace> traces = {trace::parse_weka_trace(five, "t")};
  auto c = config(server.url(), 0.3);
  c.warmup = true;
  c.t_star_min = c.t_star_max = 0.5;
  c.warmup_requests_per_lane = 1;
  auto res = replay::run_replay(c, traces, "m");
  ASSERT_GE(res.run.records.size(), 4u);
  EXPECT_EQ(res.warmup_primers, 1);
  EXPECT_EQ(res.warmup_pressure, 1);
  const auto& r = res.run.records;
  EXPECT_EQ(r[0].turn_index, 1);
  EXPECT_EQ(r[0].phase, Phase::warmup);
  EXPECT_EQ(r[0].requested_osl, 1);
  EXPECT_EQ(r[1].turn_index, 2);
  EXPECT_EQ(r[1].phase, Phase::warmup);
  EXPECT_EQ(r[1].requested_osl, 1);
  EXPECT_EQ(r[2].turn_index, 3);
  EXPECT_EQ(r[2].phase, Phase::profiling);
  EXPECT_EQ(r[2].requested_osl, 3);
  EXPECT_NEAR(static_cast<double>(r[2].start_ns - r[1].end_ns) / 1e9, 0.0, 0.015);
  EXPECT_EQ(r[3].turn_index, 4);
  EXPECT_NEAR(static_cast<double>(r[3].start_ns - r[2].end_ns) / 1e9, 0.09, 0.015);
  auto seen = rec.snapshot();
  EXPECT_NE(seen[0].body.find("\"max_tokens\":1,"), std::string::npos);
}

TEST(Replay, FailedRootPrimerAbortsTheRun) {
  testserver::ScriptedServer server([](const testserver::ReceivedRequest&) {
    testserver::ScriptedResponse r;
    r.status = 500;
    r.reason = "Internal Server Error";
    r.framing = testserver::ScriptedResponse::Framing::content_length;
    r.steps.push_back({0ns, "engine down"});
    return r;
  });
  server.start();
  std::vector<trace::WekaTrace> traces = {trace::parse_weka_trace(kTree, "t")};
  auto c = config(server.url(), 1.0);
  c.warmup = true;
  c.t_star_min = c.t_star_max = 0.5;
  auto res = replay::run_replay(c, traces, "m");
  EXPECT_NE(res.abort_reason.find("warmup failed"), std::string::npos) << res.abort_reason;
  EXPECT_NE(res.abort_reason.find("engine down"), std::string::npos) << res.abort_reason;
}

TEST(Replay, RoutingHeadersKeepATreeOnOneKey) {
  ReplayRecorder rec;
  testserver::ScriptedServer server(rec.handler());
  server.start();
  std::vector<trace::WekaTrace> traces = {trace::parse_weka_trace(kTree, "t")};
  auto c = config(server.url(), 0.5);
  c.routing_headers = true;
  auto res = replay::run_replay(c, traces, "m");
  auto seen = relabel(rec.snapshot(), res);
  ASSERT_GE(seen.size(), 4u);
  // The key is the tree's root_correlation_id: the root stream's
  // X-Correlation-ID (a UUID), for root and subagents alike.
  std::string root_corr;
  for (const auto& r : res.run.records)
    if (r.conversation_id == "T1" && r.session_num == 0) root_corr = r.x_correlation_id;
  ASSERT_FALSE(root_corr.empty());
  for (const auto& s : seen) {
    if (s.conversation.find("#0") == std::string::npos) continue;
    EXPECT_EQ(s.routing_key, root_corr) << s.conversation;
  }
}

TEST(Replay, RootAndSubagentStreamsNeverGateEachOther) {
  // Root r0 (0, 0.01) spawns B (entry 0.02): b0 at 0.02, b1 at 0.30. B was
  // still running when r1 started (0.05), so r1 does not join it and, with
  // no later root call, B runs in the background. Root r1 at 0.05 takes
  // 0.3 s (slow server for the root's second call) and was recorded
  // complete (0.25) before b1 started (0.30). AIPerf keeps the root and each
  // subagent in separate replay scopes (weka_trace.py
  // _replay_scope_for_session / _install_replay_dependencies @
  // SemiAnalysisAI/aiperf 2141c621): no barrier between them, so b1 goes at
  // its own delay, 0.30 - 0.03 = 0.27 s after b0 (sent at once: 0.02 - 0.02
  // after r0), at ~0.27, while r1 is still running (back at ~0.34).
  const char* bg = R"({"id":"P","block_size":4,"requests":[
    {"type":"n","t":0,"in":4,"out":1,"hash_ids":[0],"api_time":0.01},
    {"type":"subagent","t":0.02,"agent_id":"B","requests":[
       {"type":"n","t":0.02,"in":4,"out":1,"hash_ids":[0],"api_time":0.01},
       {"type":"n","t":0.30,"in":8,"out":1,"hash_ids":[0,3],"api_time":0.01}]},
    {"type":"n","t":0.05,"in":8,"out":1,"hash_ids":[0,1],"api_time":0.20}]})";
  std::mutex mu;
  std::vector<Seen> seen;
  std::int64_t t0 = 0;
  std::string root_corr;
  testserver::ScriptedServer server([&](const testserver::ReceivedRequest& req) {
    const std::string conv = req.header("x-correlation-id");
    testserver::StreamScript s;
    s.chat = false;
    s.tokens = 1;
    std::lock_guard lk(mu);
    if (t0 == 0) t0 = req.received_ns;
    if (root_corr.empty()) root_corr = conv;  // r0 goes first
    seen.push_back({conv, static_cast<double>(req.received_ns - t0) / 1e9, req.body, ""});
    // The root's second call is slow.
    int n = 0;
    for (const auto& x : seen) n += x.conversation == root_corr;
    if (conv == root_corr && n == 2) s.ttft = 300ms;
    return testserver::openai_stream_response(s);
  });
  server.start();
  std::vector<trace::WekaTrace> traces = {trace::parse_weka_trace(bg, "t")};
  auto c = config(server.url(), 0.6);
  auto res = replay::run_replay(c, traces, "m");
  std::lock_guard lk(mu);
  const auto named = relabel(seen, res);
  double r1 = -1, b1 = -1;
  int roots = 0, bs = 0;
  for (const auto& s : named) {
    if (s.conversation == "P#0" && roots++ == 1) r1 = s.at_s;
    if (s.conversation == "P::sa:B#0" && bs++ == 1) b1 = s.at_s;
  }
  ASSERT_GE(r1, 0);
  ASSERT_GE(b1, 0);
  EXPECT_NEAR(r1, 0.04, 0.02);
  EXPECT_NEAR(b1, 0.27, 0.02);  // not held until r1 came back (~0.34)
}

TEST(Replay, StopSignalEndsTheRunAndCancelsInFlight) {
  trace::SynthOptions o;
  o.traces = 8;
  o.mean_turns = 20;
  o.system_tokens = 500;
  o.tool_tokens = 100;
  o.mean_turn_input = 300;
  o.mean_output = 2000;  // long streams: requests are in flight when the stop comes
  o.max_context = 30000;
  o.mean_think_time = 0.2;
  auto traces = trace::synthesize_traces(o);
  auto backend = test_support::start_sim_backend(1);
  auto& server = *backend;
  auto c = config(server.url(), 60.0);
  c.lanes = 4;
  c.grace_s = 60;
  c.stop = std::make_shared<replay::StopSignal>();
  std::thread stopper([s = c.stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    s->request("short-circuited: test");
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto res = replay::run_replay(c, traces, "Qwen/Qwen3-8B");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stopper.join();
  server.stop();
  EXPECT_EQ(res.abort_reason, "short-circuited: test");
  EXPECT_LT(took, 5.0);  // not the 60 s duration, nor the 60 s grace
  std::size_t cancelled = 0;
  for (const auto& r : res.run.records) cancelled += r.error && r.error->code == 499;
  EXPECT_GE(cancelled, 1u);  // the streams in flight were cancelled, and recorded
}
