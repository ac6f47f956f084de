// The AgentX validation set (data/validation/agentx_points.json) and the
// replay of one of its points (sweep/agentx_validation.h).
#include "sweep/agentx_validation.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <unistd.h>

#include "common/error.h"
#include "sim/engine_costs.h"
#include "sim/specs.h"
#include "sweep/point_ranks.h"
#include "trace/synth.h"
#include "trace/weka_trace.h"

using namespace agentperf;

namespace {

// A file of this process alone: ctest runs each test as its own process,
// several at once, and a shared name would be written by two of them.
std::string write_temp(const std::string& name, const std::string& text) {
  static int n = 0;
  const auto p = std::filesystem::temp_directory_path() /
                 ("agentperf_" + std::to_string(::getpid()) + "_" + std::to_string(n++) + "_" + name);
  std::ofstream(p) << text;
  return p.string();
}

// A minimal valid set with one series and one point; `patch` replaces text.
std::string set_text(const std::string& series_extra = "", const std::string& point_extra = "") {
  return R"({"series": {"s1": {"split": "held_out", "family": "qwen3.5", "engine": "sglang",
      "model_spec": "qwen3.5-397b-a17b-fp8", "hardware": "h200", "num_gpus": 8, "tp": 8,
      "spec": {"method": "mtp", "acceptance_length": 3.39}, "corpus": "cc-weka-256k",
      "source": "https://example.invalid/pr/1")" +
         series_extra + R"(}},
    "points": [{"id": "p1", "series": "s1", "concurrency": 4,
      "published": {"ttft_mean_ms": 690, "tpot_mean_ms": 4.5)" +
         point_extra + "}}]}";
}

std::string error_of(const std::string& text) {
  try {
    sweep::load_agentx_set(write_temp("agentx_set_test.json", text));
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(AgentxValidation, ShippedSetLoadsAndEverySeriesNamesRealSpecs) {
  const auto set = sweep::load_agentx_set("builtin");
  ASSERT_GE(set.points.size(), 40u);
  std::set<std::string> families, held_out_families;
  for (const auto& [id, s] : set.series) {
    EXPECT_NO_THROW(sim::load_model_spec(s.model_spec)) << id;
    EXPECT_NO_THROW(sim::load_hardware_spec(s.hardware)) << id;
    EXPECT_FALSE(s.source.empty()) << id;
    families.insert(s.family);
    if (s.split == "held_out") held_out_families.insert(s.family);
  }
  // The set's purpose: held-out series of several model families.
  EXPECT_GE(held_out_families.size(), 3u);
  // Every point publishes a number, except a point past its series'
  // published cliff, which may be there only to place the predicted one.
  for (const auto& p : set.points) {
    if (!sweep::past_published_cliff(set, p)) {
      EXPECT_FALSE(p.published.empty()) << p.id;
    }
  }
}

TEST(AgentxValidation, BadInputNamesTheSeriesPointAndField) {
  EXPECT_EQ(error_of(set_text()), "");
  EXPECT_NE(error_of(set_text(R"(, "split": "train")")).find("series.s1.split"), std::string::npos)
      << error_of(set_text(R"(, "split": "train")"));
  const std::string corpus = error_of(R"({"series": {"s1": {"split": "fit", "family": "f", "engine": "sglang",
      "model_spec": "qwen3-8b", "hardware": "h200", "num_gpus": 1, "tp": 1, "corpus": "sharegpt",
      "source": "x"}}, "points": [{"id": "p", "series": "s1", "concurrency": 1, "published": {"ttft_mean_ms": 1}}]})");
  EXPECT_NE(corpus.find("series.s1.corpus"), std::string::npos) << corpus;
  EXPECT_NE(corpus.find("preset"), std::string::npos) << corpus;
  const std::string metric = error_of(set_text("", R"(, "ttft_p42_ms": 3)"));
  EXPECT_NE(metric.find("points[0].published.ttft_p42_ms"), std::string::npos) << metric;
  const std::string engine = error_of(set_text(R"(, "engine": "trtllm")"));
  EXPECT_NE(engine.find("series.s1.engine"), std::string::npos) << engine;
  const std::string dram = error_of(set_text(R"(, "kv_offload": "dram")"));
  EXPECT_NE(dram.find("series.s1.runner"), std::string::npos) << dram;
  const std::string value = error_of(set_text("", R"(, "total_tok_s_gpu": -5)"));
  EXPECT_NE(value.find("total_tok_s_gpu"), std::string::npos) << value;
  const std::string fraction = error_of(set_text(R"(, "launcher_flags": "--mem-fraction-static 1.5")"));
  EXPECT_NE(fraction.find("series.s1.launcher_flags"), std::string::npos) << fraction;
  EXPECT_NE(fraction.find("--mem-fraction-static"), std::string::npos) << fraction;
  const std::string twice =
      error_of(set_text(R"(, "mem_fraction_static": 0.8, "launcher_flags": "--mem-fraction-static 0.88")"));
  EXPECT_NE(twice.find("series.s1.mem_fraction_static"), std::string::npos) << twice;
  const std::string swa = error_of(set_text(R"(, "launcher_flags": "--swa-full-tokens-ratio x")"));
  EXPECT_NE(swa.find("--swa-full-tokens-ratio"), std::string::npos) << swa;
  // An empty "published" only past the series' cliff.
  const std::string empty = R"({"series": {"s1": {"split": "held_out", "family": "f", "engine": "sglang",
      "model_spec": "qwen3-8b", "hardware": "h200", "num_gpus": 1, "tp": 1, "corpus": "cc-weka-256k",
      "cliff_after": 4, "source": "x"}}, "points": [{"id": "p", "series": "s1", "concurrency": C, "published": {}}]})";
  EXPECT_EQ(error_of(std::regex_replace(empty, std::regex("C"), "8")), "");
  const std::string before_cliff = error_of(std::regex_replace(empty, std::regex("C"), "4"));
  EXPECT_NE(before_cliff.find("points[0].published"), std::string::npos) << before_cliff;
  EXPECT_NE(before_cliff.find("non-empty"), std::string::npos) << before_cliff;
  const std::string tails = error_of(set_text(R"(, "launcher_flags": "--swa-prefix-tails -3")"));
  EXPECT_NE(tails.find("--swa-prefix-tails must be a whole number >= 0"), std::string::npos) << tails;
  // A DSpark series gives its block; an acceptance length a round cannot reach is refused.
  EXPECT_EQ(error_of(set_text(R"(, "spec": {"method": "dspark", "acceptance_length": 3.51, "block_size": 5})")), "");
  const std::string al = error_of(set_text(R"(, "spec": {"method": "mtp", "acceptance_length": 3.51, "num_steps": 1})"));
  EXPECT_NE(al.find("acceptance_length"), std::string::npos) << al;
  const std::string mixed =
      error_of(set_text(R"(, "spec": {"method": "dspark", "acceptance_length": 3, "block_size": 5, "num_steps": 1})"));
  EXPECT_NE(mixed.find("dspark takes block_size alone"), std::string::npos) << mixed;
}

