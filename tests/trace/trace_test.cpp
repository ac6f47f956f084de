// Weka traces: parsing and its errors, filters, zstd, session-tree topology
// with hand-computed delays and barriers, prompt reconstruction, synthesis.
#include "support/subagent_trace.h"
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <unistd.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/error.h"
#include "trace/idle_gap_warp.h"
#include "trace/prompt_builder.h"
#include "trace/session_tree.h"
#include "trace/synth.h"
#include "trace/trace_loader.h"

using namespace agentperf;
using namespace agentperf::trace;

namespace {
// root call 0 at t=0 (2 s); subagent A (calls at 3 and 5, 1 s each); root
// call 1 at t=10 (1 s); subagent B at 12 (background: no root call after it).
// A subagent before the first root call has no parent turn: dropped.
const char* kTrace = R"({"id":"tr1","block_size":4,"requests":[
  {"type":"subagent","agent_id":"early","requests":[{"t":0,"in":4,"out":1,"hash_ids":[9],"api_time":0.5}]},
  {"type":"n","t":0,"in":8,"out":3,"hash_ids":[0,1],"api_time":2},
  {"type":"subagent","t":3,"agent_id":"A","requests":[
     {"type":"n","t":3,"in":6,"out":2,"hash_ids":[0,5],"api_time":1},
     {"type":"n","t":5,"in":10,"out":2,"hash_ids":[0,5,6],"api_time":1}]},
  {"type":"s","t":10,"in":14,"out":4,"hash_ids":[0,1,2,3],"api_time":1},
  {"type":"subagent","t":12,"agent_id":"B","requests":[{"type":"n","t":12,"in":5,"out":1,"hash_ids":[0,7],"api_time":1}]}
]})";

