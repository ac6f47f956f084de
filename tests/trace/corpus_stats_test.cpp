// Corpus statistics and the replayed working set on a trace worked out by
// hand, and the cc-weka-256k preset against the published statistics it
// stands for (docs/traces.md).
#include "trace/corpus_stats.h"

#include <gtest/gtest.h>

#include "trace/synth.h"

using namespace agentperf;

namespace {
// Main calls at t = 0 (in 8, out 2, 1 s) and t = 11 (in 12, out 2, 1 s): one
// 10 s gap; a subagent group of one call at t = 1 (in 6, out 2, 1 s).
const char* kCorpusTrace = R"({"id":"W","block_size":4,"requests":[
  {"type":"n","t":0,"in":8,"out":2,"hash_ids":[0,1],"api_time":1},
  {"type":"subagent","t":1,"agent_id":"A","requests":[
     {"type":"n","t":1,"in":6,"out":2,"hash_ids":[0],"api_time":1}]},
  {"type":"n","t":11,"in":12,"out":2,"hash_ids":[0,1,2],"api_time":1}]})";
}  // namespace

TEST(CorpusStats, CountsGapsAndWaitingShare) {
  const std::vector<trace::WekaTrace> traces = {trace::parse_weka_trace(kCorpusTrace, "t")};
  const auto s = trace::corpus_stats(traces);
  EXPECT_EQ(s.requests, 3);
  EXPECT_EQ(s.main_calls, 2);
  EXPECT_EQ(s.subagent_groups, 1);
  EXPECT_EQ(s.subagent_calls, 1);
  EXPECT_EQ(s.traces_with_subagents, 1);
  EXPECT_DOUBLE_EQ(s.main_gap_s.avg, 10.0);             // 11 - (0 + 1)
  EXPECT_DOUBLE_EQ(s.input_tokens.avg, (8 + 6 + 12) / 3.0);
  EXPECT_NEAR(s.waiting_share, 9.0 / 12.0, 1e-12);      // busy 0-2 and 11-12 of a 12 s span
}

TEST(CorpusStats, WorkingSetIsTimeAveragedOverTheReplayedTimeline) {
  const std::vector<trace::WekaTrace> traces = {trace::parse_weka_trace(kCorpusTrace, "t")};
  // Uncapped: main 10 tokens over 0-11 and 14 over 11-12; the subagent 8
  // tokens over 1-2. Area 110 + 14 + 8 = 132 over 12 s.
  auto ws = trace::time_averaged_working_sets(traces, 1e9);
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_NEAR(ws[0].mean_tokens, 132.0 / 12.0, 1e-9);
  EXPECT_DOUBLE_EQ(ws[0].peak_tokens, 18.0);
  EXPECT_DOUBLE_EQ(ws[0].span_s, 12.0);
  // Idle gaps capped at 5 s: the 9 s idle (2-11) becomes 5 s, the span 8 s,
  // and the main context of 10 tokens counts 7 s instead of 11.
  ws = trace::time_averaged_working_sets(traces, 5);
  EXPECT_NEAR(ws[0].mean_tokens, (10.0 * 7 + 14 + 8) / 8.0, 1e-9);
  EXPECT_DOUBLE_EQ(ws[0].span_s, 8.0);
  EXPECT_NEAR(trace::lane_working_set(ws), ws[0].mean_tokens, 1e-12);
}

// The preset lands near the published statistics of the AgentX 256k corpus
// (targets in docs/traces.md): per-trace counts, lengths and gap quantiles.
TEST(CorpusStats, CcWeka256kPresetMatchesThePublishedShape) {
  auto o = trace::synth_preset("cc-weka-256k");
  o.traces = 120;  // a third of the corpus, for speed
  const auto s = trace::corpus_stats(trace::synthesize_traces(o));
  const double per_trace = static_cast<double>(s.requests) / static_cast<double>(s.traces);
  EXPECT_NEAR(per_trace / 173.7, 1.0, 0.15) << per_trace;                 // 68,266 / 393
  EXPECT_NEAR(s.input_tokens.avg / 100947, 1.0, 0.10) << s.input_tokens.avg;
  EXPECT_NEAR(s.output_tokens.avg / 860, 1.0, 0.10) << s.output_tokens.avg;
  EXPECT_LT(s.input_tokens.max, 256000);
  EXPECT_NEAR(s.main_gap_s.percentile(50), 4.9, 1.5);
  EXPECT_NEAR(s.main_gap_s.percentile(90) / 131.5, 1.0, 0.35);
  EXPECT_THROW(trace::synth_preset("nope"), std::invalid_argument);
}

// The 1M preset against the published statistics of the unfiltered corpus
// (semianalysisai/cc-traces-weka-062126; targets and sources in
// docs/traces.md): per-trace calls, mean input and output, the median, and
// contexts that grow past 256k up to the corpus's ~990k limit.
TEST(CorpusStats, CcWeka1mPresetMatchesThePublishedShape) {
  auto o = trace::synth_preset("cc-weka-1m");
  o.traces = 120;
  const auto s = trace::corpus_stats(trace::synthesize_traces(o));
  const double per_trace = static_cast<double>(s.requests) / static_cast<double>(s.traces);
  EXPECT_NEAR(per_trace / 251.5, 1.0, 0.15) << per_trace;  // 98,827 / 393
  EXPECT_NEAR(s.input_tokens.avg / 218922, 1.0, 0.12) << s.input_tokens.avg;
  EXPECT_NEAR(s.input_tokens.percentile(50) / 142016, 1.0, 0.15) << s.input_tokens.percentile(50);
  EXPECT_NEAR(s.output_tokens.avg / 1077, 1.0, 0.10) << s.output_tokens.avg;
  EXPECT_GT(s.input_tokens.max, 600000);
  EXPECT_LE(s.input_tokens.max, 990016);
}
