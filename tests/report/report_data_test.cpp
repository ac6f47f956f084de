// The numbers the report draws, from result files written here.
#include "report/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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
  EXPECT_EQ(run["lanes"][0]["spans"].size(), 3u);
  EXPECT_NE(report::render_report(data).find("uPlot"), std::string::npos);
  EXPECT_THROW(report::report_data({(dir / "nope").string()}, o), UserError);
  std::filesystem::remove_all(dir);
}