std::string expect_error(const std::string& json) {
  try {
    parse_weka_trace(json, "f.jsonl:3");
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

std::filesystem::path temp(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("agentperf_trace_" + std::to_string(::getpid()) + "_" + name);
}
}  // namespace

TEST(WekaTrace, ParsesCallsAndSubagents) {
  auto t = parse_weka_trace(kTrace, "x");
  EXPECT_EQ(t.id, "tr1");
  EXPECT_EQ(t.block_size, 4);
  ASSERT_EQ(t.entries.size(), 5u);
  EXPECT_TRUE(t.entries[0].is_subagent);
  EXPECT_EQ(t.entries[2].subagent.calls.size(), 2u);
  EXPECT_TRUE(t.entries[3].call.streaming);
  EXPECT_EQ(t.request_count(), 6);
  EXPECT_EQ(t.peak_context(), 18);
}

TEST(WekaTrace, ErrorsNameFileTraceRequestAndField) {
  auto e = expect_error(R"({"id":"abc","requests":[{"t":0,"out":1,"hash_ids":[]}]})");
  EXPECT_NE(e.find("f.jsonl:3"), std::string::npos) << e;
  EXPECT_NE(e.find("trace abc"), std::string::npos) << e;
  EXPECT_NE(e.find("request 0"), std::string::npos) << e;
  EXPECT_NE(e.find("missing field 'in'"), std::string::npos) << e;
  e = expect_error(R"({"id":"abc","requests":[{"t":0,"in":500,"out":1,"hash_ids":[1,"x"]}]})");
  EXPECT_NE(e.find("'hash_ids' must hold integers"), std::string::npos) << e;
  e = expect_error(R"({"id":"abc","requests":[{"type":"subagent","agent_id":"q","requests":[{"t":1,"in":"many","out":1,"hash_ids":[]}]}]})");
  EXPECT_NE(e.find("subagent 'q'"), std::string::npos) << e;
  EXPECT_NE(e.find("field 'in' must be an integer"), std::string::npos) << e;
  e = expect_error(R"({"requests":[]})");
  EXPECT_NE(e.find("missing field 'id'"), std::string::npos) << e;
  e = expect_error("{\"id\":\"z\",\"requests\":[{\"type\":\"weird\"}]}");
  EXPECT_NE(e.find("unknown type 'weird'"), std::string::npos) << e;
  EXPECT_NE(expect_error("{not json").find("not valid JSON"), std::string::npos);
}

TEST(SessionTree, SpawnJoinBackgroundDelaysAndBarriers) {
  auto t = parse_weka_trace(kTrace, "x");
  auto tree = build_session_tree(t);
  EXPECT_EQ(tree.dropped_subagents, 1);
  ASSERT_EQ(tree.streams.size(), 3u);
  const auto& root = tree.streams[0];
  const auto& a = tree.streams[1];
  const auto& b = tree.streams[2];
  EXPECT_EQ(a.conversation_id, "tr1::sa:A");
  ASSERT_EQ(root.turns.size(), 2u);
  EXPECT_EQ(root.turns[0].spawns, std::vector<int>{1});
  EXPECT_EQ(root.turns[1].joins, std::vector<int>{1});  // root call 1 waits for A
  EXPECT_EQ(root.turns[1].spawns, std::vector<int>{2});
  EXPECT_FALSE(a.background);
  EXPECT_TRUE(b.background);
  // End-to-start delays: root 10 - (0 + 2) = 8; A's 5 - (3 + 1) = 1. A
  // child's first call goes (its t - the entry t) after the spawning call
  // completes (branch_orchestrator.py _child_dispatch_offset_ms): A 3 - 3 =
  // 0, B 12 - 12 = 0.
  EXPECT_DOUBLE_EQ(root.turns[1].start_delay_s, 8);
  EXPECT_DOUBLE_EQ(a.turns[0].start_delay_s, 0);
  EXPECT_DOUBLE_EQ(a.turns[1].start_delay_s, 1);
  EXPECT_DOUBLE_EQ(b.turns[0].start_delay_s, 0);
  EXPECT_EQ(a.depth, 1);
  EXPECT_EQ(a.parent, 0);
  // Barrier scopes (weka_trace.py _replay_scope_for_session): the root, A and
  // B are three scopes of one stream each, so no barriers at all.
  EXPECT_EQ(a.replay_scope, "tr1::sa:A");
  EXPECT_EQ(root.replay_scope, "tr1");
  for (const auto& s : tree.streams)
    for (const auto& turn : s.turns) EXPECT_TRUE(turn.barriers.empty()) << s.conversation_id;
  // Theoretical hits in time order: r0 [0,1] 0; A0 [0,5] 1; A1 [0,5,6] 2;
  // r1 [0,1,2,3] 2; B0 [0,7] 1.
  EXPECT_EQ(root.turns[0].theoretical_hit_blocks, 0);
  EXPECT_EQ(a.turns[0].theoretical_hit_blocks, 1);
  EXPECT_EQ(a.turns[1].theoretical_hit_blocks, 2);
  EXPECT_EQ(root.turns[1].theoretical_hit_blocks, 2);
  EXPECT_EQ(b.turns[0].theoretical_hit_blocks, 1);
  // LCP with the previous turn of the stream; the previous answer (3 tokens
  // -> 1 block of 4) is the first new block.
  EXPECT_EQ(root.turns[1].lcp_blocks, 2);
  EXPECT_EQ(root.turns[1].assistant_blocks, 1);
  EXPECT_DOUBLE_EQ(tree.t_begin, 0);
  EXPECT_DOUBLE_EQ(tree.t_end, 13);
}

TEST(TraceLoader, FiltersAndZstdAndDirectories) {
  const auto dir = temp("dir");
  std::filesystem::create_directories(dir);
  const std::string big = R"({"id":"big","requests":[{"t":0,"in":255000,"out":2000,"hash_ids":[1]},{"t":5,"in":100,"out":10,"hash_ids":[1]}]})";
  const std::string small = R"({"id":"small","requests":[{"t":0,"in":100,"out":10,"hash_ids":[1]}]})";
  std::ofstream(dir / "a.jsonl") << big << "\n\n" << small << "\n";
  const std::string small2 = R"({"id":"small2","requests":[{"t":0,"in":100,"out":10,"hash_ids":[1]}]})";
  std::string packed(ZSTD_compressBound(small2.size()), '\0');
  packed.resize(ZSTD_compress(packed.data(), packed.size(), small2.data(), small2.size(), 1));
  std::ofstream(dir / "b.json.zst", std::ios::binary) << packed;
  std::ofstream(dir / "ignored.txt") << "x";

  LoadStats stats;
  auto all = load_weka_traces(dir.string(), {}, &stats);
  EXPECT_EQ(all.size(), 3u);
  EXPECT_EQ(stats.files, 2);
  LoadOptions o;
  o.variant_256k = true;
  auto cut = load_weka_traces(dir.string(), o, &stats);
  ASSERT_EQ(cut.size(), 3u);
  EXPECT_EQ(cut[0].request_count(), 1);  // the 257k-token call went
  EXPECT_EQ(stats.dropped_256k_requests, 1);
  LoadOptions ctx;
  ctx.max_context_length = 200000;
  ctx.num_dataset_entries = 1;
  auto filtered = load_weka_traces(dir.string(), ctx, &stats);
  ASSERT_EQ(filtered.size(), 1u);
  EXPECT_EQ(filtered[0].id, "small");
  EXPECT_EQ(stats.dropped_by_context, 1);

  std::ofstream(dir / "c.jsonl") << R"({"id":"small3","requests":[{"t":0,"in":100,"out":10,"hash_ids":[1]}]})" << "\n"
                                << R"({"id":"bad","requests":[{"t":0}]})" << "\n";
  try {
    load_weka_traces(dir.string(), {});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("c.jsonl:2"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "d.jsonl.zst", std::ios::binary) << "not zstd at all";
  EXPECT_THROW(read_maybe_zstd((dir / "d.jsonl.zst").string()), UserError);
  EXPECT_THROW(load_weka_traces((dir / "missing").string(), {}), UserError);
  std::filesystem::remove_all(dir);
}

TEST(PromptBuilder, ExactLengthAndSharedBlocksAcrossTurns) {
  auto t = parse_weka_trace(kTrace, "x");
  auto tree = build_session_tree(t);
  PromptBuilder b(t, 7);
  auto count_items = [](const PromptPieces& p) {
    std::string s;
    for (const auto& piece : p.pieces) s += *piece;
    return std::count(s.begin(), s.end(), ',') + 1;
  };
  const auto& root = tree.streams[0];
  auto p0 = b.build(*root.turns[0].call, {0, 0});  // in 8 = blocks 0,1
  auto p1 = b.build(*root.turns[1].call, {0, 1});  // in 14 = blocks 0,1,2 + 2 of block 3
  EXPECT_EQ(count_items(p0), 8);
  EXPECT_EQ(count_items(p1), 14);
  EXPECT_EQ(p0.pieces[0].get(), p1.pieces[0].get());  // the same buffer, not a copy
  // Subagent A shares block 0 with the root (one namespace per trace).
  auto a0 = b.build(*tree.streams[1].turns[0].call, {1, 0});  // in 6 = block 0 + 2 of block 5
  EXPECT_EQ(a0.pieces[0].get(), p1.pieces[0].get());
  EXPECT_EQ(count_items(a0), 6);
  // A partial block is the start of the full block.
  auto a1 = b.build(*tree.streams[1].turns[1].call, {1, 1});  // in 10 = blocks 0,5 + 2 of block 6
  const auto block5 = b.block_tokens(5);
  EXPECT_EQ(*a0.pieces[1], std::to_string(block5[0]) + "," + std::to_string(block5[1]));
  EXPECT_EQ(count_items(a1), 10);
  // Another trace with the same hash ids gets other tokens.
  auto other = parse_weka_trace(R"({"id":"tr2","block_size":4,"requests":[{"t":0,"in":8,"out":1,"hash_ids":[0,1]}]})", "y");
  PromptBuilder b2(other, 7);
  EXPECT_NE(b2.block_tokens(0), b.block_tokens(0));
}

TEST(Synth, DeterministicRoundTripAndShaped) {
  SynthOptions o;
  o.traces = 6;
  o.seed = 5;
  o.mean_turns = 30;
  auto a = synthesize_traces(o);
  auto b = synthesize_traces(o);
  ASSERT_EQ(a.size(), 6u);
  std::int64_t requests = 0, subagents = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string line = to_json_line(a[i]);
    EXPECT_EQ(line, to_json_line(b[i]));
    auto back = parse_weka_trace(line, "synth");
    EXPECT_EQ(to_json_line(back), line);
    EXPECT_LE(a[i].peak_context(), o.max_context);
    requests += a[i].request_count();
    for (const auto& e : a[i].entries) subagents += e.is_subagent;
    // Each top-level call extends the previous one's blocks (or compacts).
    const TraceCall* prev = nullptr;
    for (const auto& e : a[i].entries) {
      if (e.is_subagent) continue;
      EXPECT_EQ(static_cast<std::int64_t>(e.call.hash_ids.size()), e.call.in / 64);  // whole blocks only
      if (prev) {
        EXPECT_GE(e.call.t, prev->t + prev->api_time);
      }
      prev = &e.call;
    }
  }
  EXPECT_GT(requests, 60);
  EXPECT_GT(subagents, 0);
  o.seed = 6;
  EXPECT_NE(to_json_line(synthesize_traces(o)[0]), to_json_line(a[0]));
}

TEST(TraceLoader, MooncakeSessionsBecomeTraces) {
  const auto path = temp("mooncake.jsonl");
  std::ofstream(path) << R"({"timestamp": 1000, "input_length": 600, "output_length": 20, "hash_ids": [0, 1], "session_id": "s1"})" << "\n"
                      << R"({"input_length": 1200, "output_length": 30, "hash_ids": [0, 1, 2], "session_id": "s1", "delay": 2500})" << "\n"
                      << R"({"timestamp": 4000, "input_length": 100, "output_length": 5, "hash_ids": [9]})" << "\n";
  auto traces = load_traces(path.string(), "auto", {});
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_EQ(traces[0].id, "s1");
  EXPECT_EQ(traces[0].block_size, 512);
  ASSERT_EQ(traces[0].entries.size(), 2u);
  EXPECT_DOUBLE_EQ(traces[0].entries[0].call.t, 0);
  EXPECT_DOUBLE_EQ(traces[0].entries[1].call.t, 2.5);  // 2.5 s after the previous turn (api_time 0)
  auto tree = build_session_tree(traces[0]);
  EXPECT_DOUBLE_EQ(tree.streams[0].turns[1].start_delay_s, 2.5);
  std::ofstream(path) << R"({"output_length": 20})" << "\n";
  try {
    load_mooncake_traces(path.string());
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(":1: missing field 'input_length'"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(PromptBuilder, ChatMessagesFollowLcpAndRecordedAnswers) {
  // System 8 tokens = 2 blocks of 4. Turn 0: 5 blocks -> system 2, user 3.
  // Turn 1 keeps all 5 (LCP 5), the previous answer (out 6 -> 2 blocks) is
  // assistant, then 1 user block and a 2-token tail. Turn 2 compacts: LCP 3
  // (system 2 + 1 user block), then answer (out 3 -> 1 block) and 2 user.
  const char* t3 = R"({"id":"C","block_size":4,"system_tokens":8,"requests":[
    {"t":0,"in":20,"out":6,"hash_ids":[0,1,2,3,4]},
    {"t":1,"in":34,"out":3,"hash_ids":[0,1,2,3,4,5,6,7,8]},
    {"t":2,"in":24,"out":1,"hash_ids":[0,1,2,9,10,11]}]})";
  auto t = parse_weka_trace(t3, "x");
  auto tree = build_session_tree(t);
  const auto& s = tree.streams[0];
  auto roles = [](const std::vector<MessageSpan>& v) {
    std::string r;
    for (const auto& m : v) r += std::string(m.role) + ":" + std::to_string(m.pieces) + " ";
    return r;
  };
  EXPECT_EQ(roles(segment_messages(s, 0, t, 5)), "system:2 user:3 ");
  EXPECT_EQ(roles(segment_messages(s, 1, t, 9)), "system:2 user:3 assistant:2 user:2 ");  // 1 block + the tail piece
  EXPECT_EQ(roles(segment_messages(s, 2, t, 6)), "system:2 user:1 assistant:1 user:2 ");
}

TEST(SessionTree, FlattenedAgentsSplitByPrefixEvidence) {
  // c0 [0,1] and c1 [0,1,2] are the main agent; c2 [0,1,9] starts while c1
  // runs and shares only its first two blocks: a spawned agent, continued
  // by c3 [0,1,9,10]; c4 [0,1,2,3] extends the main agent; c5 [0,20] shares
  // one block with it after it ended and nothing later returns to c4's
  // context: a compaction seam, the main agent again.
  const char* flat = R"({"id":"F","block_size":4,"requests":[
    {"t":0,"in":8,"out":1,"hash_ids":[0,1],"api_time":1},
    {"t":2,"in":12,"out":1,"hash_ids":[0,1,2],"api_time":1},
    {"t":2.5,"in":12,"out":1,"hash_ids":[0,1,9],"api_time":0.5},
    {"t":3.5,"in":16,"out":1,"hash_ids":[0,1,9,10],"api_time":0.5},
    {"t":4,"in":16,"out":1,"hash_ids":[0,1,2,3],"api_time":1},
    {"t":6,"in":8,"out":1,"hash_ids":[0,20],"api_time":1}]})";
  auto t = parse_weka_trace(flat, "x");
  auto tree = build_session_tree(t);
  ASSERT_EQ(tree.streams.size(), 2u);
  EXPECT_EQ(tree.flattened_agents, 1);
  EXPECT_EQ(tree.seams, 1);
  const auto& root = tree.streams[0];
  const auto& fa = tree.streams[1];
  ASSERT_EQ(root.turns.size(), 4u);
  EXPECT_DOUBLE_EQ(root.turns[3].call->t, 6);  // the seam stays on the main agent
  // weka_trace.py _worker_suffix: worker chains count from 000.
  EXPECT_EQ(fa.conversation_id, "F::fa:000");
  EXPECT_EQ(fa.replay_scope, "F");  // a top-level flattened agent shares the root's scope
  ASSERT_EQ(fa.turns.size(), 2u);
  EXPECT_DOUBLE_EQ(fa.turns[0].call->t, 2.5);
  // _reconstruct_serial (flat chains): spawned by the last root call before
  // its first call (c1), joined by the first later root call at or after
  // its end (c3 ends 4.0; c4 starts 4.0).
  EXPECT_EQ(fa.spawned_by, (TurnRef{0, 1}));
  EXPECT_EQ(root.turns[2].joins, std::vector<int>{1});
  EXPECT_FALSE(fa.background);
  // The branch starts at 2.5, before c1's recorded end (3.0): on_credit_issued
  // starts it when c1 is sent, its first call 2.5 - 2.0 = 0.5 s later.
  EXPECT_TRUE(fa.spawn_on_send);
  EXPECT_EQ(root.turns[1].spawns_on_send, std::vector<int>{1});
  EXPECT_TRUE(root.turns[1].spawns.empty());
  EXPECT_DOUBLE_EQ(fa.turns[0].start_delay_s, 0.5);
  // infer_cross_stream_predecessors in the root scope, intervals in ms: root
  // [0,1000] [2000,3000] [4000,5000] [6000,7000], fa [2500,3000] [3500,4000].
  EXPECT_TRUE(root.turns[0].barriers.empty());
  EXPECT_TRUE(root.turns[1].barriers.empty());
  EXPECT_EQ(root.turns[2].barriers, (std::vector<TurnRef>{{1, 1}}));  // fa1 ended at 4000 <= 4000
  EXPECT_EQ(root.turns[3].barriers, (std::vector<TurnRef>{{1, 1}}));
  EXPECT_EQ(fa.turns[0].barriers, (std::vector<TurnRef>{{0, 0}}));  // c1 still running at 2500
  EXPECT_EQ(fa.turns[1].barriers, (std::vector<TurnRef>{{0, 1}}));
  // Without the split every call is the root's.
  EXPECT_EQ(build_session_tree(t, false).streams[0].turns.size(), 6u);
}

