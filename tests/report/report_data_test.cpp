// The numbers the report draws, from result files written here.
#include "report/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"

using namespace agentperf;

TEST(Report, PointsAndRunsFromResultFiles) {
  const auto dir = std::filesystem::temp_directory_path() / ("agentperf_report_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // Two profiling requests of 1 s each, ITL 10 ms and 20 ms, 100 + 50 tokens, back to back.
  std::ofstream out(dir / "profile_export.jsonl");
  auto line = [&](std::int64_t start_s, double itl_ms, int osl, const char* phase) {
    out << R"({"metadata":{"benchmark_phase":")" << phase << R"(","request_start_ns":)" << start_s * 1000000000
        << R"(,"request_end_ns":)" << (start_s + 1) * 1000000000 << R"(,"worker_id":"worker_0","session_num":0},)"
        << R"("metrics":{"time_to_first_token":{"value":50,"unit":"ms"},"inter_token_latency":{"value":)" << itl_ms
        << R"(,"unit":"ms"},"request_latency":{"value":1000,"unit":"ms"},"input_sequence_length":{"value":100,"unit":"tokens"},)"
        << R"("output_sequence_length":{"value":)" << osl << R"(,"unit":"tokens"},"usage_prompt_cache_read_tokens":{"value":25,"unit":"tokens"}},"error":null})"
        << "\n";
  };
  line(0, 99, 9, "warmup");
  line(1, 10, 100, "profiling");
  line(2, 20, 50, "profiling");
  out.close();
  report::ReportOptions o;
  o.gpus = 2;
  auto data = report::report_data({dir.string()}, o);
  ASSERT_EQ(data["points"].size(), 1u);
  const auto& p = data["points"][0];
  EXPECT_EQ(p["requests"], 2);
  // (200 input + 150 output tokens) over 2 s, on 2 GPUs.
  EXPECT_DOUBLE_EQ(p["tput_per_gpu"].get<double>(), 350.0 / 2 / 2);
  // Interactivity p50 = 1 / p50(ITL) = 1 / 15 ms.
  EXPECT_NEAR(p["intvty"]["p50"].get<double>(), 1000.0 / 15, 1e-9);
  EXPECT_DOUBLE_EQ(p["cache_hit"].get<double>(), 0.25);
  const auto& run = data["runs"][0];
  EXPECT_EQ(run["timeline"]["t"].size(), 4u);  // 0..3 s, the warmup included
  // One request at a time, back to back: one in flight in each second of
  // the run (a request ending at a bin's start is not in it).
  EXPECT_EQ(run["timeline"]["in_flight"], nlohmann::json::array({1.0, 1.0, 1.0, 0.0}));
  EXPECT_EQ(run["lanes"][0]["spans"].size(), 3u);
  EXPECT_NE(report::render_report(data).find("uPlot"), std::string::npos);
  EXPECT_THROW(report::report_data({(dir / "nope").string()}, o), UserError);
  std::filesystem::remove_all(dir);
}

namespace {

// One result directory: `n` profiling requests back to back, 1 s each
// (request k from k s to k+1 s), so the run lasts n s and its throughput is
// (isl + osl) tokens/s; `description` becomes the aggregate's run_description.
void write_result(const std::filesystem::path& dir, int n, int isl, int osl, double ttft_ms, double itl_ms,
                  const nlohmann::json& description) {
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / "profile_export.jsonl");
  for (int k = 0; k < n; ++k)
    out << nlohmann::json{{"metadata",
                           {{"benchmark_phase", "profiling"},
                            {"request_start_ns", std::int64_t{k} * 1000000000},
                            {"request_end_ns", std::int64_t{k + 1} * 1000000000},
                            {"worker_id", "worker_0"}}},
                          {"metrics",
                           {{"time_to_first_token", {{"value", ttft_ms}, {"unit", "ms"}}},
                            {"inter_token_latency", {{"value", itl_ms}, {"unit", "ms"}}},
                            {"request_latency", {{"value", 1000}, {"unit", "ms"}}},
                            {"input_sequence_length", {{"value", isl}, {"unit", "tokens"}}},
                            {"output_sequence_length", {{"value", osl}, {"unit", "tokens"}}}}},
                          {"error", nullptr}}
               << "\n";
  std::ofstream(dir / "profile_export_aiperf.json") << nlohmann::json{{"run_description", description}}.dump();
}

nlohmann::json desc(const std::string& kind, const std::string& hardware, int conc, double time_scale,
                    const std::string& engine = "sglang") {
  return {{"kind", kind},       {"model", "Qwen/Qwen3-8B"}, {"hardware", hardware}, {"tp", 1},
          {"engine", engine},   {"concurrency", conc},      {"workload", "traces t"}, {"time_scale", time_scale},
          {"kv_offload", "none"}, {"command_line", "agentperf test " + kind + " c" + std::to_string(conc)}};
}

struct TempDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("agentperf_report_groups_" + std::to_string(::getpid()));
  TempDir() { std::filesystem::remove_all(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace

// A measurement with 95 % intervals: a prediction inside one is marked
// inside (its error is within what the measurement can tell), outside one it
// keeps its signed error and the interval it missed, in percent of the
// measured value. Measured 200 tok/s/GPU [190, 215] (the aggregate's total
// throughput interval, as a share, on the page's figure), TTFT p50 50 ms
// [45, 70], ITL p50 20 ms [19, 21]; predicted 220, 40, 25: throughput
// outside (+10 % against +7.5 %), TTFT outside, ITL outside.
TEST(Report, PairsSayWhetherThePredictionIsInsideTheMeasuredInterval) {
  TempDir t;
  write_result(t.path / "meas_c8", 10, 100, 100, 50, 20, desc("measured", "h200", 8, 1, "sglang"));
  write_result(t.path / "pred_c8", 10, 100, 120, 40, 25, desc("predicted", "h200", 8, 1, "agentperf-sim"));
  write_result(t.path / "meas_c16", 10, 100, 100, 50, 20, desc("measured", "h200", 16, 1, "sglang"));
  write_result(t.path / "pred_c16", 10, 100, 104, 48, 20.5, desc("predicted", "h200", 16, 1, "agentperf-sim"));
  for (const char* m : {"meas_c8", "meas_c16"})
    std::ofstream(t.path / m / "profile_export_aiperf.json")
        << nlohmann::json{{"run_description", desc("measured", "h200", std::string(m) == "meas_c8" ? 8 : 16, 1, "sglang")},
                          {"total_token_throughput", {{"avg", 2000.0}}},
                          {"confidence_intervals",
                           {{"metrics",
                             {{"total_token_throughput", {1900.0, 2150.0}},
                              {"time_to_first_token", {{"p50", {45.0, 70.0}}}},
                              {"inter_token_latency", {{"p50", {19.0, 21.0}}}}}}}}}
               .dump();
  const auto data = report::report_data({(t.path / "meas_c8").string(), (t.path / "pred_c8").string(),
                                         (t.path / "meas_c16").string(), (t.path / "pred_c16").string()},
                                        {});
  ASSERT_EQ(data["pairs"].size(), 2u) << data["pairs"].dump();
  const auto& c8 = data["pairs"][0];
  EXPECT_FALSE(c8["inside"]["tput_per_gpu"].get<bool>());
  EXPECT_FALSE(c8["inside"]["ttft_p50"].get<bool>());
  EXPECT_FALSE(c8["inside"]["itl_p50"].get<bool>());
  EXPECT_NEAR(c8["interval_pct"]["tput_per_gpu"][0].get<double>(), -5.0, 1e-9);
  EXPECT_NEAR(c8["interval_pct"]["tput_per_gpu"][1].get<double>(), 7.5, 1e-9);
  EXPECT_NEAR(c8["interval_pct"]["ttft_p50"][1].get<double>(), 40.0, 1e-9);
  // c16: 204 tok/s/GPU (+2 %), TTFT 48 ms (-4 %), ITL 20.5 ms (+2.5 %): all inside.
  const auto& c16 = data["pairs"][1];
  EXPECT_TRUE(c16["inside"]["tput_per_gpu"].get<bool>());
  EXPECT_TRUE(c16["inside"]["ttft_p50"].get<bool>());
  EXPECT_TRUE(c16["inside"]["itl_p50"].get<bool>());
  const std::string md = report::render_markdown(data);
  EXPECT_NE(md.find("+2.0% (inside)"), std::string::npos) << md;
  EXPECT_NE(md.find("+10.0% (interval -5.0/+7.5 %)"), std::string::npos) << md;
}

TEST(Report, GroupsByModelHardwareWorkloadAndTimeScaleWithAFrontierEach) {
  TempDir t;
  // h200, real time: c4 (100 tok/s/user, 200 tok/s), c8 (50, 300), c16 (40, 250: beaten by c8).
  write_result(t.path / "h200_c4", 10, 100, 100, 50, 10, desc("measured", "h200", 4, 1));
  write_result(t.path / "h200_c8", 10, 100, 200, 50, 20, desc("measured", "h200", 8, 1));
  write_result(t.path / "h200_c16", 10, 100, 150, 50, 25, desc("measured", "h200", 16, 1));
  // The same deployment served 4x faster than real time: 4x the throughput,
  // which would beat every real point if it shared their frontier.
  write_result(t.path / "h200_x4", 10, 400, 800, 12, 5, desc("measured", "h200", 8, 4));
  // Another GPU.
  write_result(t.path / "b200_c8", 10, 100, 500, 30, 8, desc("measured", "b200", 8, 1));
  std::vector<std::string> dirs;
  for (const char* d : {"h200_c4", "h200_c8", "h200_c16", "h200_x4", "b200_c8"}) dirs.push_back((t.path / d).string());
  const auto data = report::report_data(dirs, {});

  ASSERT_EQ(data["groups"].size(), 3u);
  const auto& pts = data["points"];
  // The three real-time h200 points share a group; the 4x run and the b200 run are alone.
  EXPECT_EQ(pts[0]["group"], pts[1]["group"]);
  EXPECT_EQ(pts[0]["group"], pts[2]["group"]);
  EXPECT_NE(pts[3]["group"], pts[0]["group"]);
  EXPECT_NE(pts[4]["group"], pts[0]["group"]);
  EXPECT_NE(pts[4]["group"], pts[3]["group"]);
  const auto& real = data["groups"][pts[0]["group"].get<std::size_t>()];
  const auto& scaled = data["groups"][pts[3]["group"].get<std::size_t>()];
  EXPECT_NE(scaled["label"].get<std::string>().find("sim x4 time scale"), std::string::npos) << scaled["label"];
  EXPECT_EQ(real["label"].get<std::string>().find("time scale"), std::string::npos) << real["label"];
  // Throughput per GPU is (isl + osl) per second here.
  EXPECT_DOUBLE_EQ(pts[1]["tput_per_gpu"].get<double>(), 300.0);
  EXPECT_DOUBLE_EQ(pts[3]["tput_per_gpu"].get<double>(), 1200.0);
  // The real group's frontier: c4 and c8, not c16, and not beaten by the 4x run.
  EXPECT_EQ(real["frontier"]["measured"], nlohmann::json({0, 1}));
  EXPECT_EQ(scaled["frontier"]["measured"], nlohmann::json({3}));
  EXPECT_FALSE(pts[2]["on_frontier"].get<bool>());
  // One configuration in the real group, its points in concurrency order, labelled.
  ASSERT_EQ(real["series"].size(), 1u);
  EXPECT_EQ(real["series"][0]["points"], nlohmann::json({0, 1, 2}));
  EXPECT_EQ(pts[2]["label"], "c16");
  EXPECT_TRUE(data["pairs"].empty());
}

TEST(Report, PairsAPredictionWithTheMeasurementOfItsPointAndShowsTheSignedError) {
  TempDir t;
  // Measured: 200 tok/s, TTFT 50 ms, ITL 20 ms. Predicted: 220 tok/s, 40 ms, 25 ms.
  write_result(t.path / "meas_c8", 10, 100, 100, 50, 20, desc("measured", "h200", 8, 1, "sglang"));
  write_result(t.path / "pred_c8", 10, 100, 120, 40, 25, desc("predicted", "h200", 8, 1, "agentperf-sim"));
  // A prediction at another concurrency has no measurement to pair with.
  write_result(t.path / "pred_c16", 10, 100, 150, 60, 30, desc("predicted", "h200", 16, 1, "agentperf-sim"));
  report::ReportOptions o;
  o.gpu_price_per_hour = 3.6;
  o.gpu_power_watts = 500;
  const auto data = report::report_data(
      {(t.path / "meas_c8").string(), (t.path / "pred_c8").string(), (t.path / "pred_c16").string()}, o);
  ASSERT_EQ(data["groups"].size(), 1u);  // kind does not split a group
  // Measured and predicted are separate series (and frontiers) of the group.
  EXPECT_EQ(data["groups"][0]["series"].size(), 2u);
  EXPECT_EQ(data["groups"][0]["frontier"]["measured"], nlohmann::json({0}));
  ASSERT_EQ(data["pairs"].size(), 1u);
  const auto& pr = data["pairs"][0];
  EXPECT_EQ(pr["measured"], 0);
  EXPECT_EQ(pr["predicted"], 1);
  EXPECT_NEAR(pr["error_pct"]["tput_per_gpu"].get<double>(), 10.0, 1e-9);
  EXPECT_NEAR(pr["error_pct"]["ttft_p50"].get<double>(), -20.0, 1e-9);
  EXPECT_NEAR(pr["error_pct"]["itl_p50"].get<double>(), 25.0, 1e-9);
  EXPECT_FALSE(pr.contains("inside"));  // the measurement carries no intervals
  // $3.60 per GPU-hour at 200 tok/s: 720,000 tokens per dollar-hour -> $5 per million.
  EXPECT_NEAR(data["points"][0]["cost_per_mtok"].get<double>(), 5.0, 1e-9);
  EXPECT_NEAR(data["points"][0]["tokens_per_joule"].get<double>(), 200.0 / 500, 1e-12);

  const std::string md = report::render_markdown(data);
  EXPECT_NE(md.find("### Qwen/Qwen3-8B on h200"), std::string::npos) << md;
  EXPECT_NE(md.find("| +10.0% | -20.0% | +25.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("$/M tok"), std::string::npos);
  EXPECT_NE(md.find("| 5.000 |"), std::string::npos) << md;
  EXPECT_NE(md.find("`agentperf test predicted c16`"), std::string::npos) << md;
  // Every table row has as many cells as its header.
  std::istringstream lines(md);
  std::string line;
  std::size_t header_cells = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("| configuration", 0) == 0) {
      header_cells = std::count(line.begin(), line.end(), '|');
    } else if (line.rfind("|", 0) == 0) {
      EXPECT_EQ(static_cast<std::size_t>(std::count(line.begin(), line.end(), '|')), header_cells) << line;
    }
  }
}

// A measurement of the simulator served 10x faster than real time (a sweep
// at --time-scale 10 against `sim serve`) pairs with the virtual-time
// prediction of its point (its dry run), the prediction moved onto the
// measurement's clock: throughput x10, latencies / 10. They stay in their
// own groups (a x10 run never shares a frontier with real-time ones).
TEST(Report, AMeasurementAtATimeScalePairsWithItsVirtualTimePrediction) {
  TempDir t;
  // Measured at x10: 2,200 tok/s, TTFT 4 ms, ITL 2.5 ms. Predicted (virtual
  // time): 200 tok/s, 50 ms, 20 ms; on the x10 clock 2,000 tok/s, 5 ms, 2 ms.
  write_result(t.path / "meas_c8", 10, 1100, 1100, 4, 2.5, desc("measured", "h200", 8, 10, "agentperf-sim"));
  write_result(t.path / "pred_c8", 10, 100, 100, 50, 20, desc("predicted", "h200", 8, 1, "agentperf-sim"));
  const auto data = report::report_data({(t.path / "meas_c8").string(), (t.path / "pred_c8").string()}, {});
  EXPECT_EQ(data["groups"].size(), 2u);
  ASSERT_EQ(data["pairs"].size(), 1u);
  const auto& pr = data["pairs"][0];
  EXPECT_EQ(pr["measured"], 0);
  EXPECT_EQ(pr["predicted"], 1);
  EXPECT_EQ(pr["group"], data["points"][0]["group"]);
  EXPECT_DOUBLE_EQ(pr["time_scale_factor"].get<double>(), 10.0);
  EXPECT_NEAR(pr["predicted_values"]["tput_per_gpu"].get<double>(), 2000.0, 1e-9);
  EXPECT_NEAR(pr["error_pct"]["tput_per_gpu"].get<double>(), 100.0 * (2000 - 2200) / 2200, 1e-9);
  EXPECT_NEAR(pr["error_pct"]["ttft_p50"].get<double>(), 25.0, 1e-9);
  EXPECT_NEAR(pr["error_pct"]["itl_p50"].get<double>(), -20.0, 1e-9);
  const std::string md = report::render_markdown(data);
  EXPECT_NE(md.find("(prediction on the x10 clock) | 8 | -9.1% | +25.0% | -20.0% |"), std::string::npos) << md;

  // A prediction at the measurement's own time scale, as good a match
  // otherwise, comes first.
  write_result(t.path / "pred_c8_x10", 10, 1000, 1000, 5, 2, desc("predicted", "h200", 8, 10, "agentperf-sim"));
  const auto both = report::report_data(
      {(t.path / "meas_c8").string(), (t.path / "pred_c8").string(), (t.path / "pred_c8_x10").string()}, {});
  ASSERT_EQ(both["pairs"].size(), 1u);
  EXPECT_EQ(both["pairs"][0]["predicted"], 2);
  EXPECT_DOUBLE_EQ(both["pairs"][0]["time_scale_factor"].get<double>(), 1.0);
}

// A replay of a live server knows of its deployment only what it is told
// (--inferencex-env MODEL=... RUNNER_TYPE=... KV_OFFLOADING=...): the fields
// it leaves out are open, the ones it names must agree, and of several
// predictions of its point the one agreeing on the most fields is paired;
// predictions it cannot tell apart leave it unpaired.
TEST(Report, AMeasurementPairsWithThePredictionThatAgreesOnTheFieldsBothName) {
  TempDir t;
  auto pred = [](int conc, const std::string& offload) {
    auto d = desc("predicted", "h200", conc, 1, "agentperf-sim");
    d["kv_offload"] = offload;
    d["spec_decoding"] = "none";
    return d;
  };
  // Told model, hardware and offload only (no TP, engine or MTP).
  nlohmann::json told = {{"kind", "measured"}, {"model", "Qwen/Qwen3-8B"}, {"hardware", "h200"},
                         {"concurrency", 8},   {"workload", "traces t"},  {"kv_offload", "dram"}};
  nlohmann::json untold = told;
  untold.erase("kv_offload");
  untold["concurrency"] = 16;
  nlohmann::json other_tp = told;
  other_tp["tp"] = 2;
  other_tp["concurrency"] = 32;
  write_result(t.path / "pred_c8_none", 10, 100, 100, 50, 20, pred(8, "none"));
  write_result(t.path / "pred_c8_dram", 10, 100, 110, 50, 20, pred(8, "dram"));
  write_result(t.path / "pred_c16_none", 10, 100, 100, 50, 20, pred(16, "none"));
  write_result(t.path / "pred_c16_dram", 10, 100, 110, 50, 20, pred(16, "dram"));
  write_result(t.path / "pred_c32", 10, 100, 100, 50, 20, pred(32, "dram"));  // TP1
  write_result(t.path / "pred_c8_dram_again", 10, 100, 120, 50, 20, pred(8, "dram"));  // the same point, predicted twice
  write_result(t.path / "meas_c8", 10, 100, 100, 50, 20, told);
  write_result(t.path / "meas_c16", 10, 100, 100, 50, 20, untold);
  write_result(t.path / "meas_c32", 10, 100, 100, 50, 20, other_tp);
  std::vector<std::string> dirs;
  for (const char* d : {"pred_c8_none", "pred_c8_dram", "pred_c16_none", "pred_c16_dram", "pred_c32", "meas_c8",
                        "meas_c16", "meas_c32", "pred_c8_dram_again"})
    dirs.push_back((t.path / d).string());
  const auto data = report::report_data(dirs, {});
  ASSERT_EQ(data["groups"].size(), 1u);
  // c8 names its offload: the dram prediction (the first of the two of that
  // deployment). c16 names none of the two predictions' differences:
  // unpaired. c32 ran TP2, the prediction TP1.
  ASSERT_EQ(data["pairs"].size(), 1u) << data["pairs"].dump();
  EXPECT_EQ(data["pairs"][0]["measured"], 5);
  EXPECT_EQ(data["pairs"][0]["predicted"], 1);
}

TEST(Report, ResultsWithoutARunDescriptionAreDescribedFromTheirInputConfig) {
  TempDir t;
  write_result(t.path / "old", 4, 100, 100, 50, 10, nullptr);
  // An aggregate from before run descriptions: a sim predict's input_config.
  std::ofstream(t.path / "old" / "profile_export_aiperf.json")
      << R"({"agentperf_version":"0.0.9","input_config":{"load":{"concurrency":4},)"
      << R"("engine":{"model":"qwen3-8b","hardware":"h200","tp":2,"virtual_time":true}}})";
  const auto data = report::report_data({(t.path / "old").string()}, {});
  const auto& p = data["points"][0];
  EXPECT_EQ(p["kind"], "predicted");
  EXPECT_EQ(p["concurrency"], 4);
  EXPECT_EQ(p["description"]["tp"], 2);
  EXPECT_EQ(p["description"]["agentperf_version"], "0.0.9");
  EXPECT_EQ(data["groups"][0]["label"].get<std::string>().rfind("qwen3-8b on h200", 0), 0u);
}

// A run whose intervals say its sample is small or its numbers loose is
// named in the report's warnings: on the console, at the top of the page
// and in the markdown.
TEST(Report, SmallSamplesAndWideIntervalsAreWarnedOf) {
  const auto dir = std::filesystem::temp_directory_path() / ("agentperf_report_ci_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "profile_export.jsonl")
      << R"({"metadata":{"benchmark_phase":"profiling","request_start_ns":0,"request_end_ns":1000000000,"worker_id":"w","session_num":0},)"
      << R"("metrics":{"time_to_first_token":{"value":50,"unit":"ms"},"request_latency":{"value":1000,"unit":"ms"}},"error":null})"
      << "\n";
  std::ofstream(dir / "profile_export_aiperf.json")
      << R"({"confidence_intervals":{"small_sample":true,"units":4,"unit":"session tree","min_units":10,)"
      << R"("wide":["time_to_first_token.p90"],"metrics":{}}})";
  const auto data = report::report_data({dir.string()}, report::ReportOptions{});
  const std::string w = data["warnings"].dump();
  EXPECT_NE(w.find("small sample: 4 session trees (fewer than 10)"), std::string::npos) << w;
  EXPECT_NE(w.find("wider than 20 % of the value: time_to_first_token.p90"), std::string::npos) << w;
  // The page and its markdown say so too, not only the console.
  const std::string md = report::render_markdown(data);
  EXPECT_NE(md.find("**Warnings**\n\n- " + dir.string() + ": small sample: 4 session trees"), std::string::npos) << md;
  EXPECT_NE(report::render_report(data).find("id=\"warnings\""), std::string::npos);
  std::filesystem::remove_all(dir);
}

// A capacity search's folder stands for its measured points: each point's
// run folder is a run of the report, and the search is the page's capacity
// section, points in concurrency order with the order they were measured
// in, each SLO's measured value and interval, and the simulator's predicted
// value moved from its virtual time onto the server's clock (time scale 10:
// a latency 10x shorter). A point whose run left no folder (a failed run)
// is in the table without a run.
TEST(Report, ACapacitySearchIsItsPointsAndItsAnswer) {
  TempDir t;
  const auto cap = t.path / "cap";
  write_result(cap / "c4", 20, 100, 10, 60, 5, desc("measured", "h200", 4, 10));
  write_result(cap / "c6", 20, 100, 10, 90, 5, desc("measured", "h200", 6, 10));
  const nlohmann::json search = {
      {"slos", {"ttft_p90<=104ms"}},
      {"capacity", 6},
      {"at_max_concurrency", false},
      {"lowest_missing", 8},
      {"limiting_slo", "ttft_p90<=104ms"},
      {"predicted_edge", 6},
      {"max_concurrency", 12},
      {"time_scale", 10.0},
      {"complete", true},
      {"measured",
       {{{"concurrency", 6}, {"met", true}, {"slos", {{{"slo", "ttft_p90<=104ms"}, {"value", 95.0}, {"met", true}, {"interval", {93.0, 99.0}}}}}},
        {{"concurrency", 8}, {"met", false}, {"limiting", "the run failed (exit 1)"}},
        {{"concurrency", 4}, {"met", true}, {"slos", {{{"slo", "ttft_p90<=104ms"}, {"value", 70.0}, {"met", true}}}}}}},
      {"predicted",
       {{{"concurrency", 8}, {"met", false}, {"slos", {{{"slo", "ttft_p90<=104ms"}, {"value", 1200.0}, {"met", false}}}}},
        {{"concurrency", 6}, {"met", true}, {"slos", {{{"slo", "ttft_p90<=104ms"}, {"value", 1000.0}, {"met", true}}}}}}}};
  std::ofstream(cap / "capacity.json") << search.dump(2);

  const auto data = report::report_data({cap.string()}, {});
  ASSERT_EQ(data["points"].size(), 2u);  // c6 and c4; c8 left no run
  ASSERT_EQ(data["capacity"].size(), 1u);
  const auto& c = data["capacity"][0];
  EXPECT_EQ(c["capacity"], 6);
  EXPECT_EQ(c["lowest_missing"], 8);
  ASSERT_EQ(c["measured"].size(), 3u);
  std::vector<int> conc, order;
  for (const auto& m : c["measured"]) {
    conc.push_back(m["concurrency"].get<int>());
    order.push_back(m["order"].get<int>());
  }
  EXPECT_EQ(conc, (std::vector<int>{4, 6, 8}));
  EXPECT_EQ(order, (std::vector<int>{3, 1, 2}));
  // Each point's run is the report's point of that concurrency.
  for (const auto& m : c["measured"]) {
    if (m["concurrency"] == 8) {
      EXPECT_TRUE(m["point"].is_null());
      continue;
    }
    const auto& p = data["points"][m["point"].get<std::size_t>()];
    EXPECT_EQ(p["concurrency"], m["concurrency"]) << p.dump();
  }
  const auto& slo = c["slos"][0];
  EXPECT_EQ(slo["threshold"], 104.0);
  EXPECT_TRUE(slo["at_most"].get<bool>());
  ASSERT_EQ(slo["measured"].size(), 2u);
  EXPECT_EQ(slo["measured"][1]["interval"], (nlohmann::json{93.0, 99.0}));
  ASSERT_EQ(slo["predicted"].size(), 2u);
  EXPECT_EQ(slo["predicted"][0]["concurrency"], 6);
  EXPECT_DOUBLE_EQ(slo["predicted"][0]["value"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(slo["predicted"][1]["value"].get<double>(), 120.0);

  auto grouped = data;
  const std::string md = report::render_markdown(grouped);
  EXPECT_NE(md.find("**Capacity 6**: concurrency 8 misses `ttft_p90<=104ms`. 3 measured points; the simulator "
                    "proposed 6."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 6 | 1 | meets | 95.0 [93.0, 99.0] |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 8 | 2 | misses the run failed (exit 1) | – |"), std::string::npos) << md;
  EXPECT_NE(report::render_report(grouped).find("capacity-section"), std::string::npos);

  // A capacity.json that is not one is named.
  std::ofstream(cap / "capacity.json") << R"({"capacity": 3})";
  try {
    report::report_data({cap.string()}, {});
    FAIL() << "a capacity.json without measured points was read";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("capacity.json: not a capacity search"), std::string::npos) << e.what();
  }
}