TEST(AgentxValidation, LauncherFlagsSetTheMemoryFraction) {
  const auto set = sweep::load_agentx_set(
      write_temp("agentx_flags.json", set_text(R"(, "launcher_flags": "--chunked-prefill-size 8192 --mem-fraction-static 0.88")")));
  EXPECT_DOUBLE_EQ(set.series.at("s1").mem_fraction_static, 0.88);
  EXPECT_DOUBLE_EQ(sweep::load_agentx_set(write_temp("agentx_noflags.json", set_text())).series.at("s1").mem_fraction_static,
                   0.80);
}

TEST(AgentxValidation, ARerunMustShareItsOriginalsSplit) {
  const std::string text = R"({"series": {
      "a": {"split": "fit", "family": "f", "engine": "sglang", "model_spec": "qwen3-8b", "hardware": "h200",
            "num_gpus": 1, "tp": 1, "corpus": "cc-weka-256k", "source": "x"},
      "b": {"split": "held_out", "family": "f", "engine": "sglang", "model_spec": "qwen3-8b", "hardware": "h200",
            "num_gpus": 1, "tp": 1, "corpus": "cc-weka-256k", "source": "x", "rerun_of": "a"}},
    "points": [{"id": "p", "series": "a", "concurrency": 1, "published": {"ttft_mean_ms": 1}}]})";
  const std::string e = error_of(text);
  EXPECT_NE(e.find("b.split"), std::string::npos) << e;
  EXPECT_NE(e.find("rerun"), std::string::npos) << e;
}

