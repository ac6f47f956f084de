// Hardware profiles: built from measurements (fractions worked by hand
// below), validated on load, attached only to the spec they were measured
// against, and used by the step-time model in place of the spec's guesses.
#include "sim/hardware_profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "calibrate/profile_builder.h"
#include "common/error.h"
#include "sim/specs.h"
#include "sim/step_time.h"

using namespace agentperf;
using json = nlohmann::json;

namespace {

// H200 spec: HBM 4.8e12 B/s, bf16 0.989e15, fp8 1.979e15, host link 55.2e9.
json measurements() {
  return json::parse(R"({
    "format": "agentperf-gpu-measurements/1",
    "created": "2026-12-02T00:00:00Z",
    "device": {"name": "Test GPU", "memory_bytes": 150000000000},
    "launch": {"eager_launch_s": 4e-6, "graph_node_s": 5e-7, "graph_launch_s": 2e-6},
    "d2d_copy": {"bytes_per_s": 4.2e12},
    "host_link": [
      {"mode": "h2d", "page_bytes": 32768, "bytes": 1e9, "seconds": 0.1, "bytes_per_s": 11.04e9},
      {"mode": "h2d_kernel", "page_bytes": 32768, "bytes": 1e9, "seconds": 0.02, "bytes_per_s": 44.16e9},
      {"mode": "h2d", "page_bytes": 8388608, "bytes": 1e9, "seconds": 0.02, "bytes_per_s": 49.68e9},
      {"mode": "h2d_kernel", "page_bytes": 8388608, "bytes": 1e9, "seconds": 0.02, "bytes_per_s": 44.16e9},
      {"mode": "d2h", "page_bytes": 8388608, "bytes": 1e9, "seconds": 0.02, "bytes_per_s": 49e9}
    ],
    "gemm": [
      {"dtype": "bf16", "m": 1, "n": 8192, "k": 8192, "supported": true, "seconds": 4e-5, "flops": 134217728, "bytes": 1.2e8},
      {"dtype": "bf16", "m": 8192, "n": 8192, "k": 8192, "supported": true, "seconds": 1.5e-3, "flops": 1.0995116e12, "bytes": 4e8},
      {"dtype": "fp8", "m": 1, "n": 8192, "k": 8192, "supported": false}
    ],
    "kv_read": [
      {"batch": 1, "context": 1024, "bytes": 4194304, "seconds": 1e-5, "bytes_per_s": 0.96e12},
      {"batch": 128, "context": 16384, "bytes": 8589934592, "seconds": 2e-3, "bytes_per_s": 4.32e12}
    ]
  })");
}

calibrate::ProfileBuildOptions opts() { return {}; }

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("agentperf_profile_test_" + name);
  std::ofstream(p) << text;
  return p.string();
}

std::string built_profile_file(const std::string& name, const std::function<void(nlohmann::ordered_json&)>& edit = {}) {
  auto p = calibrate::build_hardware_profile(measurements(), "m.json", sim::load_hardware_spec("h200"), opts());
  if (edit) edit(p);
  return write_temp(name, p.dump(2));
}

std::string profile_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(HardwareProfile, FractionsAreMeasuredOverSpecPeaks) {
  const auto p = calibrate::build_hardware_profile(measurements(), "m.json", sim::load_hardware_spec("h200"), opts());
  const auto& eff = p["efficiency"];
  EXPECT_NEAR(eff["copy"].get<double>(), 4.2 / 4.8, 1e-12);
  // M=1: roofline = max(1.2e8 / 4.8e12, 1.34e8 / 0.989e15) = 25 us; measured 40 us.
  EXPECT_NEAR(eff["gemm"]["bf16"][0]["fraction"].get<double>(), 25e-6 / 4e-5, 1e-9);
  // M=8192: compute-bound, 1.0995e12 / 0.989e15 = 1.1117 ms of 1.5 ms.
  EXPECT_NEAR(eff["gemm"]["bf16"][1]["fraction"].get<double>(), 1.0995116e12 / 0.989e15 / 1.5e-3, 1e-9);
  EXPECT_FALSE(eff["gemm"].contains("fp8"));  // unsupported shapes give no curve
  EXPECT_NEAR(eff["kv_read"][0]["fraction"].get<double>(), 0.2, 1e-12);
  EXPECT_NEAR(eff["kv_read"][1]["fraction"].get<double>(), 0.9, 1e-12);
  // Host link: the better of memcpy and the gather kernel at each page size.
  EXPECT_NEAR(eff["host_link_h2d"][0]["fraction"].get<double>(), 0.8, 1e-12);
  EXPECT_NEAR(eff["host_link_h2d"][1]["fraction"].get<double>(), 0.9, 1e-12);
  EXPECT_DOUBLE_EQ(p["hbm_usable_bytes"].get<double>(), 150e9);
  EXPECT_EQ(p["launch_overhead_s"]["kernels_per_layer"].get<int>(), 12);
}

