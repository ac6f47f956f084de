// GPU telemetry for the report (report/gpu_telemetry.h): nvidia-smi's CSV
// and AIPerf's JSONL read, bad rows named by file:line and column, and the
// power, tokens per joule and cost each point gets, by hand.
#include "report/gpu_telemetry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "report/report.h"

using namespace agentperf;
using namespace agentperf::report;
namespace fs = std::filesystem;

namespace {

// 2026-12-03 19:44:56 UTC, seconds since the epoch (TZ=UTC date -d ... +%s).
constexpr std::int64_t kT = 1796327096;
constexpr std::int64_t kNs = 1000000000;

// nvidia-smi writes local time: the tests read it as UTC.
struct UtcZone {
  std::string old;
  bool had = false;
  UtcZone() {
    if (const char* tz = std::getenv("TZ")) old = tz, had = true;
    ::setenv("TZ", "UTC", 1);
    ::tzset();
  }
  ~UtcZone() {
    if (had) ::setenv("TZ", old.c_str(), 1);
    else ::unsetenv("TZ");
    ::tzset();
  }
};

struct Dir {
  fs::path path = fs::temp_directory_path() / ("agentperf_gpu_telemetry_" + std::to_string(::getpid()));
  Dir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    fs::create_directories((path / name).parent_path());
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

std::string error_of(const std::string& file) {
  try {
    read_gpu_telemetry(file);
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

const char* kHeader = "timestamp, index, power.draw [W], utilization.gpu [%], memory.used [MiB], temperature.gpu\n";

}  // namespace

TEST(GpuTelemetry, ReadsNvidiaSmiCsvWithUnitsInValuesAndNotAvailableValues) {
  UtcZone utc;
  Dir d;
  // nvidia-smi --format=csv (units in the values); GPU 1's power is [N/A];
  // temperature.gpu is not read, so its odd value is no error.
  const auto f = d.write("gpu.csv", std::string(kHeader) +
                                        "2026/12/03 19:44:56.286, 0, 312.45 W, 87 %, 40960 MiB, 61\n"
                                        "2026/12/03 19:44:56.290, 1, [N/A], 0 %, 1024 MiB, hot\n"
                                        "\n"
                                        "2026/12/03 19:44:57.286, 0, 300.00 W, [Not Supported], 41984 MiB, 62\n");
  const auto t = read_gpu_telemetry(f);
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.gpus[0].label, "GPU 0");
  EXPECT_EQ(t.gpus[1].label, "GPU 1");
  ASSERT_EQ(t.gpus[0].samples.size(), 2u);
  const auto& s = t.gpus[0].samples[0];
  EXPECT_EQ(s.t_ns, kT * kNs + 286000000);
  EXPECT_DOUBLE_EQ(*s.power_w, 312.45);
  EXPECT_DOUBLE_EQ(*s.util_pct, 87);
  EXPECT_DOUBLE_EQ(*s.mem_gib, 40);  // 40960 MiB
  EXPECT_FALSE(t.gpus[1].samples[0].power_w.has_value());
  EXPECT_DOUBLE_EQ(*t.gpus[1].samples[0].mem_gib, 1);
  EXPECT_FALSE(t.gpus[0].samples[1].util_pct.has_value());
  EXPECT_DOUBLE_EQ(*t.gpus[0].samples[1].mem_gib, 41);

  // --format=csv,nounits: the same numbers, the unit only in the header.
  const auto g = d.write("nounits.csv", std::string(kHeader) + "2026/12/03 19:44:56.286, 0, 312.45, 87, 40960, 61\n");
  const auto u = read_gpu_telemetry(g);
  EXPECT_DOUBLE_EQ(*u.gpus[0].samples[0].power_w, 312.45);
  EXPECT_DOUBLE_EQ(*u.gpus[0].samples[0].mem_gib, 40);
}

TEST(GpuTelemetry, AMalformedRowNamesTheFileLineAndColumn) {
  UtcZone utc;
  Dir d;
  const std::string ok = "2026/12/03 19:44:56.286, 0, 312.45 W, 87 %, 40960 MiB, 61\n";
  auto e = error_of(d.write("a.csv", std::string(kHeader) + ok + "2026/12/03 19:44:57.286, 0, abc W, 87 %, 40960 MiB, 61\n"));
  EXPECT_NE(e.find("a.csv:3: column 'power.draw [W]': 'abc W' is not a number"), std::string::npos) << e;
  e = error_of(d.write("b.csv", std::string(kHeader) + "2026/12/03 19:44:57.286, 0, 312.45 W\n"));
  EXPECT_NE(e.find("b.csv:2: 3 fields, the header has 6"), std::string::npos) << e;
  e = error_of(d.write("c.csv", std::string(kHeader) + "yesterday, 0, 312.45 W, 87 %, 40960 MiB, 61\n"));
  EXPECT_NE(e.find("c.csv:2: column 'timestamp': 'yesterday' is not a time"), std::string::npos) << e;
  e = error_of(d.write("d.csv", std::string(kHeader) + "2026/12/03 19:44:57.286, 0, 312.45 W, 87 %, 40 XB, 61\n"));
  EXPECT_NE(e.find("d.csv:2: column 'memory.used [MiB]'"), std::string::npos) << e;
  e = error_of(d.write("e.csv", std::string(kHeader) + "2026/12/03 19:44:57.286, 0, 312.45 kW, 87 %, 40960 MiB, 61\n"));
  EXPECT_NE(e.find("e.csv:2: column 'power.draw [W]': '312.45 kW' is not a number of watts"), std::string::npos) << e;
  e = error_of(d.write("f.csv", "timestamp, index, temperature.gpu\n" + ok));
  EXPECT_NE(e.find("f.csv:1: no GPU metric column"), std::string::npos) << e;
  e = error_of(d.write("g.jsonl", "{\"timestamp_ns\": 1, \"telemetry_data\": {\"gpu_power_usage\": \"high\"}}\n"));
  EXPECT_NE(e.find("g.jsonl:1: telemetry_data.gpu_power_usage: not a number"), std::string::npos) << e;
  EXPECT_THROW(read_gpu_telemetry((d.path / "none.csv").string()), UserError);
}

TEST(GpuTelemetry, TimestampsInEveryShape) {
  UtcZone utc;
  EXPECT_EQ(*parse_timestamp_ns("2026/12/03 19:44:56.286"), kT * kNs + 286000000);
  EXPECT_EQ(*parse_timestamp_ns("2026-12-03T19:44:56Z"), kT * kNs);
  EXPECT_EQ(*parse_timestamp_ns("2026-12-03T20:44:56.5+01:00"), kT * kNs + 500000000);
  EXPECT_EQ(*parse_timestamp_ns("1796327096.25"), kT * kNs + 250000000);  // seconds
  EXPECT_EQ(*parse_timestamp_ns("1796327096250"), kT * kNs + 250000000);  // ms
  EXPECT_EQ(*parse_timestamp_ns("1796327096250000123"), kT * kNs + 250000123);  // ns, every digit
  EXPECT_FALSE(parse_timestamp_ns("2026/13/03 19:44:56").has_value());
  EXPECT_FALSE(parse_timestamp_ns("soon").has_value());
}

TEST(GpuTelemetry, ReadsAIPerfsDcgmExport) {
  Dir d;
  // gpu_memory_used is in GB: 8.589934592 GB = 8 GiB.
  const auto f = d.write(
      "gpu_telemetry_export.jsonl",
      R"({"timestamp_ns": 1796327096000000000, "dcgm_url": "http://n1:9401/metrics", "gpu_index": 0, "gpu_uuid": "GPU-a", "gpu_model_name": "H200", "hostname": "n1", "telemetry_data": {"gpu_power_usage": 650.5, "gpu_utilization": 90, "gpu_memory_used": 8.589934592, "gpu_temperature": 55}})"
      "\n"
      R"({"timestamp_ns": 1796327096000000000, "dcgm_url": "http://n1:9401/metrics", "gpu_index": 1, "gpu_uuid": "GPU-b", "gpu_model_name": "H200", "hostname": "n1", "telemetry_data": {"gpu_power_usage": null, "gpu_utilization": 10}})"
      "\n");
  const auto t = read_gpu_telemetry(f);
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.gpus[0].label, "n1 GPU 0");
  EXPECT_DOUBLE_EQ(*t.gpus[0].samples[0].power_w, 650.5);
  EXPECT_NEAR(*t.gpus[0].samples[0].mem_gib, 8.0, 1e-12);
  EXPECT_FALSE(t.gpus[1].samples[0].power_w.has_value());
  EXPECT_DOUBLE_EQ(*t.gpus[1].samples[0].util_pct, 10);
}

TEST(GpuTelemetry, PowerOverTheProfilingWindowGivesTokensPerJouleAndTheRecipePriceTheCost) {
  UtcZone utc;
  Dir d;
  // 4 requests back to back from T, 1 s each, 100 input + 100 output tokens:
  // 200 tokens/s over the window [T, T+4 s], on 2 GPUs: 100 tokens/s/GPU.
  {
    fs::create_directories(d.path / "run");
    std::ofstream out(d.path / "run" / "profile_export.jsonl");
    for (int k = 0; k < 4; ++k)
      out << nlohmann::json{{"metadata",
                             {{"benchmark_phase", "profiling"},
                              {"request_start_ns", (kT + k) * kNs},
                              {"request_end_ns", (kT + k + 1) * kNs},
                              {"worker_id", "worker_0"}}},
                            {"metrics",
                             {{"time_to_first_token", {{"value", 50}, {"unit", "ms"}}},
                              {"inter_token_latency", {{"value", 10}, {"unit", "ms"}}},
                              {"request_latency", {{"value", 1000}, {"unit", "ms"}}},
                              {"input_sequence_length", {{"value", 100}, {"unit", "tokens"}}},
                              {"output_sequence_length", {{"value", 100}, {"unit", "tokens"}}}}},
                            {"error", nullptr}}
          << "\n";
  }
  // The recipe's cost block, as a sweep writes it: $3.60 per GPU-hour, 1000 W per GPU.
  d.write("run/profile_export_aiperf.json",
          nlohmann::json{{"run_description",
                          {{"kind", "measured"}, {"gpus", 2}, {"concurrency", 1}, {"gpu_price_per_hour", 3.6},
                           {"gpu_power_watts", 1000}}}}
              .dump());
  // GPU 0: 600 W before the window and 900 W after it (not counted), 300,
  // 500 and 400 W within: mean 400 W. GPU 1: 200 W twice. Sum: 600 W.
  d.write("run/gpu_metrics.csv", std::string(kHeader) +
                                     "2026/12/03 19:44:55.000, 0, 600 W, 90 %, 40960 MiB, 60\n"
                                     "2026/12/03 19:44:56.500, 0, 300 W, 90 %, 40960 MiB, 60\n"
                                     "2026/12/03 19:44:57.000, 1, 200 W, 50 %, 20480 MiB, 50\n"
                                     "2026/12/03 19:44:57.500, 0, 500 W, 90 %, 40960 MiB, 60\n"
                                     "2026/12/03 19:44:58.000, 1, 200 W, 50 %, 20480 MiB, 50\n"
                                     "2026/12/03 19:44:59.500, 0, 400 W, 90 %, 40960 MiB, 60\n"
                                     "2026/12/03 19:45:01.000, 0, 900 W, 90 %, 40960 MiB, 60\n");
  const std::string run = (d.path / "run").string();
  auto data = report_data({run}, {});
  auto p = data["points"][0];
  EXPECT_DOUBLE_EQ(p["tput_per_gpu"].get<double>(), 100.0);
  // Telemetry before the recipe's nominal power: 200 tokens/s / 600 W.
  EXPECT_EQ(p["power_source"], "telemetry");
  EXPECT_DOUBLE_EQ(p["power_w"].get<double>(), 600.0);
  EXPECT_NEAR(p["tokens_per_joule"].get<double>(), 200.0 / 600.0, 1e-12);
  // $3.60 per GPU-hour at 100 tokens/s/GPU (360,000 tokens per GPU-hour): $10 per million.
  EXPECT_EQ(p["price_source"], "recipe");
  EXPECT_NEAR(p["cost_per_mtok"].get<double>(), 10.0, 1e-9);
  // The page's series: both GPUs, seconds from the run's first request.
  const auto& gpu = data["runs"][0]["gpu"];
  EXPECT_DOUBLE_EQ(gpu["mean_power_w"].get<double>(), 600.0);
  ASSERT_EQ(gpu["gpus"].size(), 2u);
  EXPECT_EQ(gpu["gpus"][0]["t"], nlohmann::json({-1.0, 0.5, 1.5, 3.5, 5.0}));
  EXPECT_EQ(gpu["gpus"][1]["mem_gib"], nlohmann::json({20.0, 20.0}));
  const std::string md = render_markdown(data);
  EXPECT_NE(md.find("| 0.33 | 600 (telemetry) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 10.000 |"), std::string::npos) << md;

  // The flags come first: 250 W per GPU x 2 = 500 W; $1.80 per GPU-hour: $5 per million.
  ReportOptions o;
  o.gpu_power_watts = 250;
  o.gpu_price_per_hour = 1.8;
  p = report_data({run}, o)["points"][0];
  EXPECT_EQ(p["power_source"], "--gpu-power-watts");
  EXPECT_NEAR(p["tokens_per_joule"].get<double>(), 200.0 / 500.0, 1e-12);
  EXPECT_EQ(p["price_source"], "--gpu-price-per-hour");
  EXPECT_NEAR(p["cost_per_mtok"].get<double>(), 5.0, 1e-9);

  // --gpu-metrics names a file elsewhere: GPU 1 alone, 200 W.
  const auto other = d.write("elsewhere.csv", std::string(kHeader) + "2026/12/03 19:44:57.000, 1, 200 W, 50 %, 20480 MiB, 50\n");
  ReportOptions m;
  m.gpu_metrics[run] = other;
  p = report_data({run}, m)["points"][0];
  EXPECT_NEAR(p["tokens_per_joule"].get<double>(), 200.0 / 200.0, 1e-12);
  m.gpu_metrics = {{(d.path / "not-a-result").string(), other}};
  EXPECT_THROW(report_data({run}, m), UserError);

  // No telemetry: the recipe's 1000 W per GPU x 2 GPUs.
  fs::remove(d.path / "run" / "gpu_metrics.csv");
  p = report_data({run}, {})["points"][0];
  EXPECT_EQ(p["power_source"], "recipe");
  EXPECT_NEAR(p["tokens_per_joule"].get<double>(), 200.0 / 2000.0, 1e-12);

  // Telemetry from another day (a clock or time zone away): no power from it, and the report says why.
  d.write("run/gpu_metrics.csv", std::string(kHeader) + "2026/12/04 19:44:57.000, 0, 200 W, 50 %, 20480 MiB, 50\n");
  data = report_data({run}, {});
  EXPECT_EQ(data["points"][0]["power_source"], "recipe");
  ASSERT_EQ(data["warnings"].size(), 1u);
  EXPECT_NE(data["warnings"][0].get<std::string>().find("falls within the run"), std::string::npos)
      << data["warnings"][0];
}