TEST(SessionTree, RepeatedCompactionStaysOneAgent) {
  // System block 0. A long first context, a compaction to [0,10], growth,
  // and a second compaction to [0,20]: both shrinks tie on one shared block
  // with the long dead first context and with the live one; the live one
  // (most recent) continues.
  const char* twice = R"({"id":"K","block_size":4,"requests":[
    {"t":0,"in":20,"out":1,"hash_ids":[0,1,2,3,4],"api_time":1},
    {"t":2,"in":8,"out":1,"hash_ids":[0,10],"api_time":1},
    {"t":4,"in":12,"out":1,"hash_ids":[0,10,11],"api_time":1},
    {"t":6,"in":8,"out":1,"hash_ids":[0,20],"api_time":1},
    {"t":8,"in":12,"out":1,"hash_ids":[0,20,21],"api_time":1}]})";
  auto t = parse_weka_trace(twice, "x");
  auto tree = build_session_tree(t);
  EXPECT_EQ(tree.streams.size(), 1u);
  EXPECT_EQ(tree.streams[0].turns.size(), 5u);
  EXPECT_EQ(tree.seams, 2);
}

TEST(SessionTree, FlattenedAgentsInsideASubagentGroup) {
  const char* nested = R"({"id":"N","block_size":4,"requests":[
    {"t":0,"in":8,"out":1,"hash_ids":[0,1],"api_time":1},
    {"type":"subagent","t":1.5,"agent_id":"S","requests":[
      {"t":1.5,"in":8,"out":1,"hash_ids":[50,51],"api_time":1},
      {"t":2.0,"in":12,"out":1,"hash_ids":[50,51,60],"api_time":0.2},
      {"t":3.0,"in":12,"out":1,"hash_ids":[50,51,52],"api_time":1}]},
    {"t":5,"in":12,"out":1,"hash_ids":[0,1,2],"api_time":1}]})";
  auto t = parse_weka_trace(nested, "x");
  auto tree = build_session_tree(t);
  ASSERT_EQ(tree.streams.size(), 3u);
  EXPECT_EQ(tree.streams[1].conversation_id, "N::sa:S");
  EXPECT_EQ(tree.streams[1].turns.size(), 2u);  // 1.5 and 3.0: the 2.0 call forked while 1.5 ran
  // _expand_subagent_to_child_plans: "::sa:<id>:fa:NNN", a sibling child of
  // the root in the same branch (spawned by r0, joined by r1), in S's scope.
  EXPECT_EQ(tree.streams[2].conversation_id, "N::sa:S:fa:000");
  EXPECT_EQ(tree.streams[2].parent, 0);
  EXPECT_EQ(tree.streams[2].depth, 1);
  EXPECT_EQ(tree.streams[2].replay_scope, "N::sa:S");
  EXPECT_EQ(tree.streams[2].spawned_by, (TurnRef{0, 0}));
  EXPECT_EQ(tree.streams[0].turns[0].spawns, (std::vector<int>{1, 2}));
  EXPECT_EQ(tree.streams[0].turns[1].joins, (std::vector<int>{1, 2}));  // S ended at 4.0 (no duration_ms)
  // Offsets from the entry t 1.5: 0 and 0.5.
  EXPECT_DOUBLE_EQ(tree.streams[1].turns[0].start_delay_s, 0);
  EXPECT_DOUBLE_EQ(tree.streams[2].turns[0].start_delay_s, 0.5);
  // Within S's scope: its 3.0 call follows the fork's [2000,2200].
  EXPECT_EQ(tree.streams[1].turns[1].barriers, (std::vector<TurnRef>{{2, 0}}));
  EXPECT_TRUE(tree.streams[2].turns[0].barriers.empty());  // S's 1.5 call still running at 2.0
  EXPECT_TRUE(tree.streams[0].turns[1].barriers.empty());  // the root is a scope of its own
}