// One point replayed for 10 minutes of serving: the metrics InferenceX
// publishes come out, per GPU over the deployment's GPUs, and the TTFT
// breakdown adds up to the mean TTFT.
TEST(AgentxValidation, APointReplaysAsItsDeploymentRan) {
  const auto set = sweep::load_agentx_set(write_temp("agentx_one_point.json", set_text()));
  sweep::AgentxPredictOptions o;
  o.duration_s = 600;
  const auto pred = sweep::predict_agentx_point(set, set.points.front(), o);
  ASSERT_TRUE(pred.failure.empty()) << pred.failure;
  ASSERT_GT(pred.requests, 20);
  for (const char* m : {"total_tok_s_gpu", "output_tok_s_gpu", "ttft_mean_ms", "ttft_p50_ms", "tpot_mean_ms",
                        "interactivity_p50", "cache_hit_observed"})
    EXPECT_GT(pred.metrics.at(m), 0) << m;
  // Agentic turns: mostly cached prefix.
  EXPECT_GT(pred.metrics.at("cache_hit_observed"), 0.8);
  // Throughput per GPU is over the series' 8 GPUs: at 4 lanes one H200 TP8
  // deployment serves tens of thousands of tokens/s, a few thousand a GPU.
  EXPECT_LT(pred.metrics.at("total_tok_s_gpu"), 20000);
  double parts = 0;
  for (const char* k : {"ttft_front_end_wait_ms", "ttft_front_end_ms", "ttft_scheduler_wait_ms", "ttft_first_step_ms",
                        "ttft_network_ms"})
    parts += pred.breakdown.at(k);
  EXPECT_NEAR(parts, pred.metrics.at("ttft_mean_ms"), 0.03 * pred.metrics.at("ttft_mean_ms"));
  // The shipped SGLang profile tokenizes whole prompts: ~100k-token turns
  // spend over 100 ms there.
  EXPECT_GT(pred.breakdown.at("ttft_front_end_ms"), 100);
  EXPECT_GT(pred.breakdown.at("tpot_decode_only_ms"), 0);
  EXPECT_LE(pred.breakdown.at("tpot_decode_only_ms"), pred.metrics.at("tpot_mean_ms") * 1.05);
}

// Where the lanes start in the corpus decides which few session trees an
// hour replays (sim validate --agentx --sample-orders): another start gives
// another prediction, the same start the same one.
TEST(AgentxValidation, TheFirstTraceChoosesWhichTreesTheLanesReplay) {
  const auto set = sweep::load_agentx_set(write_temp("agentx_first_trace.json", set_text()));
  sweep::AgentxPredictOptions o;
  o.duration_s = 600;
  const auto base = sweep::predict_agentx_point(set, set.points.front(), o);
  o.first_trace = 131;
  const auto other = sweep::predict_agentx_point(set, set.points.front(), o);
  ASSERT_TRUE(base.failure.empty() && other.failure.empty()) << base.failure << other.failure;
  EXPECT_NE(base.metrics.at("total_tok_s_gpu"), other.metrics.at("total_tok_s_gpu"));
  o.first_trace = 0;
  EXPECT_EQ(sweep::predict_agentx_point(set, set.points.front(), o).metrics.at("total_tok_s_gpu"),
            base.metrics.at("total_tok_s_gpu"));
}

// A cliff is where the predicted hit falls below 80 % of the best hit at a
// lower concurrency; points past a published cliff leave the MAPE.
TEST(AgentxValidation, CliffIsTheFirstCollapseOfTheCacheHit) {
  const auto c = sweep::predicted_cliff({{16, 0.19}, {1, 0.98}, {8, 0.99}, {4, 0.99}, {32, 0.0}});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->last_healthy, 8);
  EXPECT_EQ(c->first_collapsed, 16);
  // A gentle decline is no collapse.
  EXPECT_FALSE(sweep::predicted_cliff({{1, 0.98}, {2, 0.95}, {4, 0.90}, {8, 0.85}}).has_value());
  const auto set = sweep::load_agentx_set(write_temp("agentx_cliff.json", set_text(R"(, "cliff_after": 2)")));
  EXPECT_TRUE(sweep::past_published_cliff(set, set.points.front()));  // c4 > c2
  const auto none = sweep::load_agentx_set(write_temp("agentx_nocliff.json", set_text()));
  EXPECT_FALSE(sweep::past_published_cliff(none, none.points.front()));
}

