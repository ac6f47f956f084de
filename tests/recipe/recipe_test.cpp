// Recipes: validation errors, expansion with the launcher's derived values,
// and InferenceX's DRAM / HiCache arithmetic: DRAM GB = floor(min(available
// MiB, 2,861,022) x 2^20 x utilization x GPUs used / GPUs per node / 1e9),
// then per-rank --hicache-size H with H x TP x 31/15 <= usable (host pools:
// KV H + Mamba H + draft H/15). github.com/SemiAnalysisAI/InferenceX @ 843c6254ff69,
// utils/matrix_logic/generate_sweep_configs.py (agentic_dram_offload_gb) and
// benchmarks/single_node/agentic/qwen3.5_fp4_b200_sglang_mtp.sh.
#include "recipe/recipe.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"

using namespace agentperf;
using namespace agentperf::recipe;

namespace {
std::string write(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("agentperf_recipe_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p.string();
}
std::string recipe_error_of(const std::string& text) {
  try {
    load_recipe(write("bad.yaml", text));
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}
const char* kBase = R"(name: r
model: m
framework: sglang
hardware: {gpus-per-node: 8, available-cpu-dram-mib: 3095781}
scenarios:
  agentic-coding:
    - dram-utilization: 0.8
      search-space:
)";
}  // namespace

TEST(Recipe, DramBudgetAndHiCacheSizeMatchTheLauncher) {
  // b200-dgxc: 3,095,781 MiB capped at 2,861,022, x 0.8 x TP/8.
  EXPECT_EQ(total_cpu_dram_gb(3095781, 0.80, 2, 8), 599);
  EXPECT_EQ(total_cpu_dram_gb(3095781, 0.80, 4, 8), 1199);
  EXPECT_EQ(total_cpu_dram_gb(3095781, 0.80, 8, 8), 2399);
  EXPECT_EQ(hicache_size_per_rank_gb(599, 2), 144);
  EXPECT_EQ(hicache_size_per_rank_gb(1199, 4), 144);
  EXPECT_EQ(hicache_size_per_rank_gb(2399, 8), 144);
}

TEST(Recipe, ShippedRecipeExpandsToTheInferenceXPoints) {
  auto r = load_recipe(AGENTPERF_RECIPES_DIR "/qwen3.5-fp4-b200-sglang-agentic-mtp.yaml");
  auto points = expand(r);
  ASSERT_EQ(points.size(), 22u);
  const auto& p64 = points[8];  // TP4, no offload, conc 64
  EXPECT_EQ(p64.conc, 64);
  EXPECT_EQ(p64.max_running_requests, 128);
  EXPECT_EQ(p64.cuda_graph_max_bs, 64);
  EXPECT_EQ(p64.total_cpu_dram_gb, 0);
  const auto& h76 = points[12];  // TP4 + HiCache, conc 76
  EXPECT_EQ(h76.conc, 76);
  EXPECT_EQ(h76.cuda_graph_max_bs, 64);
  EXPECT_EQ(h76.total_cpu_dram_gb, 1199);
  EXPECT_EQ(h76.hicache_size_gb, 144);
  EXPECT_NEAR(h76.projected_host_gb, 1190.4, 0.1);  // 144 x 31/15 x 4 <= 1199
  EXPECT_NE(h76.command.find("--hicache-size 144"), std::string::npos);
  EXPECT_NE(h76.command.find("--max-running-requests 152"), std::string::npos);
  EXPECT_NE(h76.command.find("--speculative-num-draft-tokens 4"), std::string::npos);
  EXPECT_NE(h76.command.find("--port {port}"), std::string::npos);  // filled by the sweep
  EXPECT_EQ(points[0].command.find("hicache"), std::string::npos);
}

TEST(Recipe, ErrorsNameTheKeyAndLine) {
  auto e = recipe_error_of(std::string(kBase) + "        - {tp: 4, kv-offloading: none, conc-list: [1], colour: red}\n");
  EXPECT_NE(e.find("scenarios.agentic-coding[0].search-space[0].colour: unknown key"), std::string::npos) << e;
  EXPECT_NE(e.find(":9:"), std::string::npos) << e;
  e = recipe_error_of(std::string(kBase) + "        - {tp: 4, conc-list: [1]}\n");
  EXPECT_NE(e.find("kv-offloading: missing (expected none or dram)"), std::string::npos) << e;
  e = recipe_error_of(std::string(kBase) + "        - {tp: 4, kv-offloading: dram, conc-list: [1]}\n");
  EXPECT_NE(e.find("kv-offload-backend: required with kv-offloading: dram"), std::string::npos) << e;
  e = recipe_error_of(std::string(kBase) + "        - {tp: 16, kv-offloading: none, conc-list: [1]}\n");
  EXPECT_NE(e.find("must be in 1..8"), std::string::npos) << e;
  e = recipe_error_of(std::string(kBase) + "        - {tp: 4, kv-offloading: none, conc-list: [0]}\n");
  EXPECT_NE(e.find("must be at least 1"), std::string::npos) << e;
  e = recipe_error_of("name: [unclosed\n");
  EXPECT_NE(e.find("not valid YAML"), std::string::npos) << e;
  EXPECT_THROW(load_recipe("/nonexistent/recipe.yaml"), UserError);
}

TEST(Recipe, CostBlockGivesPriceAndPowerPerGpu) {
  const std::string entry = "        - {tp: 4, kv-offloading: none, conc-list: [1]}\n";
  auto r = load_recipe(write("cost.yaml", std::string(kBase) + entry + "cost: {gpu-price-per-hour: 2.5, gpu-power-watts: 1000}\n"));
  EXPECT_DOUBLE_EQ(*r.gpu_price_per_hour, 2.5);
  EXPECT_DOUBLE_EQ(*r.gpu_power_watts, 1000);
  r = load_recipe(write("nocost.yaml", std::string(kBase) + entry));
  EXPECT_FALSE(r.gpu_price_per_hour.has_value());
  EXPECT_FALSE(r.gpu_power_watts.has_value());
  auto e = recipe_error_of(std::string(kBase) + entry + "cost: {gpu-price: 2.5}\n");
  EXPECT_NE(e.find("cost.gpu-price: unknown key"), std::string::npos) << e;
  e = recipe_error_of(std::string(kBase) + entry + "cost: {gpu-power-watts: -5}\n");
  EXPECT_NE(e.find("cost.gpu-power-watts: must be > 0"), std::string::npos) << e;
}

TEST(Recipe, ABudgetThatCannotFitIsAnError) {
  auto path = write("tiny.yaml", std::string(R"(name: r
model: m
framework: sglang
hardware: {gpus-per-node: 8, available-cpu-dram-mib: 4000}
scenarios:
  agentic-coding:
    - dram-utilization: 0.8
      search-space:
        - {tp: 8, kv-offloading: dram, kv-offload-backend: {name: hicache}, conc-list: [8]}
)"));
  auto r = load_recipe(path);
  try {
    expand(r);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot fit a HiCache pool"), std::string::npos) << e.what();
  }
}

TEST(Recipe, SweepReplaySettingsAreCheckedAndTracesResolvedAgainstTheRecipe) {
  const std::string row = "        - {tp: 4, kv-offloading: none, conc-list: [1]}\n";
  auto e = recipe_error_of(std::string(kBase) + row + "replay: {duration: 60, endpoint-type: grpc}\n");
  EXPECT_NE(e.find("replay.endpoint-type: must be chat or completions"), std::string::npos) << e;
  e = recipe_error_of(std::string(kBase) + row + "replay: {duration: 60, speed: 2}\n");
  EXPECT_NE(e.find("replay.speed: unknown key"), std::string::npos) << e;
  e = recipe_error_of(std::string(kBase) + row + "server: {command: 'x {port}', startup-timeout: 0}\n");
  EXPECT_NE(e.find("server.startup-timeout: must be > 0"), std::string::npos) << e;
  const auto path = write("ok.yaml", std::string(kBase) + row +
                                         "server: {command: 'x {port}', startup-timeout: 90}\n"
                                         "replay: {duration: 5, traces: t/traces.jsonl, grace: 2, warmup: false}\n");
  const auto r = load_recipe(path);
  EXPECT_EQ(r.replay_traces, (std::filesystem::path(path).parent_path() / "t/traces.jsonl").string());
  EXPECT_DOUBLE_EQ(r.server_startup_timeout_s, 90);
  EXPECT_DOUBLE_EQ(r.replay_grace_s, 2);
  EXPECT_FALSE(r.replay_warmup);
  EXPECT_EQ(r.replay_endpoint_type, "completions");
  EXPECT_EQ(r.replay_seed, 42u);  // InferenceX's --random-seed
  e = recipe_error_of(std::string(kBase) + row + "replay: {duration: 60, random-seed: -1}\n");
  EXPECT_NE(e.find("replay.random-seed: must be >= 0"), std::string::npos) << e;
  const auto seeded = load_recipe(write("seed.yaml", std::string(kBase) + row + "replay: {duration: 5, random-seed: 7}\n"));
  EXPECT_EQ(seeded.replay_seed, 7u);
}

TEST(Recipe, AServerCommandWithoutAPortPlaceholderIsRejected) {
  // The sweep chooses each point's port and reaches the server only there:
  // a command that does not take {port} can never be reached.
  const std::string row = "        - {tp: 4, kv-offloading: none, conc-list: [1]}\n";
  const auto e = recipe_error_of(std::string(kBase) + row +
                          "server:\n  command: python3 -m sglang.launch_server --model-path {model} --tp {tp}\n");
  EXPECT_NE(e.find("agentperf_recipe_"), std::string::npos) << e;  // the file
  EXPECT_NE(e.find("bad.yaml:11: server.command: no {port} placeholder"), std::string::npos) << e;
  EXPECT_NE(e.find("expected the server's listen port as {port}"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;  // one line
  // With {port} the same command loads, and expansion leaves {port} to the sweep.
  const auto ok = load_recipe(write("port.yaml", std::string(kBase) + row +
                                                     "server:\n  command: python3 -m sglang.launch_server --port {port}\n"));
  EXPECT_NE(expand(ok).front().command.find("--port {port}"), std::string::npos);
}

// One reader of a flag's value in a server command line, for every flag the
// simulator takes from a launcher (tokenizer workers, sim serve's time scale).
TEST(Recipe, CommandFlagValueReadsSpaceAndEqualsForms) {
  EXPECT_EQ(recipe::command_flag_value("sglang --tokenizer-worker-num 6 --tp 4", "--tokenizer-worker-num"), "6");
  EXPECT_EQ(recipe::command_flag_value("agentperf sim serve --time-scale=10", "--time-scale"), "10");
  EXPECT_EQ(recipe::command_flag_value("x --tp 4", "--tokenizer-worker-num"), std::nullopt);
  // A longer flag that starts with it is another flag.
  EXPECT_EQ(recipe::command_flag_value("x --tp-size 8 --tp 2", "--tp"), "2");
  // Its positive integer: 0 when absent, not a number or not positive.
  EXPECT_EQ(command_flag_positive_int("sglang --scheduler-recv-interval 30", "--scheduler-recv-interval"), 30);
  EXPECT_EQ(command_flag_positive_int("sglang --cuda-graph-max-bs=$CONC", "--cuda-graph-max-bs"), 0);
  EXPECT_EQ(command_flag_positive_int("sglang --page-size 0", "--page-size"), 0);
  EXPECT_EQ(command_flag_positive_int("sglang --tp 8", "--page-size"), 0);
}