// Each stream's system message is its own declared prefix, never the
// trace's fabricated onto a subagent (weka_synth_buf.py @ 08ec06877e94
// init_turn_0; weka_trace.py @ 2141c6217b7f _chain_init_tokens): the root
// has the trace's 8 + 4 tokens = 3 blocks of 4; subagent S declares none
// (all user content), subagent D declares 5 tokens = 2 blocks; D's forked
// chain starts with D's first two blocks and inherits them; S's forked
// chain has no declared prefix to inherit; the root's flattened chain
// (other first blocks) inherits nothing either.
TEST(SessionTree, EachStreamHasItsOwnDeclaredSystemPrefix) {
  const char* j = R"({"id":"P","block_size":4,"tool_tokens":8,"system_tokens":4,"requests":[
    {"t":0,"in":20,"out":1,"hash_ids":[0,1,2,3,4],"api_time":1},
    {"type":"subagent","t":1.5,"agent_id":"S","requests":[
      {"t":1.5,"in":8,"out":1,"hash_ids":[50,51],"api_time":1},
      {"t":2.0,"in":12,"out":1,"hash_ids":[50,51,60],"api_time":0.2},
      {"t":3.0,"in":12,"out":1,"hash_ids":[50,51,52],"api_time":1}]},
    {"type":"subagent","t":1.6,"agent_id":"D","tool_tokens":3,"system_tokens":2,"requests":[
      {"t":1.6,"in":12,"out":1,"hash_ids":[70,71,72],"api_time":1},
      {"t":2.1,"in":16,"out":1,"hash_ids":[70,71,80,81],"api_time":0.2},
      {"t":3.1,"in":16,"out":1,"hash_ids":[70,71,72,73],"api_time":1}]},
    {"t":5,"in":24,"out":1,"hash_ids":[0,1,2,3,4,5],"api_time":1}]})";
  auto t = parse_weka_trace(j, "x");
  EXPECT_EQ(t.entries[2].subagent.tool_tokens, 3);
  EXPECT_EQ(t.entries[2].subagent.system_tokens, 2);
  // The fields survive a round trip through the generator's writer.
  EXPECT_EQ(parse_weka_trace(to_json_line(t), "y").entries[2].subagent.system_tokens, 2);
  auto tree = build_session_tree(t);
  std::map<std::string, std::int64_t> blocks;
  for (const auto& st : tree.streams) blocks[st.conversation_id] = st.system_blocks;
  EXPECT_EQ(blocks["P"], 3);
  EXPECT_EQ(blocks["P::sa:S"], 0);
  EXPECT_EQ(blocks["P::sa:S:fa:000"], 0);
  EXPECT_EQ(blocks["P::sa:D"], 2);
  EXPECT_EQ(blocks["P::sa:D:fa:000"], 2);
  // Chat segmentation follows: a subagent without a declared prefix is all
  // user content; D opens with its own 2-block system message.
  for (std::size_t k = 0; k < tree.streams.size(); ++k) {
    const auto& st = tree.streams[k];
    const auto spans = segment_messages(st, 0, t, PromptBuilder::piece_count(*st.turns[0].call, 4));
    if (st.system_blocks == 0) {
      EXPECT_STREQ(spans.front().role, "user") << st.conversation_id;
    } else {
      EXPECT_STREQ(spans.front().role, "system") << st.conversation_id;
      EXPECT_EQ(spans.front().pieces, static_cast<std::size_t>(st.system_blocks)) << st.conversation_id;
    }
  }
  // A flattened top-level chain that does not start with the root's
  // declared blocks has no system message.
  const char* flat = R"({"id":"F","block_size":4,"system_tokens":8,"requests":[
    {"t":0,"in":12,"out":1,"hash_ids":[0,1,2],"api_time":1},
    {"t":2,"in":12,"out":1,"hash_ids":[90,91,92],"api_time":1},
    {"t":4,"in":16,"out":1,"hash_ids":[0,1,2,3],"api_time":1},
    {"t":6,"in":16,"out":1,"hash_ids":[90,91,92,93],"api_time":1}]})";
  auto tf = parse_weka_trace(flat, "f");
  auto ft = build_session_tree(tf);
  ASSERT_EQ(ft.streams.size(), 2u);
  EXPECT_EQ(ft.streams[0].system_blocks, 2);
  EXPECT_EQ(ft.streams[1].system_blocks, 0);
}