// A multinode series (InferenceX's prefill/decode workers) replays as a
// sweep's dry run runs the entry: a disaggregated one prefills on its
// prefill worker and decodes on its decode worker, the KV crossing between
// them; its TTFT's parts, the handoff included, add up to the mean TTFT.
TEST(AgentxValidation, AMultinodeSeriesReplaysItsWorkerPools) {
  const std::string disagg = R"(, "prefill": {"workers": 1, "tp": 4}, "decode": {"workers": 1, "tp": 4})";
  // The FP8 model's 397 GB of weights fit four H200s.
  const auto set = sweep::load_agentx_set(write_temp("agentx_disagg.json", set_text(disagg)));
  ASSERT_TRUE(set.series.at("s1").prefill.has_value());
  sweep::AgentxPredictOptions o;
  o.duration_s = 300;
  const auto pred = sweep::predict_agentx_point(set, set.points.front(), o);
  ASSERT_TRUE(pred.failure.empty()) << pred.failure;
  ASSERT_GT(pred.requests, 10);
  ASSERT_GT(pred.breakdown.count("ttft_handoff_ms"), 0u);
  EXPECT_GT(pred.breakdown.at("ttft_handoff_ms"), 1.0);  // at least the transfer's fixed 1 ms
  double parts = 0;
  for (const char* k : {"ttft_front_end_wait_ms", "ttft_front_end_ms", "ttft_scheduler_wait_ms", "ttft_first_step_ms",
                        "ttft_network_ms", "ttft_handoff_ms"})
    parts += pred.breakdown.at(k);
  EXPECT_NEAR(parts, pred.metrics.at("ttft_mean_ms"), 0.05 * pred.metrics.at("ttft_mean_ms"));
  // A decode block without prefill workers is named.
  EXPECT_NE(error_of(set_text(R"(, "decode": {"workers": 1, "tp": 4})")).find("field 'series.s1.decode': needs a prefill block"),
            std::string::npos)
      << error_of(set_text(R"(, "decode": {"workers": 1, "tp": 4})"));
}

// How a point's engines are routed: one engine's DP-attention ranks behind
// the launchers' consistent hashing on each conversation's key (no load
// bound); identical workers behind the session-sticky router on the tree.
TEST(PointRanks, DpRanksAreHashedPerConversationAndWorkersStickPerTree) {
  const auto model = sim::load_model_spec("qwen3-8b");
  const auto hw = sim::load_hardware_spec("h200");
  auto ranks_of = [&](int dp, int workers) {
    recipe::PointEngine pe;
    pe.dp = dp;
    pe.workers = workers;
    return sweep::point_ranks(pe, model, hw, pe.config);
  };
  const auto dp4 = ranks_of(4, 1);
  EXPECT_EQ(dp4.ranks.size(), 4u);
  EXPECT_EQ(dp4.options.policy, route::Policy::consistent_hash);
  EXPECT_FALSE(dp4.routing_headers);
  EXPECT_EQ(dp4.options.lockstep_ranks, 4);
  const auto three = ranks_of(1, 3);
  EXPECT_EQ(three.ranks.size(), 3u);
  EXPECT_EQ(three.options.policy, route::Policy::session_sticky);
  EXPECT_TRUE(three.routing_headers);
  const auto single = ranks_of(1, 1);
  EXPECT_EQ(single.ranks.size(), 1u);
  EXPECT_FALSE(single.routing_headers);
}

// --corpus-file: a series replays the traces of a file in place of its
// synthetic stand-in, rows in file order from the first (AIPerf's Weka
// loaders sample sequentially), capped at InferenceX's 393 rows. Three rows
// of another shape than the preset's give another prediction, named as the
// replay's traces source.
TEST(AgentxValidation, ACorpusFileReplacesTheSyntheticStandIn) {
  const auto set = sweep::load_agentx_set(write_temp("agentx_corpus_file.json", set_text()));
  trace::SynthOptions so = trace::synth_preset("cc-weka-256k");
  so.traces = 3;
  so.mean_turn_input = 600;  // shorter contexts than the preset's
  std::string text;
  for (const auto& t : trace::synthesize_traces(so)) text += trace::to_json_line(t) + "\n";
  const std::string file = write_temp("corpus.jsonl", text);
  EXPECT_EQ(sweep::agentx_corpus(file).size(), 3u);
  sweep::AgentxPredictOptions o;
  o.duration_s = 300;
  EXPECT_EQ(sweep::corpus_source(set.series.at("s1"), o), "synth:cc-weka-256k");
  const auto synthetic = sweep::predict_agentx_point(set, set.points.front(), o);
  o.corpus_files["cc-weka-256k"] = file;
  EXPECT_EQ(sweep::corpus_source(set.series.at("s1"), o), file);
  const auto from_file = sweep::predict_agentx_point(set, set.points.front(), o);
  ASSERT_TRUE(synthetic.failure.empty() && from_file.failure.empty()) << synthetic.failure << from_file.failure;
  EXPECT_NE(synthetic.metrics.at("total_tok_s_gpu"), from_file.metrics.at("total_tok_s_gpu"));
  // A file for the other corpus leaves this series on its own preset.
  o.corpus_files = {{"cc-weka-1m", file}};
  EXPECT_EQ(sweep::corpus_source(set.series.at("s1"), o), "synth:cc-weka-256k");
  EXPECT_THROW(sweep::agentx_corpus(write_temp("empty.jsonl", "")), UserError);
}
