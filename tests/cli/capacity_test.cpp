// `agentperf capacity` against `sim serve`, the real binary and a real
// server: the SLO edge it finds is the one a dense measured sweep finds,
// with at most half the measured points, and what it writes says so.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "support/shell_run.h"
#include "support/sim_backend.h"

namespace fs = std::filesystem;
using agentperf::test_support::run_shell;

namespace {
fs::path capacity_temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("agentperf_capacity_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

// 4,000-token prompts and 100-token answers: on Qwen3-8B on an H200 the
// TTFT p90 grows by ~12 ms (at time scale 10) per request in flight, ~98 ms
// at 8 and ~110 ms at 9, so an SLO of 104 ms has its edge at 8 with ~6 ms
// on either side (measured on the 2-core VM; run-to-run spread ~1 ms when
// nothing runs beside it: the test runs alone, RUN_SERIAL, as a heavy test
// beside it moved the edge in one full run).
const std::string kWorkload = " --isl 4000 --osl 100 --slo 'ttft_p90<=104ms'";
}  // namespace

TEST(Capacity, FindsTheDenseSweepsEdgeWithAtMostHalfItsPoints) {
  auto backend = agentperf::test_support::start_sim_backend(10);
  const auto dir = capacity_temp_dir("edge");
  const std::string cli = std::string(AGENTPERF_CLI_PATH);

  // The dense sweep: every concurrency 1..12, each its own profile run.
  int dense_edge = 0;
  bool broken = false;
  for (int c = 1; c <= 12; ++c) {
    auto r = run_shell(cli + " profile --url " + backend->url() + " -c " + std::to_string(c) + kWorkload + " -q -o " +
                       (dir / ("dense-c" + std::to_string(c))).string() + " 2>&1");
    ASSERT_EQ(r.code, 0) << r.output;
    std::ifstream in(dir / ("dense-c" + std::to_string(c)) / "profile_export_aiperf.json");
    const auto agg = nlohmann::json::parse(in);
    // --slo puts goodput and attainment in every aggregate.
    ASSERT_TRUE(agg.contains("goodput") && agg.contains("slo_attainment")) << c;
    const bool met = agg["time_to_first_token"]["p90"].get<double>() <= 104;
    if (met && !broken) dense_edge = c;
    if (!met) broken = true;
  }
  ASSERT_GE(dense_edge, 2) << "the workload's edge moved: re-measure kWorkload";
  ASSERT_LT(dense_edge, 12) << "the workload's edge moved: re-measure kWorkload";

  auto r = run_shell(cli + " capacity --url " + backend->url() + kWorkload +
                     " --time-scale 10 --resolution 0 --max-concurrency 12 -q -o " + (dir / "cap").string() + " 2>&1");
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream in(dir / "cap" / "capacity.json");
  const auto cap = nlohmann::json::parse(in);
  EXPECT_EQ(cap["capacity"], dense_edge) << r.output;
  EXPECT_EQ(cap["lowest_missing"], dense_edge + 1) << r.output;
  EXPECT_EQ(cap["limiting_slo"], "ttft_p90<=104ms");
  const auto measured = cap["measured_point_count"].get<std::size_t>();
  EXPECT_LE(measured, 12u / 2) << r.output;
  EXPECT_EQ(cap["measured"].size(), measured);
  // Every measured point is a whole run folder, with the SLO's value and
  // its interval.
  for (const auto& p : cap["measured"]) {
    EXPECT_TRUE(fs::exists(fs::path(p["folder"].get<std::string>()) / "profile_export_aiperf.json")) << p.dump();
    EXPECT_TRUE(p["slos"][0].contains("interval")) << p.dump();
  }
  EXPECT_FALSE(cap["predicted"].empty());
  // The folder now holds a search: a second one into it needs --overwrite.
  auto again = run_shell(cli + " capacity --url " + backend->url() + kWorkload + " --max-concurrency 2 -q -o " +
                         (dir / "cap").string() + " 2>&1");
  EXPECT_EQ(again.code, 2) << again.output;
  EXPECT_NE(again.output.find("holds an earlier capacity search"), std::string::npos) << again.output;
  EXPECT_NE(r.output.find("Capacity: " + std::to_string(dense_edge) + " (c=" + std::to_string(dense_edge + 1) +
                          " misses ttft_p90<=104ms)"),
            std::string::npos)
      << r.output;
  // The answer and the points are in the search's store, as `results list`
  // reads it beside sweeps.
  auto list = run_shell(cli + " results list --store " + (dir / "cap").string() + " 2>&1");
  ASSERT_EQ(list.code, 0) << list.output;
  EXPECT_NE(list.output.find("capacity search cap under ttft_p90<=104ms: " + std::to_string(dense_edge) + " (c=" +
                             std::to_string(dense_edge + 1) + " misses ttft_p90<=104ms); " +
                             std::to_string(measured) + " measured points"),
            std::string::npos)
      << list.output;
  EXPECT_NE(list.output.find(std::to_string(measured) + " points: " + std::to_string(measured) + " done"),
            std::string::npos)
      << list.output;
  fs::remove_all(dir);
}

// --embedded-sim: no server to start; the search runs against the engine
// simulator in-process, stores its answer, and `report` draws it.
TEST(Capacity, SearchesTheEmbeddedSimulatorAndItsReportShowsTheAnswer) {
  const auto dir = capacity_temp_dir("embedded");
  const std::string cli = std::string(AGENTPERF_CLI_PATH);
  // An SLO every point up to 4 meets: the simulator proposes 4, one
  // measured point confirms it, and 4 is the search's maximum.
  auto r = run_shell(cli + " capacity --embedded-sim --time-scale 20 --isl 256 --osl 16 -n 40 --slo 'ttft_p90<=10s' "
                           "--max-concurrency 4 -q -o " + (dir / "cap").string() + " 2>&1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("Capacity: at least 4 (--max-concurrency) meets every SLO"), std::string::npos) << r.output;
  std::ifstream in(dir / "cap" / "capacity.json");
  const auto cap = nlohmann::json::parse(in);
  EXPECT_EQ(cap["capacity"], 4);
  EXPECT_EQ(cap["predicted_edge"], 4);
  EXPECT_EQ(cap["measured_point_count"], 1);
  // The measured run says it ran on the simulator at its time scale.
  std::ifstream agg_in(dir / "cap" / "c4" / "profile_export_aiperf.json");
  const auto agg = nlohmann::json::parse(agg_in);
  EXPECT_EQ(agg["run_description"]["time_scale"], 20.0) << agg["run_description"].dump();

  auto rep = run_shell(cli + " report " + (dir / "cap").string() + " -o " + (dir / "report.html").string() + " 2>&1");
  ASSERT_EQ(rep.code, 0) << rep.output;
  std::ifstream md_in(dir / "report.md");
  const std::string md((std::istreambuf_iterator<char>(md_in)), std::istreambuf_iterator<char>());
  EXPECT_NE(md.find("**Capacity at least 4** (the search's maximum meets every SLO). 1 measured points; the simulator "
                    "proposed 4."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 4 | 1 | meets |"), std::string::npos) << md;

  // --embedded-sim and --url are two servers: one is named.
  auto both = run_shell(cli + " capacity --embedded-sim --url http://127.0.0.1:9 --slo 'ttft_p90<=2s' 2>&1");
  EXPECT_EQ(both.code, 2) << both.output;
  EXPECT_NE(both.output.find("--embedded-sim searches the simulator started in-process: drop --url"),
            std::string::npos)
      << both.output;
  fs::remove_all(dir);
}

TEST(Capacity, BadInputIsNamed) {
  const std::string cli = std::string(AGENTPERF_CLI_PATH);
  auto none = run_shell(cli + " capacity --url http://127.0.0.1:9 2>&1");
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find("capacity needs at least one --slo"), std::string::npos) << none.output;
  auto bad = run_shell(cli + " capacity --url http://127.0.0.1:9 --slo 'ttft_p90>=2s' 2>&1");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--slo 'ttft_p90>=2s': ttft is a latency: use <="), std::string::npos) << bad.output;
  auto conc = run_shell(cli + " capacity --url http://127.0.0.1:9 -c 4 --slo 'ttft_p90<=2s' 2>&1");
  EXPECT_EQ(conc.code, 2) << conc.output;
  EXPECT_NE(conc.output.find("capacity chooses the concurrency itself"), std::string::npos) << conc.output;
  // profile takes --slo too, checked the same way.
  auto prof = run_shell(cli + " profile --url http://127.0.0.1:9 -c 1 --slo 'itl_p42<=5' 2>&1");
  EXPECT_EQ(prof.code, 2) << prof.output;
  EXPECT_NE(prof.output.find("percentile p42"), std::string::npos) << prof.output;
}