// Subagent timing after AIPerf (SemiAnalysisAI/aiperf @ 2141c6217b7f,
// src/aiperf/dataset/loader/weka_trace.py WekaTraceLoader._reconstruct_serial
// and _sa_end_seconds; src/aiperf/timing/branch_orchestrator.py @ 7ee18816f7d1
// _spawn_children_and_register_gates / _child_dispatch_offset_ms):
//   preceding = last root turn before the entry; join = first later root
//   turn with t + 1e-6 >= entry.t + duration_ms / 1000; branches grouped by
//   (preceding, join), start = min(entry.t); a child's first call waits
//   max(0, first t - branch start) after the spawning call completes.
// Root r0 0 (api 2), r1 6 (api 1), r2 8 (api 1).
//   A: entry 3, duration 4000 ms -> end 7; calls 4 and 5 (end 5.5). r1 (6)
//      is before 7: A joins r2, though its calls ended before r1 started.
//   B: entry 3.5, duration 1000 -> end 4.5; call 3.6 -> joins r1.
//   C: entry 3.2, duration 500 -> end 3.7; call 3.3 -> joins r1, the same
//      (r0, r1) branch as B: its start is min(3.5, 3.2) = 3.2.
// Offsets: A 4 - 3 = 1; B 3.6 - 3.2 = 0.4; C 3.3 - 3.2 = 0.1. (Counted from
// the spawning call's end they would be 2, 1.6, 1.3.)
TEST(SessionTree, SubagentOffsetsFromTheEntryAndJoinsByRecordedEnd) {
  const char* j = test_support::kSubagentTrace;
  auto t = parse_weka_trace(j, "x");
  ASSERT_TRUE(t.entries[1].subagent.duration_ms.has_value());
  EXPECT_DOUBLE_EQ(*t.entries[1].subagent.duration_ms, 4000);
  auto tree = build_session_tree(t);
  ASSERT_EQ(tree.streams.size(), 4u);
  const auto& root = tree.streams[0];
  EXPECT_EQ(tree.streams[1].conversation_id, "J::sa:A");
  EXPECT_EQ(tree.streams[2].conversation_id, "J::sa:B");
  EXPECT_EQ(tree.streams[3].conversation_id, "J::sa:C");
  EXPECT_EQ(root.turns[0].spawns, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(root.turns[0].spawns_on_send.empty());  // every branch starts after r0's recorded end (2)
  EXPECT_TRUE(root.turns[1].joins == (std::vector<int>{2, 3}));
  EXPECT_EQ(root.turns[2].joins, std::vector<int>{1});
  EXPECT_DOUBLE_EQ(tree.streams[1].turns[0].start_delay_s, 1.0);
  EXPECT_NEAR(tree.streams[2].turns[0].start_delay_s, 0.4, 1e-12);
  EXPECT_NEAR(tree.streams[3].turns[0].start_delay_s, 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(tree.streams[1].turns[1].start_delay_s, 0.5);  // end-to-start: 5 - 4.5
  for (const auto& s : tree.streams) {
    EXPECT_FALSE(s.background) << s.conversation_id;
    for (const auto& turn : s.turns) EXPECT_TRUE(turn.barriers.empty()) << s.conversation_id;
  }
  const auto t2_src = parse_weka_trace(j, "x");
  // Without duration_ms the end is the latest end of its calls (5.5): A
  // would join r1.
  t.entries[1].subagent.duration_ms.reset();
  auto tree2 = build_session_tree(t);
  EXPECT_EQ(tree2.streams[0].turns[1].joins, (std::vector<int>{1, 2, 3}));
  // The field survives the synthesizer's writer.
  EXPECT_NE(to_json_line(t2_src).find("\"duration_ms\":4000.000"), std::string::npos);
}

// branch_orchestrator.py on_credit_issued (@ 7ee18816f7d1): a SPAWN branch
// whose start lies before the spawning call's recorded end (start + api_time,
// api_time > 0) starts when that call is SENT, each child's first call
// max(0, its t - the spawning call's t) later. r0 0 (api 5), X entry 2, its
// call at 2.5: X starts with r0's send, its call 2.5 s after it.
TEST(SessionTree, BranchOverlappingItsSpawningCallStartsOnSend) {
  const char* o = R"({"id":"O","block_size":4,"requests":[
    {"type":"n","t":0,"in":4,"out":1,"hash_ids":[0],"api_time":5},
    {"type":"subagent","t":2,"agent_id":"X","requests":[
      {"type":"n","t":2.5,"in":8,"out":1,"hash_ids":[0,5],"api_time":1}]},
    {"type":"n","t":10,"in":8,"out":1,"hash_ids":[0,1],"api_time":1}]})";
  const auto trace = parse_weka_trace(o, "x");  // the tree points into it
  auto tree = build_session_tree(trace);
  ASSERT_EQ(tree.streams.size(), 2u);
  EXPECT_TRUE(tree.streams[1].spawn_on_send);
  EXPECT_EQ(tree.streams[0].turns[0].spawns_on_send, std::vector<int>{1});
  EXPECT_TRUE(tree.streams[0].turns[0].spawns.empty());
  EXPECT_DOUBLE_EQ(tree.streams[1].turns[0].start_delay_s, 2.5);
  EXPECT_EQ(tree.streams[0].turns[1].joins, std::vector<int>{1});
}