TEST(HardwareProfile, BuildRejectsMalformedMeasurements) {
  const auto h200 = sim::load_hardware_spec("h200");
  auto m = measurements();
  m["format"] = "something else";
  EXPECT_NE(profile_error_of([&] { calibrate::build_hardware_profile(m, "m.json", h200, opts()); }).find("'format'"), std::string::npos);
  m = measurements();
  m["d2d_copy"].erase("bytes_per_s");
  EXPECT_NE(profile_error_of([&] { calibrate::build_hardware_profile(m, "m.json", h200, opts()); }).find("d2d_copy.bytes_per_s"),
            std::string::npos);
  m = measurements();
  m["kv_read"][1]["bytes_per_s"] = -1;
  EXPECT_NE(profile_error_of([&] { calibrate::build_hardware_profile(m, "m.json", h200, opts()); }).find("kv_read[1].bytes_per_s"),
            std::string::npos);
  // 4.2 TB/s copy against a spec of 1 TB/s: the wrong spec, said so.
  auto slow = h200;
  slow.hbm_bandwidth = 1e12;
  EXPECT_NE(profile_error_of([&] { calibrate::build_hardware_profile(measurements(), "m.json", slow, opts()); }).find("wrong --hardware"),
            std::string::npos);
}

TEST(HardwareProfile, LoaderNamesTheBadField) {
  const auto missing = built_profile_file("missing.json", [](auto& p) { p["efficiency"].erase("kv_read"); });
  EXPECT_NE(profile_error_of([&] { sim::load_hardware_profile(missing); }).find("field 'efficiency.kv_read': must be a non-empty array, got nothing (the field is missing)"),
            std::string::npos);
  const auto high = built_profile_file("high.json", [](auto& p) { p["efficiency"]["gemm"]["bf16"][1]["fraction"] = 1.7; });
  const auto e = profile_error_of([&] { sim::load_hardware_profile(high); });
  EXPECT_NE(e.find("efficiency.gemm.bf16[1].fraction"), std::string::npos) << e;
  EXPECT_NE(e.find("1.7"), std::string::npos) << e;
  const auto zero_launch = built_profile_file("launch.json", [](auto& p) { p["launch_overhead_s"]["graph_node"] = 0; });
  EXPECT_NE(profile_error_of([&] { sim::load_hardware_profile(zero_launch); }).find("launch_overhead_s.graph_node"), std::string::npos);
  const auto raw = write_temp("raw.json", measurements().dump());
  EXPECT_NE(profile_error_of([&] { sim::load_hardware_profile(raw); }).find("calibrate profile"), std::string::npos);
  EXPECT_NE(profile_error_of([&] { sim::load_hardware_profile("/nonexistent/profile.json"); }).find("cannot read"), std::string::npos);
}