// replay_dependencies.py infer_cross_stream_predecessors (@ a5b3bef9494f)
// inside one subagent's scope: S's main chain m0 [1000,2000], m1
// [3000,4000]; fork a0 [1200,1500] (:fa:000); fork b0 [1600,1800]
// (:fa:001). For m1 the per-stream frontier is {a0, b0}; a0 is dropped as
// b0 follows it (1200 < 1600 and 1500 <= 1600). b0 waits for a0 (strictly
// earlier start, ended by 1600); a0 for nothing (m0 still running). The
// root (r0 0..0.5, r1 at 5) is a scope of its own: r1 has no barrier
// although every call of S ended before it.
TEST(SessionTree, BarriersAreAiperfsFrontierWithinEachScope) {
  const char* d = R"({"id":"D","block_size":4,"requests":[
    {"type":"n","t":0,"in":8,"out":1,"hash_ids":[0,1],"api_time":0.5},
    {"type":"subagent","t":1,"agent_id":"S","requests":[
      {"type":"n","t":1.0,"in":8,"out":1,"hash_ids":[50,51],"api_time":1},
      {"type":"n","t":1.2,"in":8,"out":1,"hash_ids":[50,80],"api_time":0.3},
      {"type":"n","t":1.6,"in":12,"out":1,"hash_ids":[50,51,70],"api_time":0.2},
      {"type":"n","t":3.0,"in":12,"out":1,"hash_ids":[50,51,52],"api_time":1}]},
    {"type":"n","t":5,"in":12,"out":1,"hash_ids":[0,1,2],"api_time":1}]})";
  const auto trace = parse_weka_trace(d, "x");  // the tree points into it
  auto tree = build_session_tree(trace);
  ASSERT_EQ(tree.streams.size(), 4u);
  auto find = [&](const std::string& id) {
    for (std::size_t s = 0; s < tree.streams.size(); ++s)
      if (tree.streams[s].conversation_id == id) return static_cast<int>(s);
    return -1;
  };
  const int m = find("D::sa:S"), a = find("D::sa:S:fa:000"), b = find("D::sa:S:fa:001");
  ASSERT_GE(m, 0);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  const auto& ms = tree.streams[static_cast<std::size_t>(m)];
  ASSERT_EQ(ms.turns.size(), 2u);
  EXPECT_DOUBLE_EQ(tree.streams[static_cast<std::size_t>(a)].turns[0].call->t, 1.2);
  EXPECT_DOUBLE_EQ(tree.streams[static_cast<std::size_t>(b)].turns[0].call->t, 1.6);
  EXPECT_EQ(ms.turns[1].barriers, (std::vector<TurnRef>{{b, 0}}));
  EXPECT_TRUE(ms.turns[0].barriers.empty());
  EXPECT_TRUE(tree.streams[static_cast<std::size_t>(a)].turns[0].barriers.empty());
  EXPECT_EQ(tree.streams[static_cast<std::size_t>(b)].turns[0].barriers, (std::vector<TurnRef>{{a, 0}}));
  EXPECT_TRUE(tree.streams[0].turns[1].barriers.empty());
  // Every chain of S: a child of the root, depth 1, joined by r1, offsets
  // from the entry t 1.0.
  for (int s : {m, a, b}) {
    const auto& st = tree.streams[static_cast<std::size_t>(s)];
    EXPECT_EQ(st.parent, 0);
    EXPECT_EQ(st.depth, 1);
    EXPECT_EQ(st.replay_scope, "D::sa:S");
    EXPECT_NEAR(st.turns[0].start_delay_s, st.turns[0].call->t - 1.0, 1e-12);
  }
  EXPECT_EQ(tree.streams[0].turns[1].joins.size(), 3u);
}

// Sizes that would size allocations downstream are bounded at parse time
// (docs/input-limits-files.md), each error naming where, the trace and field.
TEST(WekaTrace, SizesAreBounded) {
  auto e = expect_error(R"({"id":"huge","requests":[{"t":0,"in":1e12,"out":1,"hash_ids":[]}]})");
  EXPECT_NE(e.find("f.jsonl:3: trace huge, request 0: field 'in' must be an integer in [1, 10000000], got 1"),
            std::string::npos) << e;
  e = expect_error(R"({"id":"o","requests":[{"t":0,"in":5,"out":20000000,"hash_ids":[]}]})");
  EXPECT_NE(e.find("field 'out' must be an integer in [0, 10000000]"), std::string::npos) << e;
  e = expect_error(R"({"id":"o","requests":[{"t":0,"in":1e300,"out":1,"hash_ids":[]}]})");
  EXPECT_NE(e.find("field 'in' must be an integer"), std::string::npos) << e;
  e = expect_error(R"({"id":"f","requests":[{"t":0,"in":5.5,"out":1,"hash_ids":[]}]})");
  EXPECT_NE(e.find("field 'in' must be an integer"), std::string::npos) << e;
  e = expect_error(R"({"id":"b","block_size":1e9,"requests":[]})");
  EXPECT_NE(e.find("f.jsonl:3: trace b: field 'block_size' must be an integer in [1, 65536]"), std::string::npos) << e;
  e = expect_error(R"({"id":"b","block_size":0,"requests":[]})");
  EXPECT_NE(e.find("field 'block_size' must be an integer in [1, 65536]"), std::string::npos) << e;
  e = expect_error(R"({"id":"n","tool_tokens":-5,"requests":[]})");
  EXPECT_NE(e.find("field 'tool_tokens' must be an integer in [0, 10000000], got -5"), std::string::npos) << e;
  e = expect_error(R"({"id":"n","system_tokens":-1,"requests":[]})");
  EXPECT_NE(e.find("field 'system_tokens' must be an integer in [0, 10000000], got -1"), std::string::npos) << e;
  // in = 8 in blocks of 4: at most 3 ids (8 / 4 + 1).
  EXPECT_NO_THROW(
      parse_weka_trace(R"({"id":"h","block_size":4,"requests":[{"t":0,"in":8,"out":1,"hash_ids":[1,2,3]}]})", "x"));
  e = expect_error(R"({"id":"h","block_size":4,"requests":[{"t":0,"in":8,"out":1,"hash_ids":[1,2,3,4]}]})");
  EXPECT_NE(e.find("request 0: field 'hash_ids' holds 4 ids, but in = 8 tokens in blocks of 4 allow at most 3"),
            std::string::npos) << e;
  e = expect_error(R"({"id":"h","block_size":4,"requests":[{"type":"subagent","agent_id":"q",)"
                   R"("requests":[{"t":0,"in":4,"out":1,"hash_ids":[1,2,3]}]}]})");
  EXPECT_NE(e.find("subagent 'q'"), std::string::npos) << e;
  EXPECT_NE(e.find("field 'hash_ids' holds 3 ids"), std::string::npos) << e;
  // Integral doubles are integers: 1e6 is accepted.
  const auto d = parse_weka_trace(R"({"id":"d","requests":[{"t":0,"in":1e6,"out":0,"hash_ids":[]}]})", "x");
  EXPECT_EQ(d.entries[0].call.in, 1000000);
}

TEST(TraceLoader, DuplicateTraceIdsNameBothPlaces) {
  const auto dir = temp("dup");
  std::filesystem::create_directories(dir);
  const std::string t = R"({"id":"same","requests":[{"t":0,"in":10,"out":1,"hash_ids":[1]}]})";
  std::ofstream(dir / "a.jsonl") << t << "\n" << t << "\n";
  try {
    load_weka_traces((dir / "a.jsonl").string(), {});
    FAIL() << "duplicate accepted";
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("a.jsonl:2: trace same: duplicate trace id (first at "), std::string::npos) << m;
    EXPECT_NE(m.find("a.jsonl:1)"), std::string::npos) << m;
  }
  // Across the files of a directory too.
  std::ofstream(dir / "a.jsonl") << t << "\n";
  std::ofstream(dir / "b.json") << t;
  try {
    load_weka_traces(dir.string(), {});
    FAIL() << "duplicate across files accepted";
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("b.json: trace same: duplicate trace id (first at "), std::string::npos) << m;
    EXPECT_NE(m.find("a.jsonl:1)"), std::string::npos) << m;
  }
  std::filesystem::remove_all(dir);
}

TEST(TraceLoader, ZstdBombStopsAtTheCap) {
  const auto path = temp("bomb.jsonl.zst");
  // 16 MiB of spaces compress to a few hundred bytes.
  const std::string plain(16u << 20, ' ');
  std::string packed(ZSTD_compressBound(plain.size()), '\0');
  packed.resize(ZSTD_compress(packed.data(), packed.size(), plain.data(), plain.size(), 19));
  ASSERT_LT(packed.size(), 4096u);
  std::ofstream(path, std::ios::binary) << packed;
  LoadOptions o;
  o.max_decompressed_bytes = 1u << 20;
  o.max_record_bytes = 64u << 20;
  try {
    load_weka_traces(path.string(), o);
    FAIL() << "bomb decompressed";
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path.string() + ": decompresses to more than 1 MiB"), std::string::npos) << m;
  }
  EXPECT_THROW(read_maybe_zstd(path.string(), 1u << 20), UserError);
  try {
    load_traces(path.string(), "mooncake", o);
    FAIL() << "bomb decompressed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("decompresses to more than 1 MiB"), std::string::npos) << e.what();
  }
  // Under the default cap it is only blank lines... but one 16 MiB line
  // exceeds a record cap of 1 MiB, named with the line.
  o.max_decompressed_bytes = kDefaultMaxDecompressedBytes;
  o.max_record_bytes = 1u << 20;
  try {
    load_weka_traces(path.string(), o);
    FAIL() << "oversized record accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ":1: line longer than 1 MiB"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_maybe_zstd(path.string()).size(), plain.size());  // the default cap lets it through whole
  std::filesystem::remove(path);
}