TEST(HardwareProfile, AttachesOnlyToTheSpecItWasMeasuredAgainst) {
  const auto path = built_profile_file("ok.json");
  auto b200 = sim::load_hardware_spec("b200");
  const auto e = profile_error_of([&] { sim::attach_hardware_profile(b200, sim::load_hardware_profile(path)); });
  EXPECT_NE(e.find("hbm_bandwidth"), std::string::npos) << e;
  EXPECT_EQ(b200.profile, nullptr);
  const auto h200 = sim::load_hardware_spec("h200", path);
  ASSERT_NE(h200.profile, nullptr);
  EXPECT_DOUBLE_EQ(h200.hbm_usable_bytes, 150e9);
  EXPECT_DOUBLE_EQ(h200.eff_hbm, 4.2 / 4.8);
  EXPECT_EQ(h200.profile->device_name, "Test GPU");
}

TEST(EfficiencyCurve, InterpolatesInLogSizeAndClampsOutside) {
  sim::EfficiencyCurve c({{1024, 0.2}, {16, 0.6}, {4096, 0.8}});  // unsorted on purpose
  EXPECT_DOUBLE_EQ(c.at(1), 0.6);
  EXPECT_DOUBLE_EQ(c.at(16), 0.6);
  EXPECT_NEAR(c.at(128), 0.6 + 0.5 * (0.2 - 0.6), 1e-12);  // log2: 4 -> 10, 7 is half way
  EXPECT_NEAR(c.at(2048), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(c.at(1e9), 0.8);
}

TEST(HardwareProfile, StepTimeUsesMeasuredFractions) {
  const auto model = sim::load_model_spec("qwen3-8b");
  sim::EngineConfig cfg;
  // A profile with flat fractions: GEMM 0.5, KV read 0.25, copy 0.875.
  const auto path = built_profile_file("flat.json", [](auto& p) {
    p["efficiency"]["gemm"]["bf16"] = nlohmann::ordered_json::array({{{"tokens", 1}, {"fraction", 0.5}}});
    p["efficiency"]["kv_read"] = nlohmann::ordered_json::array({{{"bytes", 1}, {"fraction", 0.25}}});
  });
  const auto hw = sim::load_hardware_spec("h200", path);
  sim::StepTimeModel steps(model, hw, cfg);
  const auto t = steps.decode_round(1, 10000);
  const double weights = model.dense_weight_bytes, kv = 10000 * model.kv_bytes_per_token_rank(1);
  EXPECT_NEAR(t.memory_s, weights / (4.8e12 * 0.5) + kv / (4.8e12 * 0.25), 1e-12);
  // Graph replay of 36 layers x 12 kernels at 0.5 us plus one 2 us launch.
  EXPECT_NEAR(t.launch_s, 2e-6 + 36 * 12 * 5e-7, 1e-15);
  EXPECT_NEAR(t.total_s, std::max(t.memory_s, t.compute_s) + t.comm_s + t.launch_s + hw.per_step_cpu_s, 1e-15);
  // Without the profile the spec's single efficiencies apply, and differ.
  const auto h200 = sim::load_hardware_spec("h200");  // the model keeps a reference
  sim::StepTimeModel plain(model, h200, cfg);
  EXPECT_NEAR(plain.decode_round(1, 10000).memory_s, (weights + kv) / (4.8e12 * 0.85), 1e-12);
}

TEST(HardwareProfile, ShippedH200ProfileLoadsAndCoversEveryClass) {
  const std::string path = std::string(AGENTPERF_DATA_DIR) + "/hardware/profiles/h200.json";
  const auto hw = sim::load_hardware_spec("h200", path);
  const auto& p = *hw.profile;
  EXPECT_EQ(p.device_name, "NVIDIA H200");
  for (const char* dtype : {"bf16", "fp8"}) {
    ASSERT_TRUE(p.gemm.count(dtype)) << dtype;
    // Decode GEMMs stream weights near HBM speed; large prefill GEMMs reach most of peak.
    EXPECT_GT(p.gemm.at(dtype).at(1), 0.5) << dtype;
    EXPECT_GT(p.gemm.at(dtype).at(8192), 0.6) << dtype;
  }
  EXPECT_GT(p.copy_fraction, 0.8);
  EXPECT_LT(p.kv_read.at(4e6), p.kv_read.at(8e9));  // small reads cannot fill the chip
  EXPECT_GT(p.host_link_h2d.at(32768), 0.8);          // the gather kernel is not launch-bound
}