TEST(TraceLoader, StreamedLinesSpanChunksAndZstdFrames) {
  // Records longer than one decompression chunk (128 KiB) still arrive
  // whole, with their line numbers.
  const auto path = temp("long.jsonl.zst");
  std::string ids;
  for (int i = 0; i < 40000; ++i) {
    if (i) ids += ',';
    ids += std::to_string(1000000 + i);
  }
  std::string text;
  for (int k = 0; k < 3; ++k)
    text += R"({"id":"t)" + std::to_string(k) + R"(","requests":[{"t":0,"in":2560000,"out":1,"hash_ids":[)" + ids + "]}]}\n";
  std::string packed(ZSTD_compressBound(text.size()), '\0');
  packed.resize(ZSTD_compress(packed.data(), packed.size(), text.data(), text.size(), 3));
  std::ofstream(path, std::ios::binary) << packed;
  const auto traces = load_weka_traces(path.string(), {});
  ASSERT_EQ(traces.size(), 3u);
  EXPECT_EQ(traces[2].id, "t2");
  EXPECT_EQ(traces[2].entries[0].call.hash_ids.size(), 40000u);
  std::filesystem::remove(path);
}

TEST(TraceLoader, MooncakeRowsAreBounded) {
  const auto path = temp("mooncake_bounds.jsonl");
  std::ofstream(path) << R"({"input_length": 100, "output_length": 5, "hash_ids": [9]})" << "\n"
                      << R"({"input_length": 1e12, "output_length": 5, "hash_ids": [9]})" << "\n";
  try {
    load_mooncake_traces(path.string());
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(":2: field 'input_length' must be an integer in [1, 10000000], got 1"),
              std::string::npos) << e.what();
  }
  std::ofstream(path) << R"({"input_length": 600, "output_length": 5, "hash_ids": [1, 2, 3]})" << "\n";
  try {
    load_mooncake_traces(path.string());
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(":1: field 'hash_ids' holds 3 ids"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

// AIPerf's own examples for _IdleGapTimeWarp (github.com/ai-dynamo/aiperf,
// tests/unit/dataset/loader/: test_idle_gap_time_warp and the
// characterizations test_idle_gap_exactly_equal_to_cap_is_not_compressed and
// test_idle_gap_collapsed_tail_event_maps_to_cap_boundary).
TEST(IdleGapWarp, CompressesStartGapsLongerThanTheCapAsAiperf) {
  const IdleGapWarp w({0.0, 5.0, 35.0, 45.0}, 10.0);
  EXPECT_DOUBLE_EQ(w.map(0.0), 0.0);
  EXPECT_DOUBLE_EQ(w.map(5.0), 5.0);
  EXPECT_DOUBLE_EQ(w.map(35.0), 15.0);  // 30 s after 5: keeps 10, loses 20
  EXPECT_DOUBLE_EQ(w.map(45.0), 25.0);  // a gap of exactly the cap: shifted, not compressed
  EXPECT_DOUBLE_EQ(w.compressed_s(), 20.0);
  EXPECT_DOUBLE_EQ(IdleGapWarp({0.0, 60.0}, 60.0).map(60.0), 60.0);
  EXPECT_NEAR(IdleGapWarp({0.0, 60.001}, 60.0).map(60.001), 60.0, 1e-9);
  // Inside a gap's lost tail, an event (a subagent's end) lands on the cap
  // boundary, so a join never waits past the next shifted request.
  const IdleGapWarp t({0.0, 20.0, 220.0}, 60.0);
  EXPECT_DOUBLE_EQ(t.map(80.0), 80.0);
  EXPECT_DOUBLE_EQ(t.map(150.0), 80.0);
  EXPECT_DOUBLE_EQ(t.map(220.0), 80.0);
  EXPECT_DOUBLE_EQ(t.map(300.0), 160.0);
  // No cap: the recorded clock. The starts need not come sorted.
  EXPECT_DOUBLE_EQ(IdleGapWarp({1000.0, 0.0}, std::numeric_limits<double>::infinity()).map(1000.0), 1000.0);
  EXPECT_DOUBLE_EQ(IdleGapWarp({1000.0, 0.0}, 300.0).map(1000.0), 300.0);
}

// A tree on the idle-capped clock (cap 300 s). Starts: r0 0, S's calls 3
// and 1503, r1 2000: the 1500 s gap loses 1200 s, the 497 s gap 197 s, so
// the timeline reads 0, 3, 303, 603. S's recorded end (3 + 1501.5 s =
// 1504.5) falls 1.5 s into the first gap: 304.5.
TEST(SessionTree, TimesAreOnTheIdleCappedTimeline) {
  const char* j = R"({"id":"gap","block_size":4,"requests":[
    {"type":"n","t":0,"in":8,"out":1,"hash_ids":[0,1],"api_time":2},
    {"type":"subagent","t":3,"agent_id":"S","duration_ms":1501500,"requests":[
       {"type":"n","t":3,"in":8,"out":1,"hash_ids":[0,5],"api_time":1},
       {"type":"n","t":1503,"in":12,"out":1,"hash_ids":[0,5,6],"api_time":1}]},
    {"type":"n","t":2000,"in":12,"out":1,"hash_ids":[0,1,2],"api_time":1}]})";
  const auto t = parse_weka_trace(j, "x");
  const auto capped = build_session_tree(t, true, 300);
  ASSERT_EQ(capped.streams.size(), 2u);
  const auto& root = capped.streams[0];
  const auto& sub = capped.streams[1];
  EXPECT_DOUBLE_EQ(root.turns[0].t_s, 0);
  EXPECT_DOUBLE_EQ(sub.turns[0].t_s, 3);
  EXPECT_DOUBLE_EQ(sub.turns[1].t_s, 303);
  EXPECT_DOUBLE_EQ(root.turns[1].t_s, 603);
  EXPECT_DOUBLE_EQ(sub.turns[1].start_delay_s, 299);   // 303 - (3 + 1)
  EXPECT_DOUBLE_EQ(root.turns[1].start_delay_s, 601);  // 603 - (0 + 2)
  EXPECT_EQ(root.turns[1].joins, std::vector<int>{1});
  EXPECT_DOUBLE_EQ(capped.t_begin, 0);
  EXPECT_DOUBLE_EQ(capped.t_end, 604);
  EXPECT_DOUBLE_EQ(capped.idle_compressed_s, 1397);
  // The recorded clock without a cap.
  const auto raw = build_session_tree(t);
  EXPECT_DOUBLE_EQ(raw.streams[1].turns[1].start_delay_s, 1499);
  EXPECT_DOUBLE_EQ(raw.streams[0].turns[1].start_delay_s, 1998);
  EXPECT_DOUBLE_EQ(raw.t_end, 2001);
  EXPECT_DOUBLE_EQ(raw.idle_compressed_s, 0);
}
