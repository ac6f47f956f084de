// InferenceX master-config entries read as recipes (PATH#KEY): every
// agentic entry of both master configs expands and plans, the mapping table,
// the notes naming unmodelled fields, and one-line errors for bad keys.
//
// Test data: tests/data/inferencex/{nvidia,amd}-master-agentic.yaml, the
// agentic-coding entries of configs/{nvidia,amd}-master.yaml copied verbatim
// from github.com/SemiAnalysisAI/InferenceX @ 843c6254ff69 (extract_agentic.py).
// Expected counts were taken from those files with PyYAML, not from this code:
// nvidia 60 agentic entries (587 points, i.e. conc values over all rows; 37
// multinode; 21 with DP attention on a worker or row that runs), amd 15 (159
// points; 1 multinode); over both, the engines (single-node rows, and
// multinode workers with num-worker > 0, at TP x PCP) form 100 distinct
// (model, precision, GPU, TP, EP, DP attention), all of them for checkpoints
// with a spec in data/models (Qwen3.5 FP8/NVFP4/NVFP4-V2/MXFP4, GLM-5.2
// FP8/NVFP4/MXFP4, DeepSeek-V4-Pro FP4/FP8, Kimi-K3 FP4, MiniMax-M3
// FP8/NVFP4/MXFP4); 49 of them are Qwen3.5 and GLM-5.2.
#include "recipe/master_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>

#include "common/error.h"
#include "recipe/inferencex_map.h"
#include "recipe/master_matrix.h"
#include "recipe/point_engine_config.h"
#include "recipe/srt_slurm_recipe.h"
#include "sim/memory_plan.h"
#include "sim/specs.h"
#include "support/shell_run.h"

using namespace agentperf;
using namespace agentperf::recipe;

namespace {
const std::string kNvidia = std::string(AGENTPERF_TEST_DATA_DIR) + "/inferencex/nvidia-master-agentic.yaml";
const std::string kAmd = std::string(AGENTPERF_TEST_DATA_DIR) + "/inferencex/amd-master-agentic.yaml";

std::string write_master_file(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("agentperf_master_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p.string();
}
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}
struct Outcome {
  int code;
  std::string output;
};
Outcome run_cli(const std::string& args) {
  // (appended in place: GCC 12 warns falsely on "lit" + std::string&& chains)
  std::string cmd = AGENTPERF_CLI_PATH;
  cmd.append(" ").append(args).append(" 2>&1");
  const auto r = agentperf::test_support::run_shell(cmd);
  return {r.code, r.output};
}
bool has_note(const Recipe& r, const std::string& needle) {
  for (const auto& n : r.notes)
    if (n.find(needle) != std::string::npos) return true;
  return false;
}
// A small master config: one entry per case, the rest of each entry valid.
const char* kSmall = R"(fixed-only:
  image: img
  model: Qwen/Qwen3.5-397B-A17B-FP8
  model-prefix: qwen3.5
  precision: fp8
  framework: sglang
  runner: cluster:b200-dgxc
  multinode: false
  scenarios:
    fixed-seq-len:
    - {isl: 1024, osl: 1024, search-space: [{tp: 8, conc-start: 4, conc-end: 64}]}
vllm-dep:
  image: img
  model: Qwen/Qwen3.5-397B-A17B-FP8
  model-prefix: qwen3.5
  precision: fp8
  framework: vllm
  runner: cluster:b200-dgxc
  multinode: false
  scenarios:
    agentic-coding:
    - dram-utilization: 0.5
      search-space:
      - {tp: 8, ep: 8, dp-attn: true, spec-decoding: mtp, kv-offloading: none, conc-start: 1, conc-end: 24,
         router: {name: vllm-router, version: 0.1.14}}
      - {tp: 4, pp: 2, kv-offloading: dram, kv-offload-backend: {name: vllm-simple}, conc-list: [8]}
      - {tp: 8, dcp-size: 8, kv-offloading: none, conc-list: [2]}
      - {tp: 4, pcp-size: 2, kv-offloading: none, conc-list: [2]}
dynamo-disagg:
  image: img
  model: nvidia/GLM-5.2-NVFP4
  model-prefix: glm5.2
  precision: fp4
  framework: dynamo-sglang
  runner: cluster:gb200-nv
  multinode: true
  disagg: true
  kv-p2p-transfer: nixl
  scenarios:
    agentic-coding:
    - dram-utilization: 0.8
      search-space:
      - spec-decoding: mtp
        kv-offloading: dram
        kv-offload-backend: {name: hicache}
        conc-list: [48]
        prefill: {num-worker: 1, tp: 8, ep: 8, dp-attn: true, additional-settings: [CONFIG_FILE=recipes/x.yaml]}
        decode: {num-worker: 4, tp: 4, ep: 1, dp-attn: false}
colour:
  image: img
  model: m
  model-prefix: m
  precision: fp8
  framework: sglang
  runner: cluster:b200-dgxc
  multinode: false
  scenarios:
    agentic-coding:
    - search-space:
      - {tp: 8, kv-offloading: none, conc-list: [1], colour: red}
moon:
  image: img
  model: m
  model-prefix: m
  precision: fp8
  framework: sglang
  runner: cluster:moon-base
  multinode: false
  scenarios:
    agentic-coding:
    - search-space:
      - {tp: 8, kv-offloading: none, conc-list: [1]}
no-spec:
  image: img
  model: acme/NoSpec-1T
  model-prefix: nospec
  precision: fp8
  framework: sglang
  runner: cluster:b200-dgxc
  multinode: false
  scenarios:
    agentic-coding:
    - search-space:
      - {tp: 8, kv-offloading: none, conc-list: [1, 4, 8]}
too-wide:
  image: img
  model: m
  model-prefix: m
  precision: fp8
  framework: sglang
  runner: cluster:gb200-nv
  multinode: false
  scenarios:
    agentic-coding:
    - search-space:
      - {tp: 8, kv-offloading: none, conc-list: [1]}
)";
}  // namespace

TEST(MasterConfig, EveryAgenticEntryExpandsAndPlans) {
  struct File {
    std::string path;
    std::size_t entries;
    std::size_t points;
    int multinode;
  };
  using Tuple = std::tuple<std::string, std::string, std::string, int, int, bool>;
  std::set<Tuple> tuples, with_spec, planned;
  int entries_with_spec = 0, plans = 0;
  for (const File& f : {File{kNvidia, 60, 587, 37}, File{kAmd, 15, 159, 1}}) {
    const MasterConfig mc(f.path);
    const auto keys = mc.agentic_keys();
    ASSERT_EQ(keys.size(), f.entries) << f.path;
    EXPECT_EQ(mc.entry_count(), f.entries) << f.path;  // the copy holds only the agentic entries
    std::size_t points = 0;
    int multinode = 0;
    for (const auto& key : keys) {
      Recipe r;
      ASSERT_NO_THROW(r = load_recipe(f.path + "#" + key)) << key;
      EXPECT_EQ(r.name, key);
      multinode += r.multinode;
      std::vector<ExpandedPoint> ps;
      ASSERT_NO_THROW(ps = expand(r)) << key;
      points += ps.size();
      std::set<std::string> names;
      for (const auto& p : ps) EXPECT_TRUE(names.insert(p.exp_name).second) << key << ": exp_name repeats: " << p.exp_name;
      const RunnerRow* runner = find_runner(r.runner);
      ASSERT_NE(runner, nullptr) << r.runner;
      std::optional<sim::ModelSpec> model;
      std::optional<sim::HardwareSpec> hw;
      if (!r.sim_model_spec.empty()) {
        ++entries_with_spec;
        model = sim::load_model_spec(r.sim_model_spec);
        hw = sim::load_hardware_spec(r.sim_hardware_spec);
      } else {
        EXPECT_NE(r.sim_missing.find("no simulator model spec for " + r.model), std::string::npos) << r.sim_missing;
      }
      for (const auto& p : ps)
        for (const auto& eng : engines_for(r, p, sim::EngineCosts{}, model ? &*model : nullptr, hw ? &*hw : nullptr)) {
          const auto& w = eng.role == "decode" ? p.entry->decode : p.entry->prefill;
          const int tp = w ? w->tp * w->pcp : p.entry->tp;
          const int ep = w ? w->ep : p.entry->ep;
          const bool dpa = w ? w->dp_attn : p.entry->dp_attn;
          const Tuple t{r.model, r.precision, runner->hardware, tp, ep, dpa};
          tuples.insert(t);
          if (!model) continue;
          with_spec.insert(t);
          sim::MemoryPlan mp;
          ASSERT_NO_THROW(mp = sim::plan_memory(eng.model ? *eng.model : *model, *hw, eng.config))
              << key << " " << p.exp_name << " " << eng.role << " TP" << eng.config.tp;
          EXPECT_GT(mp.kv_tokens, 100000) << key << " " << p.exp_name << " " << eng.role;
          EXPECT_GT(mp.max_running_requests, 0) << key << " " << p.exp_name << " " << eng.role;
          ++plans;
          planned.insert(t);
        }
    }
    EXPECT_EQ(points, f.points) << f.path;
    EXPECT_EQ(multinode, f.multinode) << f.path;
  }
  EXPECT_EQ(tuples.size(), 100u);
  EXPECT_EQ(with_spec.size(), 100u);
  EXPECT_EQ(planned.size(), 100u);  // all of them: a regression (a spec that stops fitting) shows here
  EXPECT_EQ(entries_with_spec, 75);
  int qwen_glm = 0;
  for (const auto& t : tuples)
    qwen_glm += std::get<0>(t).find("Qwen3.5") != std::string::npos || std::get<0>(t).find("GLM-5.2") != std::string::npos;
  EXPECT_EQ(qwen_glm, 49);
  EXPECT_GT(plans, 0);

  // `agentperf recipe matrix` counts the same.
  auto rows = plan_matrix(MasterConfig(kNvidia));
  const auto amd = plan_matrix(MasterConfig(kAmd));
  rows.insert(rows.end(), amd.begin(), amd.end());
  const auto c = coverage(rows);
  EXPECT_EQ(c.entries, 75);
  EXPECT_EQ(c.entries_with_spec, 75);
  EXPECT_EQ(c.tuples, 100);
  EXPECT_EQ(c.tuples_with_spec, 100);
  EXPECT_EQ(c.tuples_planned, 100);
  EXPECT_EQ(c.rows_not_fitting, 0);
}

TEST(MasterConfig, TheTableMapsCheckpointsAndRunners) {
  // configs/runners.yaml hardware @ 843c6254ff69.
  const auto* b200 = find_runner("cluster:b200-dgxc");
  ASSERT_NE(b200, nullptr);
  EXPECT_STREQ(b200->hardware, "b200");
  EXPECT_EQ(b200->gpus_per_node, 8);
  EXPECT_EQ(b200->available_cpu_dram_mib, 3095781);
  const auto* gb200 = find_runner("cluster:gb200-nv");
  ASSERT_NE(gb200, nullptr);
  EXPECT_STREQ(gb200->hardware, "gb200");
  EXPECT_EQ(gb200->gpus_per_node, 4);
  EXPECT_EQ(gb200->available_cpu_dram_mib, 860160);
  EXPECT_EQ(find_runner("cluster:h200-dgxc")->available_cpu_dram_mib, 1471356);
  EXPECT_EQ(find_runner("cluster:mi355x-amds")->available_cpu_dram_mib, 3095781);
  EXPECT_EQ(find_runner("cluster:nowhere"), nullptr);
  EXPECT_STREQ(find_model_spec("nvidia/Qwen3.5-397B-A17B-NVFP4-V2", "fp4")->spec, "qwen3.5-397b-a17b-nvfp4");
  EXPECT_STREQ(find_model_spec("zai-org/GLM-5.2-FP8", "fp8")->spec, "glm-5.2-fp8");
  EXPECT_EQ(find_model_spec("zai-org/GLM-5.2-FP8", "fp4"), nullptr);  // the precision is part of the key
  EXPECT_STREQ(find_model_spec("deepseek-ai/DeepSeek-V4-Pro", "fp8")->spec, "deepseek-v4-pro-fp8");
  EXPECT_EQ(find_model_spec("acme/NoSpec-1T", "fp8"), nullptr);
  // Every row names a spec that exists.
  for (const auto& row : model_spec_rows()) {
    sim::ModelSpec m;
    ASSERT_NO_THROW(m = sim::load_model_spec(row.spec)) << row.spec;
    EXPECT_EQ(m.name, row.spec);
  }
  for (const auto& row : runner_rows()) {
    if (*row.hardware) {
      EXPECT_NO_THROW(sim::load_hardware_spec(row.hardware)) << row.runner;
    }
  }

  // An entry takes them: Qwen3.5 NVFP4 on B200 at TP4 with HiCache, conc 72.
  const auto r = load_recipe(kNvidia + "#qwen3.5-fp4-b200-sglang-agentic-mtp");
  EXPECT_EQ(r.sim_model_spec, "qwen3.5-397b-a17b-nvfp4");
  EXPECT_EQ(r.sim_hardware_spec, "b200");
  EXPECT_EQ(r.gpus_per_node, 8);
  EXPECT_EQ(r.available_cpu_dram_mib, 3095781);
  EXPECT_EQ(r.replay_traces, "synth:cc-weka-256k");
  EXPECT_TRUE(r.notes.empty());  // an SGLang single-node entry: nothing unmodelled
  // The 1M-context families replay the unfiltered corpus (benchmark_lib.sh
  // resolve_trace_source): GLM-5.2, DeepSeek-V4, MiniMax-M3, Kimi-K3.
  EXPECT_EQ(load_recipe(kNvidia + "#glm5.2-fp4-b300-sglang-agentic-mtp").replay_traces, "synth:cc-weka-1m");
  EXPECT_EQ(load_recipe(kNvidia + "#dsv4-fp4-b200-sglang-agentic-hicache-mtp").replay_traces, "synth:cc-weka-1m");
  EXPECT_EQ(load_recipe(kAmd + "#glm5.2-fp8-mi325x-sglang-agentic-mtp").replay_traces, "synth:cc-weka-1m");
  const auto ps = expand(r);
  ASSERT_EQ(ps.size(), 32u);  // 15 + 5 + 5 + 7 concs
  const auto& p = ps[19];     // TP4 + HiCache, conc 72
  EXPECT_EQ(p.exp_name, "qwen3.5-fp4-b200-sglang-agentic-mtp_tp4_mtp_conc72_kvdram-hicache");
  // floor(min(3,095,781, 2,861,022) x 2^20 x 0.8 x 4/8 / 1e9) = 1,199; H = floor((1,199 - 4) x 15 / 4 / 31) = 144
  EXPECT_EQ(p.total_cpu_dram_gb, 1199);
  EXPECT_EQ(p.hicache_size_gb, 144);
  for (const char* flag : {"--tp 4 --ep-size 1", "--max-running-requests 144", "--cuda-graph-max-bs 64",
                           "--mem-fraction-static 0.80",
                           "--hicache-size 144", "--speculative-num-draft-tokens 4", "--port {port}",
                           "--model-path nvidia/Qwen3.5-397B-A17B-NVFP4"})
    EXPECT_NE(p.command.find(flag), std::string::npos) << flag << " in " << p.command;

  // The launcher's memory fraction (inferencex_map.cpp, launchers at
  // 843c6254ff69): dsv4_fp4_b300_sglang_mtp.sh passes 0.88, 0.95 with DP
  // attention, 0.94 from conc 512; kimik3_fp4_b300_vllm_mtp.sh 0.92, 0.90 from
  // conc 56; an unknown pair 0.80.
  EXPECT_DOUBLE_EQ(launcher_memory_fraction("sglang", "dsv4", "b300", 4, false, 8), 0.88);
  EXPECT_DOUBLE_EQ(launcher_memory_fraction("sglang", "dsv4", "b300", 4, true, 64), 0.95);
  EXPECT_DOUBLE_EQ(launcher_memory_fraction("sglang", "dsv4", "b300", 8, true, 512), 0.94);
  // DeepSeek-V4.1-Flash shares V4-Pro's prefix but none of its launchers.
  EXPECT_DOUBLE_EQ(launcher_memory_fraction("sglang", "dsv41flash", "b200", 4, false, 8), 0.80);
  EXPECT_DOUBLE_EQ(launcher_memory_fraction("sglang", "dsv41flash", "b200", 2, false, 8), 0.92);
  EXPECT_DOUBLE_EQ(launcher_memory_fraction("vllm", "dsv41flash", "gb300", 4, false, 8), 0.90);
  EXPECT_DOUBLE_EQ(launcher_memory_fraction("vllm", "dsv4", "b200", 8, false, 8), 0.90);
  EXPECT_DOUBLE_EQ(launcher_memory_fraction("vllm", "kimik3", "b300", 8, false, 48), 0.92);
  EXPECT_DOUBLE_EQ(launcher_memory_fraction("vllm", "kimik3", "b300", 8, false, 56), 0.90);
  EXPECT_DOUBLE_EQ(launcher_memory_fraction("sglang", "kimik3", "b300", 8, false, 56), 0.80);
  bool dsv4_dpa_seen = false;
  for (const auto& q : expand(load_recipe(kNvidia + "#dsv4-fp4-b300-sglang-agentic-hicache-mtp")))
    if (q.entry->dp_attn) {
      dsv4_dpa_seen = true;
      EXPECT_NE(q.command.find(q.conc >= 512 ? "--mem-fraction-static 0.94" : "--mem-fraction-static 0.95"),
                std::string::npos) << q.command;
    }
  EXPECT_TRUE(dsv4_dpa_seen);

  // A multinode prefill worker budgets DRAM for its GPUs on one node
  // (generate_sweep_configs.py worker_gpus_per_node): GLM-5.2 on GB200, prefill
  // TP8 over two 4-GPU trays: floor(860,160 x 2^20 x 0.8 x 4/4 / 1e9) = 721,
  // H = floor((721 - 4) x 15 / 4 / 31) = 86.
  const auto g = expand(load_recipe(kNvidia + "#glm5.2-fp4-gb200-dynamo-sglang-agentic-agg"));
  ASSERT_FALSE(g.empty());
  EXPECT_EQ(g[0].total_cpu_dram_gb, 721);
  EXPECT_EQ(g[0].hicache_size_gb, 86);
  EXPECT_EQ(g[0].exp_name, "glm5.2-fp4-gb200-dynamo-sglang-agentic-agg_p1x8_d0x8_mtp_conc1_kvdram-hicache");
}

// A multinode pool's engine flags come from the srt-slurm recipe its
// CONFIG_FILE names, found under benchmarks/multi_node/srt-slurm-recipes of
// the checkout the master config sits in (here the trimmed copies beside the
// master-config copies, tests/data/inferencex/extract_srt_slurm_recipes.py).
namespace {
// The engines of the first point of `r` that `pick` selects; none when no
// point does (the caller's size check then fails).
std::vector<PointEngine> engines_of_first(const Recipe& r, const std::function<bool(const ExpandedPoint&)>& pick) {
  for (const auto& p : expand(r))
    if (pick(p)) return engines_for(r, p, sim::EngineCosts{}, nullptr, nullptr);
  return {};
}
}  // namespace

TEST(MasterConfig, AMultinodePoolTakesItsSrtSlurmRecipesFlags) {
  // vLLM, aggregated: agg-gb300-tp4-mtp-agentic.yaml gives
  // --gpu-memory-utilization 0.94, --block-size 256, --stream-interval 10.
  const auto v = load_recipe(kNvidia + "#dsv4-fp4-gb300-dynamo-vllm-agentic-mtp-agg");
  EXPECT_TRUE(has_note(v, "agentic.yaml: each worker pool's engine flags are read from its role in the srt-slurm recipe"));
  const auto ve = engines_of_first(v, [](const ExpandedPoint& p) { return p.entry->tp == 4; });
  ASSERT_EQ(ve.size(), 1u);
  EXPECT_EQ(ve[0].config.scheduler, sim::SchedulerKind::vllm);
  EXPECT_DOUBLE_EQ(ve[0].config.mem_fraction_static, 0.94);
  EXPECT_EQ(ve[0].config.page_size, 256);
  EXPECT_EQ(ve[0].config.stream_interval, 10);
  EXPECT_EQ(ve[0].config.kv_cache_dtype_bytes, 1);

  // SGLang, disaggregated: each role its own flags (the c64 recipe: prefill
  // at 0.80 with 65,536-token chunks and 1,100 state slots, decode at 0.75
  // with 4,096 and 1,024).
  const auto s = load_recipe(kNvidia + "#qwen3.5-fp4-gb300-dynamo-sglang-agentic-disagg");
  const auto se = engines_of_first(s, [](const ExpandedPoint& p) { return p.conc == 64; });
  ASSERT_EQ(se.size(), 2u);
  EXPECT_EQ(se[0].role, "prefill");
  EXPECT_EQ(se[0].config.scheduler, sim::SchedulerKind::sglang);
  EXPECT_DOUBLE_EQ(se[0].config.mem_fraction_static, 0.80);
  EXPECT_EQ(se[0].config.chunked_prefill_size, 65536);
  EXPECT_EQ(se[0].config.max_mamba_cache_size, 1100);
  EXPECT_EQ(se[1].role, "decode");
  EXPECT_DOUBLE_EQ(se[1].config.mem_fraction_static, 0.75);
  EXPECT_EQ(se[1].config.chunked_prefill_size, 4096);
  EXPECT_EQ(se[1].config.max_mamba_cache_size, 1024);
  EXPECT_EQ(se[1].config.page_size, 64);

  // An override variant (glm5.2-agentx.yaml:zip_override_mtp_agentx_hightpt[1],
  // the c192 row) is the base recipe with its section merged in: the decode
  // pool takes the section's fraction 0.85 and its cap of 144 over 16 DP
  // ranks, the prefill pool the base's cap of 16 over its 8 ranks and the
  // section's 8,192 prefill tokens.
  const auto g = load_recipe(kNvidia + "#glm5.2-fp4-gb300-dynamo-sglang-agentic-disagg");
  const auto ge = engines_of_first(g, [](const ExpandedPoint& p) { return p.conc == 192; });
  ASSERT_EQ(ge.size(), 2u);
  EXPECT_EQ(ge[0].role, "prefill");
  EXPECT_DOUBLE_EQ(ge[0].config.mem_fraction_static, 0.80);
  EXPECT_EQ(ge[0].config.max_prefill_tokens, 8192);
  EXPECT_EQ(ge[0].config.max_running_requests, 2);
  EXPECT_EQ(ge[1].role, "decode");
  EXPECT_DOUBLE_EQ(ge[1].config.mem_fraction_static, 0.85);
  EXPECT_EQ(ge[1].config.max_running_requests, 9);
  // The lowlat variants keep the base's decode fraction (0.9).
  const auto le = engines_of_first(g, [](const ExpandedPoint& p) { return p.conc == 45; });
  ASSERT_EQ(le.size(), 2u);
  EXPECT_DOUBLE_EQ(le[1].config.mem_fraction_static, 0.9);
}

TEST(SrtSlurmRecipe, AVariantSlicesItsListsAndMergesIntoTheBase) {
  const std::string file =
      write_master_file("zip.yaml",
                        "base:\n"
                        "  backend:\n"
                        "    sglang_config:\n"
                        "      decode: {tensor-parallel-size: 4, mem-fraction-static: 0.9, enable-metrics: true}\n"
                        "zip_override_x:\n"
                        "  name: [a, b, c]\n"
                        "  backend:\n"
                        "    sglang_config:\n"
                        "      decode: {tensor-parallel-size: [8, 16, 32], page-size: [64], enable-metrics: null}\n");
  const auto [path, variant] = split_srt_slurm_config_file(file + ":zip_override_x[1]");
  ASSERT_TRUE(variant.has_value());
  EXPECT_EQ(variant->section, "zip_override_x");
  EXPECT_EQ(variant->index, 1);
  const auto role = srt_slurm_role(path, "decode", "m", variant);
  // The i-th of a list, the only one of a one-element list, the base's own
  // value where the section says nothing, and null deletes.
  EXPECT_NE(role.command.find("--tensor-parallel-size 16"), std::string::npos) << role.command;
  EXPECT_NE(role.command.find("--page-size 64"), std::string::npos) << role.command;
  EXPECT_NE(role.command.find("--mem-fraction-static 0.9"), std::string::npos) << role.command;
  EXPECT_EQ(role.command.find("--enable-metrics"), std::string::npos) << role.command;
  // Out of range, an unknown section, a malformed name: each named.
  EXPECT_THROW(srt_slurm_role(path, "decode", "m", SrtSlurmVariant{"zip_override_x", 3}), UserError);
  EXPECT_THROW(srt_slurm_role(path, "decode", "m", SrtSlurmVariant{"zip_override_y", 0}), UserError);
  EXPECT_THROW(split_srt_slurm_config_file("r.yaml:zip_override_x"), UserError);
  EXPECT_THROW(split_srt_slurm_config_file("r.yaml:other[0]"), UserError);
  EXPECT_THROW(split_srt_slurm_config_file("r.yaml:zip_override_x[1]junk"), UserError);
  std::filesystem::remove(file);
}

namespace {
// One worker pool of a multinode entry, as a test builds it.
WorkerSpec worker_pool(int workers, int tp, int ep, bool dp_attn) {
  WorkerSpec w;
  w.num_worker = workers;
  w.tp = tp;
  w.ep = ep;
  w.dp_attn = dp_attn;
  return w;
}
// A multinode point at `conc`: InferenceX's 2 x conc running requests, the
// graph batch as large.
ExpandedPoint multinode_point(const SearchSpaceEntry& e, int conc) {
  ExpandedPoint p;
  p.entry = &e;
  p.conc = conc;
  p.max_running_requests = 2 * conc;
  p.cuda_graph_max_bs = 2 * conc;
  return p;
}
}  // namespace

// A TensorRT-LLM recipe's roles are read into TrtllmSettings: given fields
// as written, TensorRT-LLM's defaults for the rest, a wrong kind named with
// its file and key.
TEST(SrtSlurmRecipe, ATensorRtLlmRoleGivesItsOptions) {
  const std::string text =
      "backend:\n"
      "  trtllm_config:\n"
      "    prefill:\n"
      "      kv_cache_config: {free_gpu_memory_fraction: 0.75, tokens_per_block: 64, dtype: fp8,\n"
      "                        host_cache_size: 100000000000}\n"
      "      max_batch_size: 256\n"
      "      max_num_tokens: 8192\n"
      "    decode:\n"
      "      kv_cache_config: {enable_block_reuse: false}\n"
      "      max_batch_size: 5\n"
      "      max_num_tokens: 30\n"
      "      speculative_config: {decoding_type: MTP, max_draft_len: 5}\n"
      "      stream_interval: 20\n";
  const std::string file = write_master_file("trt.yaml", text);
  const auto prefill = srt_slurm_role(file, "prefill", "m");
  ASSERT_TRUE(prefill.trtllm.has_value());
  EXPECT_TRUE(prefill.command.empty());
  EXPECT_DOUBLE_EQ(prefill.trtllm->free_gpu_memory_fraction, 0.75);
  EXPECT_EQ(prefill.trtllm->tokens_per_block, 64);
  EXPECT_EQ(prefill.trtllm->kv_cache_dtype, "fp8");
  EXPECT_EQ(prefill.trtllm->host_cache_bytes, 100000000000);
  EXPECT_TRUE(prefill.trtllm->enable_block_reuse);
  EXPECT_EQ(prefill.trtllm->max_batch_size, 256);
  EXPECT_EQ(prefill.trtllm->max_draft_len, 0);  // no speculative_config
  const auto decode = srt_slurm_role(file, "decode", "m");
  ASSERT_TRUE(decode.trtllm.has_value());
  EXPECT_DOUBLE_EQ(decode.trtllm->free_gpu_memory_fraction, 0.9);  // KvCacheConfig's default
  EXPECT_EQ(decode.trtllm->tokens_per_block, 32);                  // its default block
  EXPECT_FALSE(decode.trtllm->enable_block_reuse);
  EXPECT_EQ(decode.trtllm->max_num_tokens, 30);
  EXPECT_EQ(decode.trtllm->max_draft_len, 5);
  EXPECT_EQ(decode.trtllm->stream_interval, 20);
  const auto agg = srt_slurm_role(file, "aggregated", "m");
  EXPECT_FALSE(agg.read());
  EXPECT_NE(agg.why_not.find("no 'aggregated' role"), std::string::npos) << agg.why_not;
  // A field of the wrong kind is one line naming the file and the key.
  auto error_with = [&](const std::string& from, const std::string& to, const std::string& role) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    write_master_file("trt.yaml", t);
    return error_of([&] { (void)srt_slurm_role(file, role, "m"); });
  };
  std::string e = error_with("max_num_tokens: 30", "max_num_tokens: many", "decode");
  EXPECT_NE(e.find(file), std::string::npos) << e;
  EXPECT_NE(e.find("backend.trtllm_config.decode.max_num_tokens: expected a positive integer"), std::string::npos) << e;
  e = error_with("max_batch_size: 5", "max_batch_size: 0", "decode");
  EXPECT_NE(e.find("max_batch_size: expected a positive integer, got 0"), std::string::npos) << e;
  e = error_with("free_gpu_memory_fraction: 0.75", "free_gpu_memory_fraction: 1.5", "prefill");
  EXPECT_NE(e.find("kv_cache_config.free_gpu_memory_fraction: expected a fraction in (0, 1]"), std::string::npos) << e;
  e = error_with("dtype: fp8", "dtype: fp7", "prefill");
  EXPECT_NE(e.find("kv_cache_config.dtype"), std::string::npos) << e;
  std::filesystem::remove(file);
}

// A TensorRT-LLM pool runs as its recipe's role says: in-flight batching
// (the mixed scheduler) under max_num_tokens, max_batch_size a rank, the
// KV share, block, dtype, MTP drafts, stream interval and host cache; a
// TensorRT-LLM engine with no recipe gets the framework's defaults.
TEST(PointEngineConfig, ATensorRtLlmPoolRunsItsRecipesOptions) {
  const sim::ModelSpec model = sim::load_model_spec("glm-5.2-nvfp4");
  const sim::HardwareSpec hw = sim::load_hardware_spec("gb300");
  Recipe r;
  r.framework = "dynamo-trt";
  SearchSpaceEntry e;
  e.tp = 4;
  e.spec_decoding = "mtp";
  e.prefill = worker_pool(1, 4, 4, true);
  e.decode = worker_pool(4, 4, 4, false);
  ExpandedPoint p = multinode_point(e, 30);
  TrtllmSettings pre;
  pre.free_gpu_memory_fraction = 0.75;
  pre.tokens_per_block = 64;
  pre.kv_cache_dtype = "fp8";
  pre.host_cache_bytes = 137438953472;
  pre.max_batch_size = 256;
  pre.max_num_tokens = 8192;
  TrtllmSettings dec;
  dec.enable_block_reuse = false;
  dec.max_batch_size = 2;
  dec.max_num_tokens = 12;
  dec.max_draft_len = 5;
  dec.stream_interval = 20;
  e.prefill->trtllm = pre;
  e.decode->trtllm = dec;
  const auto pools = engines_for(r, p, sim::EngineCosts{}, &model, &hw);
  ASSERT_EQ(pools.size(), 2u);
  const auto& pf = pools[0].config;
  EXPECT_EQ(pf.scheduler, sim::SchedulerKind::vllm);
  EXPECT_EQ(pf.max_num_batched_tokens, 8192);
  EXPECT_EQ(pf.page_size, 64);
  EXPECT_EQ(pf.kv_cache_dtype_bytes, 1);
  EXPECT_FALSE(pf.spec.enabled);  // the prefill role has no speculative_config
  EXPECT_TRUE(pf.hicache.enabled);
  EXPECT_NEAR(pf.hicache.size_gb, 137.44, 0.01);
  EXPECT_EQ(pf.hicache.write_policy, sim::WritePolicy::write_back);
  EXPECT_EQ(pf.max_running_requests, 15);  // ceil(2 x 30 / 4 DP ranks), under max_batch_size 256
  std::string sizing;
  for (const auto& line : pools[0].sizing) sizing += line + "\n";
  EXPECT_NE(sizing.find("free_gpu_memory_fraction 0.75 (the launcher's or recipe's)"), std::string::npos) << sizing;
  const auto& dc = pools[1].config;
  EXPECT_EQ(dc.scheduler, sim::SchedulerKind::vllm);
  EXPECT_EQ(dc.max_num_batched_tokens, 12);
  EXPECT_EQ(dc.max_running_requests, 2);  // max_batch_size, below ceil(60 / 4 engines) = 15
  EXPECT_EQ(pools[1].recipe_running_cap, 2);
  EXPECT_TRUE(dc.spec.enabled);
  EXPECT_EQ(dc.spec.num_steps, 5);
  EXPECT_EQ(dc.spec.num_draft_tokens, 6);
  EXPECT_EQ(dc.stream_interval, 20);
  EXPECT_FALSE(dc.hicache.enabled);
  // The decode rank's 0.9 of its free memory (TensorRT-LLM's default) is a
  // larger static share than the prefill rank's 0.75.
  EXPECT_GT(dc.mem_fraction_static, pf.mem_fraction_static);
  // No recipe read: TensorRT-LLM's defaults (in-flight batching at 8192
  // tokens, 0.9 of the free memory), the entry's MTP.
  e.prefill->trtllm.reset();
  e.decode->trtllm.reset();
  const auto plain = engines_for(r, p, sim::EngineCosts{}, &model, &hw);
  EXPECT_EQ(plain[1].config.scheduler, sim::SchedulerKind::vllm);
  EXPECT_EQ(plain[1].config.max_num_batched_tokens, 8192);
  EXPECT_TRUE(plain[1].config.spec.enabled);
  sizing.clear();
  for (const auto& line : plain[1].sizing) sizing += line + "\n";
  EXPECT_NE(sizing.find("free_gpu_memory_fraction 0.90 (TensorRT-LLM's default)"), std::string::npos) << sizing;
}

TEST(MasterConfig, ABrokenSrtSlurmRecipeIsNamed) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("agentperf_srt_" + std::to_string(::getpid()));
  fs::create_directories(root / "configs");
  std::ifstream in(kNvidia);
  std::stringstream master;
  master << in.rdbuf();
  std::ofstream(root / "configs/master.yaml") << master.str();
  // The c64 recipe of the Qwen3.5 GB300 SGLang disagg entry replaced by one
  // whose prefill KV dtype the engines do not have, then by one that is not
  // YAML (the entry's other recipes are not in this checkout: noted).
  const std::string dir = "benchmarks/multi_node/srt-slurm-recipes/sglang/qwen3.5/gb300-fp4/agentic/";
  fs::create_directories(root / dir);
  const std::string name = "disagg-gb300-1p1d-tp4-tp4-c64-mtp-hicache-session-jid2530029.yaml";
  std::ofstream(root / (dir + name)) << "backend:\n  sglang_config:\n    prefill: {kv-cache-dtype: int3}\n";
  const std::string file = (root / "configs/master.yaml").string();
  auto e = error_of([&] { load_recipe(file + "#qwen3.5-fp4-gb300-dynamo-sglang-agentic-disagg"); });
  EXPECT_NE(e.find(name + ": role 'prefill': --kv-cache-dtype 'int3'"), std::string::npos) << e;
  std::ofstream(root / (dir + name)) << "backend: [\n";
  e = error_of([&] { load_recipe(file + "#qwen3.5-fp4-gb300-dynamo-sglang-agentic-disagg"); });
  EXPECT_NE(e.find(name + ":"), std::string::npos) << e;
  EXPECT_NE(e.find("not valid YAML"), std::string::npos) << e;
  fs::remove_all(root);
}

TEST(MasterConfig, UnmodelledFieldsAreNamed) {
  const auto file = write_master_file("small.yaml", kSmall);
  const auto v = load_recipe(file + "#vllm-dep");
  EXPECT_TRUE(has_note(v, "vllm-dep.framework: 'vllm': the simulator schedules it with vLLM's scheduler")) << v.notes.front();
  EXPECT_TRUE(has_note(v, "vllm-dep.scenarios.agentic-coding[0].search-space[0].dp-attn: true: planned as one DP rank"));
  EXPECT_TRUE(has_note(v, "except the attention and embedding, held at 1/attention-TP where the model spec gives "
                          "their bytes (dp_attention_replicated_bytes; without them, spread too)"));
  // A DP-attention row's dry run routes its ranks as the launchers' routers do; the entry's router field is not read.
  EXPECT_TRUE(has_note(v, "search-space[0].router: vllm-router 0.1.14: its own policy is not read; --dry-run "
                          "routes the DP-attention ranks as InferenceX's launchers' routers do, by consistent hashing"));
  EXPECT_TRUE(has_note(v, "search-space[1].pp: pipeline parallelism: weights are spread over TP x PP GPUs, but each rank "
                          "is planned as holding the KV of every layer"));
  EXPECT_TRUE(has_note(v, "search-space[1].kv-offload-backend: 'vllm-simple': host offload is planned as SGLang HiCache"));
  EXPECT_TRUE(has_note(v, "search-space[2].dcp-size: decode context parallelism is not modelled"));
  EXPECT_TRUE(has_note(v, "search-space[3].pcp-size: prefill context parallelism is not modelled"));
  EXPECT_EQ(v.notes.size(), 7u);
  for (const auto& n : v.notes) EXPECT_EQ(n.find('\n'), std::string::npos) << n;
  // conc-start 1 .. conc-end 24 doubles, then takes the end: 1, 2, 4, 8, 16, 24.
  EXPECT_EQ(v.agentic[0].search_space[0].conc_list, (std::vector<int>{1, 2, 4, 8, 16, 24}));
  EXPECT_EQ(conc_range(3, 20), (std::vector<int>{3, 6, 12, 20}));
  EXPECT_EQ(conc_range(4, 4), (std::vector<int>{4}));
  // A vLLM command with DP attention: TP1 x DP8 with expert parallelism; the
  // vllm-simple offload gets cpu_bytes_to_use_per_rank = DRAM GB x 1e9 / GPUs.
  const auto vp = expand(v);
  EXPECT_NE(vp[0].exp_name.find("_tp8ep8dpa_mtp_conc1"), std::string::npos) << vp[0].exp_name;
  EXPECT_NE(vp[0].command.find("--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel"),
            std::string::npos) << vp[0].command;
  EXPECT_NE(vp[0].command.find(R"("method": "mtp", "num_speculative_tokens": 3)"), std::string::npos);
  // No launcher memory fraction is known for this entry's model and GPU: 0.80.
  EXPECT_NE(vp[0].command.find("--gpu-memory-utilization 0.80"), std::string::npos) << vp[0].command;
  // A vLLM command runs vLLM's scheduler; the multinode vLLM frameworks too.
  EXPECT_TRUE(runs_vllm_scheduler(v, vp[0]));
  EXPECT_EQ(engine_config_for(vp[0], sim::EngineCosts{}).scheduler, sim::SchedulerKind::vllm);
  {
    const auto dv = load_recipe(kNvidia + "#dsv4-fp4-gb300-dynamo-vllm-agentic");
    const auto dp = expand(dv);
    ASSERT_FALSE(dp.empty());
    EXPECT_TRUE(dp[0].command.empty());
    const auto m = sim::load_model_spec(dv.sim_model_spec);
    const auto h = sim::load_hardware_spec(dv.sim_hardware_spec);
    for (const auto& eng : engines_for(dv, dp[0], sim::EngineCosts{}, &m, &h)) {
      EXPECT_EQ(eng.config.scheduler, sim::SchedulerKind::vllm) << eng.role;
      EXPECT_DOUBLE_EQ(eng.config.mem_fraction_static, 0.90) << eng.role;  // vLLM's default
    }
  }
  {
    // A single-node vLLM entry whose LMCache arm has no generated command
    // still runs vLLM's scheduler at its launcher's --gpu-memory-utilization
    // (minimaxm3_fp8_mi300x_mtp.sh: 0.90), on both arms.
    const auto mm = load_recipe(kAmd + "#minimaxm3-fp8-mi300x-vllm-agentic-mtp");
    const auto mp = expand(mm);
    ASSERT_EQ(mp.size(), 6u);
    for (const auto& point : {mp.front(), mp.back()}) {
      EXPECT_TRUE(point.command.empty()) << point.exp_name;
      const auto eng = engines_for(mm, point, sim::EngineCosts{}, nullptr, nullptr);
      ASSERT_EQ(eng.size(), 1u);
      EXPECT_EQ(eng[0].config.scheduler, sim::SchedulerKind::vllm) << point.exp_name;
      EXPECT_DOUBLE_EQ(eng[0].config.mem_fraction_static, 0.90) << point.exp_name;
    }
  }
  // b200-dgxc at 0.5, TP4 x PP2 = 8 GPUs: floor(2,861,022 x 2^20 x 0.5 x 8/8 / 1e9) = 1,499 GB over 8 ranks.
  EXPECT_EQ(vp[6].total_cpu_dram_gb, 1499);
  EXPECT_NE(vp[6].command.find("\"cpu_bytes_to_use_per_rank\": 187375000000"), std::string::npos) << vp[6].command;

  // How the plan sizes a rank: DP attention (TP8 EP8: 8 ranks of attention
  // TP1, 1/8 of the weights, ceil(2 x 24 / 8) = 6 running at conc 24) and
  // PP (TP4 x PP2: KV over TP4, weights over 8 GPUs).
  {
    const auto m = sim::load_model_spec(v.sim_model_spec);
    const auto h = sim::load_hardware_spec(v.sim_hardware_spec);
    const auto dpa = engines_for(v, vp[5], sim::EngineCosts{}, &m, &h);
    ASSERT_EQ(dpa.size(), 1u);
    EXPECT_EQ(vp[5].conc, 24);
    EXPECT_EQ(dpa[0].dp, 8);
    EXPECT_EQ(dpa[0].config.tp, 1);
    EXPECT_EQ(dpa[0].config.max_running_requests, 6);
    ASSERT_TRUE(dpa[0].model.has_value());
    EXPECT_NEAR(dpa[0].model->total_weight_bytes(), m.total_weight_bytes() / 8, 1.0);
    const auto pp = engines_for(v, vp[6], sim::EngineCosts{}, &m, &h);
    EXPECT_EQ(pp[0].config.tp, 4);
    EXPECT_EQ(pp[0].gpus, 8);
    EXPECT_EQ(pp[0].config.max_running_requests, 16);
    ASSERT_TRUE(pp[0].model.has_value());
    EXPECT_NEAR(pp[0].model->total_weight_bytes() / 4, m.total_weight_bytes() / 8, 1.0);
  }

  const auto d = load_recipe(file + "#dynamo-disagg");
  EXPECT_TRUE(d.multinode);
  EXPECT_TRUE(has_note(d, "dynamo-disagg.multinode: true: each worker pool"));
  EXPECT_TRUE(has_note(d, "dynamo-disagg.disagg: true: prefill and decode workers are planned as separate engines; --dry-run sends each prompt's KV between them (nixl) over the hardware spec's kv_transfer_bandwidth_one_way, without link contention"));
  EXPECT_TRUE(has_note(d, "search-space[0].prefill.dp-attn: true"));
  // The master file sits in a temporary folder, not an InferenceX checkout:
  // the recipe is not found, and the pool keeps its framework's defaults.
  EXPECT_TRUE(has_note(d, "search-space[0].prefill.additional-settings: CONFIG_FILE=recipes/x.yaml: not under "
                          "benchmarks/multi_node/srt-slurm-recipes"));
  EXPECT_TRUE(d.agentic[0].search_space[0].prefill->server_command.empty());
  EXPECT_TRUE(has_note(d, "dynamo-disagg.framework: 'dynamo-sglang'"));
  EXPECT_TRUE(d.server_command.empty());
  EXPECT_NE(d.server_missing.find("a multinode entry"), std::string::npos);
  // A measured sweep refuses it; --dry-run predicts it; the plan plans both workers.
  EXPECT_NE(error_of([&] { require_sweepable(d, false); }).find("a measured sweep starts single-node servers only"),
            std::string::npos);
  EXPECT_NO_THROW(require_sweepable(d, true));
  const auto model = sim::load_model_spec(d.sim_model_spec);
  const auto hw = sim::load_hardware_spec(d.sim_hardware_spec);
  const auto dp = expand(d);
  ASSERT_EQ(dp.size(), 1u);
  EXPECT_EQ(dp[0].exp_name, "dynamo-disagg_p1x8ep8dpa_d4x4_mtp_conc48_kvdram-hicache");
  const auto engines = engines_for(d, dp[0], sim::EngineCosts{}, &model, &hw);
  ASSERT_EQ(engines.size(), 2u);
  // Prefill TP8 EP8 with DP attention: 8 DP ranks of attention TP1 on 8
  // GPUs; one rank holds 1/8 of the weights but the attention and the
  // embedding (the spec's 29.1 GB) whole, and its own requests' whole KV,
  // and runs ceil(2 x 48 / 8) = 12 requests.
  EXPECT_EQ(engines[0].role, "prefill");
  EXPECT_EQ(engines[0].config.tp, 1);
  EXPECT_EQ(engines[0].dp, 8);
  EXPECT_EQ(engines[0].gpus, 8);
  EXPECT_EQ(engines[0].config.max_running_requests, 12);
  ASSERT_TRUE(engines[0].model.has_value());
  EXPECT_NEAR(engines[0].model->total_weight_bytes(), (model.total_weight_bytes() - 29.1e9) / 8 + 29.1e9, 1.0);
  EXPECT_TRUE(engines[0].config.hicache.enabled);  // InferenceX budgets offload for prefill only
  // Decode: 4 engines of TP4, each running ceil(2 x 48 / 4) = 24.
  EXPECT_EQ(engines[1].role, "decode");
  EXPECT_EQ(engines[1].workers, 4);
  EXPECT_EQ(engines[1].config.tp, 4);
  EXPECT_EQ(engines[1].config.max_running_requests, 24);
  EXPECT_FALSE(engines[1].model.has_value());
  EXPECT_FALSE(engines[1].config.hicache.enabled);
}

TEST(MasterConfig, MalformedKeysAreOneLineErrors) {
  const auto file = write_master_file("bad.yaml", kSmall);
  auto one_line = [](const std::string& e) { return e.find('\n') == std::string::npos; };
  auto e = error_of([&] { load_recipe(file + "#nope"); });
  EXPECT_NE(e.find(file + ": no entry 'nope'"), std::string::npos) << e;
  EXPECT_NE(e.find("agentperf recipe list " + file), std::string::npos) << e;
  EXPECT_TRUE(one_line(e)) << e;
  e = error_of([&] { load_recipe(file + "#vllm-deep"); });
  EXPECT_NE(e.find("did you mean 'vllm-dep'?"), std::string::npos) << e;
  e = error_of([&] { load_recipe(file + "#"); });
  EXPECT_NE(e.find("no entry key after '#'"), std::string::npos) << e;
  e = error_of([&] { load_recipe(file + "#fixed-only"); });
  EXPECT_NE(e.find(file + ":10: fixed-only.scenarios: no agentic-coding scenario"), std::string::npos) << e;
  e = error_of([&] { load_recipe(file + "#colour"); });
  EXPECT_NE(e.find(file + ":60: colour.scenarios.agentic-coding[0].search-space[0].colour: unknown key"), std::string::npos) << e;
  EXPECT_TRUE(one_line(e)) << e;
  e = error_of([&] { load_recipe(file + "#moon"); });
  EXPECT_NE(e.find("moon.runner: 'cluster:moon-base' has no row in the runner table"), std::string::npos) << e;
  e = error_of([&] { load_recipe(file + "#too-wide"); });
  EXPECT_NE(e.find("too-wide.scenarios.agentic-coding[0].search-space[0].tp: TP x PP x PCP = 8 must be in 1..4"),
            std::string::npos) << e;
  e = error_of([&] { load_recipe(file); });  // a master config without #KEY
  EXPECT_NE(e.find("an InferenceX master config, not a recipe: name one of its entries as " + file + "#KEY"),
            std::string::npos) << e;
  e = error_of([&] { load_recipe("/nonexistent/master.yaml#k"); });
  EXPECT_NE(e.find("cannot read master config '/nonexistent/master.yaml'"), std::string::npos) << e;
}

TEST(MasterConfig, EntriesWithoutASpecExpandButDoNotPlan) {
  const auto file = write_master_file("nospec.yaml", kSmall);
  const std::string ref = file + "#no-spec";
  const auto r = load_recipe(ref);
  EXPECT_EQ(expand(r).size(), 3u);
  EXPECT_FALSE(r.server_command.empty());  // an SGLang entry: generated
  const auto plan = run_cli("plan -q " + ref);
  EXPECT_EQ(plan.code, 2) << plan.output;
  EXPECT_NE(plan.output.find("agentperf: error: " + ref + ": no simulator model spec for acme/NoSpec-1T (precision fp8)"),
            std::string::npos)
      << plan.output;
  EXPECT_EQ(std::count(plan.output.begin(), plan.output.end(), '\n'), 1) << plan.output;  // one line
  const auto ok = run_cli("recipe expand " + ref);
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_NE(ok.output.find("3 points"), std::string::npos) << ok.output;
  const auto dry = run_cli("sweep --dry-run " + ref + " -o /tmp/agentperf_master_never");
  EXPECT_EQ(dry.code, 2) << dry.output;
  EXPECT_NE(dry.output.find("(--dry-run needs one)"), std::string::npos) << dry.output;
  const auto list = run_cli("recipe list " + kAmd);
  EXPECT_EQ(list.code, 0) << list.output;
  EXPECT_NE(list.output.find("15 of 15 entries have an agentic-coding scenario"), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("glm5.2-fp8-mi325x-sglang-agentic-mtp"), std::string::npos);
  // A disaggregated multinode entry: a measured sweep refuses it in one
  // line; the dry run predicts it, prefill pool, KV transfer and decode pool
  // (the handoff's numbers: VirtualReplay.DisaggregatedPrefill...); the
  // plan plans its workers.
  const std::string multi = kNvidia + "#glm5.2-fp4-gb200-dynamo-sglang-agentic-disagg";
  const auto out_dir = std::filesystem::temp_directory_path() / ("agentperf_master_disagg_" + std::to_string(::getpid()));
  std::filesystem::remove_all(out_dir);
  const auto measured = run_cli("sweep " + multi + " -o " + out_dir.string());
  EXPECT_EQ(measured.code, 2) << measured.output;
  EXPECT_NE(measured.output.find("a multinode entry (prefill/decode workers, dynamo-sglang)"), std::string::npos)
      << measured.output;
  // Its dry run predicts both points on the 1M corpus (a prompt longer than
  // the TP4 prefill pool's 678,976 tokens would end it honestly instead:
  // Cli.SimPredictEndsHonestlyOnAPromptLargerThanThePool).
  const auto glm = run_cli("sweep --dry-run " + multi + " --duration 60 -o " + out_dir.string());
  EXPECT_EQ(glm.code, 0) << glm.output;
  EXPECT_NE(glm.output.find("2 points: 2 done, 0 failed"), std::string::npos) << glm.output;
  std::filesystem::remove_all(out_dir);
  // The Qwen3.5 GB300 one (256k corpus) predicts its prefill pool, the KV
  // transfer and its decode pool.
  const std::string qwen = kNvidia + "#qwen3.5-fp4-gb300-dynamo-sglang-agentic-disagg";
  const auto sweep = run_cli("sweep --dry-run " + qwen + " --duration 60 --point-index 0 -o " + out_dir.string());
  EXPECT_EQ(sweep.code, 0) << sweep.output;
  const auto point = out_dir / "qwen3.5-fp4-gb300-dynamo-sglang-agentic-disagg_p1x4_d1x4_mtp_conc8_kvdram-hicache" /
                     "profile_export_aiperf.json";
  std::ifstream in(point);
  ASSERT_TRUE(in) << point;
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["input_config"]["engine"]["prefill_engines"], 1);
  EXPECT_EQ(j["input_config"]["engine"]["decode_engines"], 1);
  EXPECT_EQ(j["run_description"]["gpus"], 8);  // 1 x TP4 prefill + 1 x TP4 decode
  EXPECT_GT(j["sim"]["handoff"]["requests"].get<int>(), 0);
  EXPECT_GT(j["sim"]["handoff"]["mean_kv_transfer_ms"].get<double>(), 1.0);  // at least the 1 ms per transfer
  ASSERT_EQ(j["sim"]["per_engine"].size(), 2u);
  EXPECT_EQ(j["sim"]["per_engine"][1]["computed_prefill_tokens"], 0);  // the decode engine
  std::filesystem::remove_all(out_dir);
  const auto mplan = run_cli("plan -q " + multi);
  EXPECT_EQ(mplan.code, 0) << mplan.output;
  EXPECT_NE(mplan.output.find("_p1x4_d1x4_mtp_conc12_kvdram-hicache decode"), std::string::npos) << mplan.output;
  // The plan says beforehand why the dry run above stops.
  EXPECT_NE(mplan.output.find("_p1x4_d1x4_mtp_conc12_kvdram-hicache prefill: its KV pool (678976 tokens a rank) is "
                              "smaller than the corpus's longest calls"),
            std::string::npos)
      << mplan.output;
}

TEST(MasterConfig, PoolsMatchHandDerivations) {
  // MLA/DSA: GLM-5.2 NVFP4 on B300, TP8, MTP, HiCache (page 64), conc 16, at
  // its launcher's --mem-fraction-static 0.85 (glm5.2_fp4_b300_sglang_mtp.sh).
  // Weights (38.0 + 407.7 + MTP 19.9) GB / 8 = 58.2 GB; rest = 288 x 0.85 -
  // 58.2 = 186.6 GB; KV per token 78 x (512 + 64 + 132) = 55,224 B
  // (Blackwell's default DSA backend, trtllm, keeps the FP8 latent raw), the
  // draft's 708 B more: floor(186.6e9 / 55,932) = 3,336,193, down to whole
  // pages of 64.
  auto rows = plan_matrix(MasterConfig(kNvidia));
  auto find = [&](const std::string& key, const std::string& shape) -> const MatrixRow& {
    for (const auto& r : rows)
      if (r.key == key && r.shape() == shape) return r;
    ADD_FAILURE() << key << " " << shape;
    return rows.front();
  };
  const auto& glm = find("glm5.2-fp4-b300-sglang-agentic-mtp", "TP8, mtp, dram (hicache)");
  EXPECT_EQ(glm.plan.kv_tokens, static_cast<std::int64_t>(std::floor(186.6e9 / 55932.0)) / 64 * 64);
  EXPECT_EQ(glm.plan.mamba_slots, 0);
  EXPECT_EQ(glm.max_conc, 16);

  // Hybrid: Qwen3.5 NVFP4 on B200, TP4, MTP, conc 64 (max running 128).
  // Weights (19.6 + 1.0 + 217.4 + MTP 13.2 + its embed/head 4.068) GB / 4 =
  // 63.817 GB; rest = 192.2 x 0.8 - 63.817 = 89.943 GB. State per request per
  // rank: 45 x (12,288/4 x 3 x 2 + 64/4 x 128 x 128 x 2) = 24,422,400 B.
  // Slots = floor(rest x 0.9/1.9 / (state x (1 + 4/3))) = 747; intermediates
  // min(128, 747/3) x 4 states; KV per token 15 x 2 x 1 x 256 + draft 2 x 256.
  const auto& qwen = find("qwen3.5-fp4-b200-sglang-agentic-mtp", "TP4, mtp");
  const double rest = 192.2e9 * 0.8 - (19.6e9 + 1.0e9 + 217.4e9 + 13.2e9 + 4.068e9) / 4;
  const double state = 45.0 * (12288 / 4 * 3 * 2 + 64 / 4 * 128 * 128 * 2);
  const auto slots = static_cast<std::int64_t>(std::floor(rest * 0.9 / 1.9 / (state * (1 + 4.0 / 3))));
  EXPECT_EQ(slots, 747);
  EXPECT_EQ(qwen.plan.mamba_slots, slots);
  const double kv_budget = rest - 128.0 * 4 * state - static_cast<double>(slots) * state;
  EXPECT_EQ(qwen.plan.kv_tokens, static_cast<std::int64_t>(std::floor(kv_budget / (7680 + 512))));
  EXPECT_EQ(qwen.plan.max_running_requests, 128);

  // TensorRT-LLM sizing from the srt-slurm recipe
  // (disagg-gb300-2p2d-dep1-tep2-c52-b4-mtp-kvoffload.yaml): Qwen3.5
  // NVFP4-V2 on one GB300 (prefill DEP1, conc 52). The prefill role has no
  // speculative_config, so no MTP weights, draft KV or verify states; its KV
  // share is free_gpu_memory_fraction 0.8 of what the 238.0 GB of weights
  // leave of 288 GB; its host cache is the recipe's 137,438,953,472 B; its
  // blocks are 64 tokens. Running: 2 x 52 over 2 engines = 52, under
  // max_batch_size 64.
  const auto& trt = find("qwen3.5-fp4-gb300-dynamo-trt-agentic-disagg", "prefill 2x TP1 DPA, dram (native)");
  const double w1 = 19.6e9 + 1.0e9 + 217.4e9;
  const double rest1 = 0.8 * (288e9 - w1);
  const double state1 = 45.0 * (12288 * 3 * 2 + 64 * 128 * 128 * 2);
  const auto slots1 = static_cast<std::int64_t>(std::floor(rest1 * 0.9 / 1.9 / state1));
  EXPECT_EQ(slots1, 193);
  EXPECT_EQ(trt.plan.mamba_slots, slots1);
  const double kv1 = rest1 - static_cast<double>(slots1) * state1;
  EXPECT_EQ(trt.plan.kv_tokens, static_cast<std::int64_t>(std::floor(kv1 / (15 * 2 * 2 * 256))) / 64 * 64);
  EXPECT_EQ(trt.plan.max_running_requests, 52);
  EXPECT_EQ(trt.hicache_size_gb, 137);
  EXPECT_EQ(trt.spec_decoding, "none");
  // Its decode pool (TP2 EP2, MTP with 6 drafts): max_batch_size 4 a rank.
  const auto& trt_decode = find("qwen3.5-fp4-gb300-dynamo-trt-agentic-disagg", "decode 2x TP2 EP2, mtp");
  EXPECT_EQ(trt_decode.plan.max_running_requests, 4);
  EXPECT_EQ(trt_decode.hicache_size_gb, 0);
  // A CONFIG_FILE spelled benchmarks/multi_node/srt-slurm-recipes/... (the
  // DeepSeek-V4 GB300 entry's) is found too: its c24 recipe runs six TEP4
  // decode engines of max_batch_size 4, and its prefill's host cache is
  // 193,273,528,320 B a rank.
  EXPECT_EQ(find("dsv4-fp4-gb300-dynamo-trt-agentx", "decode 6x TP4 EP4, mtp").plan.max_running_requests, 4);
  EXPECT_EQ(find("dsv4-fp4-gb300-dynamo-trt-agentx", "prefill 1x TP4 EP4 DPA, mtp, dram (native)").hicache_size_gb,
            193);
  // A single-node TensorRT-LLM entry takes its launcher's options
  // (minimaxm3_fp4_b300_trt_mtp.sh: max_batch_size = CONC, a 361.9 GiB host
  // cache at TP2).
  const auto& mm = find("minimaxm3-fp4-b300-trtllm-agentic-mtp", "TP2, mtp, dram (native)");
  EXPECT_EQ(mm.plan.max_running_requests, mm.max_conc);
  EXPECT_EQ(mm.hicache_size_gb, 389);
  // A single-node vLLM launcher's host offload (inferencex_map.cpp):
  // DeepSeek-V4 B200's SimpleCPUOffloadConnector gets DRAM / 8 GB a rank
  // (2,849 / 8); B300's TP4 arm passes DRAM / 4 as cpu_bytes_to_use, which
  // vLLM splits again over the TP4 world (1,424 / 16), its DEP4 arm's
  // world is 1 (1,424 / 4); MiniMax-M3 H200's Mooncake segment is
  // (floor(1,234e9 / 2^30) - 414) / 8 - 4 = 87 GiB a rank.
  EXPECT_EQ(find("dsv4-fp4-b200-vllm-agentic-mtp", "TP8, mtp, dram (vllm-simple)").hicache_size_gb, 2849 / 8);
  EXPECT_EQ(find("dsv4-fp4-b300-vllm-agentic-mtp", "TP4, mtp, dram (vllm-simple)").hicache_size_gb, 1424 / 16);
  EXPECT_EQ(find("dsv4-fp4-b300-vllm-agentic-mtp", "TP4 EP4 DPA, mtp, dram (vllm-simple)").hicache_size_gb, 1424 / 4);
  EXPECT_EQ(find("minimaxm3-fp8-h200-vllm-agentic-mtp", "TP8, mtp, dram (mooncake)").hicache_size_gb,
            std::llround(87.0 * 1024 * 1024 * 1024 / 1e9));
}

// The launcher table's store policies: eager connectors write through,
// lazy ones write back on eviction; an unknown launcher has no row.
TEST(InferenceXMap, VllmLaunchersHostOffloadAsTheLaunchersSetIt) {
  const auto b200 = launcher_host_offload("dsv4", "b200", "vllm-simple", 8, false, 2849);
  ASSERT_TRUE(b200.has_value());
  EXPECT_FALSE(b200->lazy);
  EXPECT_EQ(b200->block_size, 256);
  const auto b300 = launcher_host_offload("dsv4", "b300", "vllm-simple", 4, false, 1424);
  ASSERT_TRUE(b300.has_value());
  EXPECT_TRUE(b300->lazy);  // SIMPLE_LAZY_OFFLOAD is true without DP attention
  EXPECT_FALSE(launcher_host_offload("dsv4", "b300", "vllm-simple", 4, true, 1424)->lazy);
  const auto mm = launcher_host_offload("minimaxm3", "b300", "vllm-simple", 2, false, 749);
  ASSERT_TRUE(mm.has_value());
  EXPECT_DOUBLE_EQ(mm->bytes_per_rank, 749.0 * 1024 * 1024 * 1024 / 2);  // cpu_bytes_to_use = DRAM x 2^30
  EXPECT_EQ(launcher_host_offload("minimaxm3", "mi300x", "lmcache", 8, false, 1947)->connector, "LMCacheMPConnector");
  EXPECT_FALSE(launcher_host_offload("qwen3.5", "b200", "hicache", 4, false, 1199).has_value());
  // A budget below the launcher's 414 GiB of checkpoint page cache leaves
  // Mooncake no segment: no row rather than a negative pool.
  EXPECT_FALSE(launcher_host_offload("minimaxm3", "h200", "mooncake", 8, false, 400).has_value());
}

// A generated vLLM command writes the SimpleCPUOffloadConnector as the
// entry's own launcher does: dsv4_fp4_b200_vllm_mtp.sh passes DRAM x 1000^3
// / GPUs under cpu_bytes_to_use_per_rank with cross-layer blocks, eager, at
// --block-size 256; minimaxm3_fp4_b300_mtp.sh passes the whole budget as
// DRAM x 1024^3 under cpu_bytes_to_use, lazy, at --block-size 128.
TEST(MasterConfig, GeneratedVllmCommandsOffloadAsTheirLaunchers) {
  // The command of an entry's first DRAM point (the point's entry pointer
  // stays valid while the recipe lives).
  auto dram_command = [](const Recipe& r, int* tp, std::int64_t* dram_gb) {
    for (const auto& p : expand(r))
      if (p.entry->kv_offloading == "dram") {
        *tp = p.entry->tp;
        *dram_gb = p.total_cpu_dram_gb;
        return p.command;
      }
    ADD_FAILURE() << r.source << " has no DRAM arm";
    return std::string();
  };
  int tp = 0;
  std::int64_t dram = 0;
  const auto dsv4 = load_recipe(kNvidia + "#dsv4-fp4-b200-vllm-agentic-mtp");
  std::string cmd = dram_command(dsv4, &tp, &dram);
  // TP8 with a 2,849 GB budget: 2,849 x 1000^3 / 8 = 356,125,000,000 B a rank.
  ASSERT_EQ(tp, 8);
  ASSERT_EQ(dram, 2849);
  EXPECT_NE(cmd.find(R"("cpu_bytes_to_use_per_rank": 356125000000, "enable_cross_layers_blocks": "true", )"
                     R"("lazy_offload": false}}' --block-size 256)"),
            std::string::npos)
      << cmd;
  // TP4 with a 1,024 GB budget: 1,024 x 1024^3 = 1,099,511,627,776 B in all.
  const auto mm = load_recipe(kNvidia + "#minimaxm3-fp4-b300-vllm-agentic-mtp");
  cmd = dram_command(mm, &tp, &dram);
  ASSERT_EQ(tp, 4);
  ASSERT_EQ(dram, 1024);
  EXPECT_NE(cmd.find(R"("cpu_bytes_to_use": 1099511627776, "lazy_offload": true}}' --block-size 128)"),
            std::string::npos)
      << cmd;
  EXPECT_EQ(cmd.find("cpu_bytes_to_use_per_rank"), std::string::npos) << cmd;
  // Read as GiB, that budget is 1,099.5 GB against the point's 1,024 GB: the
  // plan warns and goes on (the launcher runs so).
  const auto plan = run_cli("plan -q " + kNvidia + "#minimaxm3-fp4-b300-vllm-agentic-mtp");
  EXPECT_EQ(plan.code, 0) << plan.output;
  EXPECT_NE(plan.output.find("agentperf: warning: minimaxm3-fp4-b300-vllm-agentic-mtp_tp4_mtp_conc30_kvdram-vllm-simple: "
                             "its launcher gives the KV connector 1100 GB of host memory, more than the point's 1024 GB "
                             "DRAM budget"),
            std::string::npos)
      << plan.output;
}

// A launcher's scheduling flags reach the simulated engine as SGLang reads
// them: with DP attention the global chunk and the tokenizer loops are split
// over the ranks; the interval, the delayer and the memory fraction are
// every rank's own.
// A multinode pool's recipe cap on running requests binds where it is below
// the 2 x conc rule: SGLang's --max-running-requests split over the DP
// ranks, vLLM's --max-num-seqs per rank (point_engine_config.cpp).
TEST(PointEngineConfig, APoolsRecipeCapBindsWhereItIsBelowTheRule) {
  Recipe r;
  r.framework = "dynamo-sglang";
  SearchSpaceEntry e;
  e.tp = 8;
  e.prefill = worker_pool(1, 8, 8, true);
  e.decode = worker_pool(1, 4, 1, false);
  ExpandedPoint p = multinode_point(e, 48);
  // Prefill: 16 over 8 DP ranks = 2 a rank, below the rule's ceil(96 / 8) = 12.
  e.prefill->server_command = "python3 -m sglang.launch_server --max-running-requests 16";
  // Decode: 512 is above the rule's 96: the rule stays.
  e.decode->server_command = "python3 -m sglang.launch_server --max-running-requests 512";
  auto pools = engines_for(r, p, sim::EngineCosts{}, nullptr, nullptr);
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[0].role, "prefill");
  EXPECT_EQ(pools[0].config.max_running_requests, 2);
  EXPECT_EQ(pools[0].recipe_running_cap, 16);
  EXPECT_LE(pools[0].config.cuda_graph_max_bs, 2);
  EXPECT_EQ(pools[1].config.max_running_requests, 96);
  EXPECT_EQ(pools[1].recipe_running_cap, 0);
  // vLLM's --max-num-seqs is each rank's own, not split.
  r.framework = "dynamo-vllm";
  e.prefill->server_command = "vllm serve m --max-num-seqs 3";
  pools = engines_for(r, p, sim::EngineCosts{}, nullptr, nullptr);
  EXPECT_EQ(pools[0].config.max_running_requests, 3);
}

TEST(PointEngineConfig, LauncherSchedulingFlagsReachEveryRank) {
  Recipe r;
  r.framework = "sglang";
  SearchSpaceEntry e;
  e.tp = 8;
  e.ep = 8;
  e.dp_attn = true;
  ExpandedPoint p;
  p.entry = &e;
  p.conc = 64;
  p.max_running_requests = 128;
  p.cuda_graph_max_bs = 64;
  p.command = "python3 -m sglang.launch_server --tp 8 --dp 8 --enable-dp-attention --mem-fraction-static 0.88 "
              "--chunked-prefill-size 65536 --tokenizer-worker-num 8 --enable-prefill-delayer "
              "--prefill-decode-interval 10 --stream-interval 20";
  const auto dpa = engines_for(r, p, sim::EngineCosts{}, nullptr, nullptr);
  ASSERT_EQ(dpa.size(), 1u);
  EXPECT_EQ(dpa[0].dp, 8);
  EXPECT_EQ(dpa[0].config.chunked_prefill_size, 8192);
  EXPECT_EQ(dpa[0].config.tokenizer_workers, 1);
  EXPECT_EQ(dpa[0].config.prefill_decode_interval, 10);
  EXPECT_TRUE(dpa[0].config.prefill_delayer);
  EXPECT_EQ(dpa[0].config.stream_interval, 20);
  EXPECT_DOUBLE_EQ(dpa[0].config.mem_fraction_static, 0.88);
  // The same flags on plain TP8: nothing split, no delayer unless named.
  e.dp_attn = false;
  p.command = "python3 -m sglang.launch_server --tp 8 --chunked-prefill-size 8192 --tokenizer-worker-num 4";
  const auto tp = engines_for(r, p, sim::EngineCosts{}, nullptr, nullptr);
  ASSERT_EQ(tp.size(), 1u);
  EXPECT_EQ(tp[0].config.chunked_prefill_size, 8192);
  EXPECT_EQ(tp[0].config.tokenizer_workers, 4);
  EXPECT_EQ(tp[0].config.prefill_decode_interval, 0);
  EXPECT_FALSE(tp[0].config.prefill_delayer);
  EXPECT_DOUBLE_EQ(tp[0].config.mem_fraction_static, 0.80);
  // vLLM's API server processes each tokenize (sim/front_end_queue.h).
  r.framework = "vllm";
  p.command = "vllm serve m --tensor-parallel-size 8 --api-server-count 3";
  const auto vllm = engines_for(r, p, sim::EngineCosts{}, nullptr, nullptr);
  ASSERT_EQ(vllm.size(), 1u);
  EXPECT_EQ(vllm[0].config.tokenizer_workers, 3);
  // Each API server tokenizes on --renderer-num-workers threads.
  p.command = "vllm serve m --api-server-count 2 --renderer-num-workers 4";
  EXPECT_EQ(engines_for(r, p, sim::EngineCosts{}, nullptr, nullptr)[0].config.tokenizer_workers, 8);
  p.command = "vllm serve m --renderer-num-workers 5";
  EXPECT_EQ(engines_for(r, p, sim::EngineCosts{}, nullptr, nullptr)[0].config.tokenizer_workers, 5);
  // The Rust front end, as an env word before the command: still vLLM's
  // scheduler, and prompts tokenized side by side (sim/engine_config.h).
  p.command = "VLLM_USE_RUST_FRONTEND=1 PYTHONUNBUFFERED=1 vllm serve m --max-num-batched-tokens 4096";
  const auto rust = engines_for(r, p, sim::EngineCosts{}, nullptr, nullptr);
  EXPECT_EQ(rust[0].config.scheduler, sim::SchedulerKind::vllm);
  EXPECT_EQ(rust[0].config.max_num_batched_tokens, 4096);
  EXPECT_EQ(rust[0].config.tokenizer_workers, sim::kRustFrontendWorkers);
  EXPECT_GT(sim::kRustFrontendWorkers, 8);
  // Off, or named with another value: the Python server's one loop.
  p.command = "VLLM_USE_RUST_FRONTEND=0 vllm serve m";
  EXPECT_EQ(engines_for(r, p, sim::EngineCosts{}, nullptr, nullptr)[0].config.tokenizer_workers, 1);
  // A flag that only looks like an env word does not make a command vLLM's.
  p.command = "--foo=1 vllm serve m";
  EXPECT_EQ(engines_for(r, p, sim::EngineCosts{}, nullptr, nullptr)[0].config.scheduler, sim::SchedulerKind::sglang);
  // The recipe's server environment turns it on as well.
  p.command = "vllm serve m";
  r.server_env["VLLM_USE_RUST_FRONTEND"] = "1";
  EXPECT_EQ(engines_for(r, p, sim::EngineCosts{}, nullptr, nullptr)[0].config.tokenizer_workers,
            sim::kRustFrontendWorkers);
}

// The master-config route runs a vLLM entry's API server as its launcher
// does: DeepSeek-V4's B200 and B300 vLLM launchers export
// VLLM_USE_RUST_FRONTEND=1 at 843c6254ff69, the other agentic ones do not.
TEST(MasterConfig, VllmEntriesRunTheFrontEndTheirLauncherExports) {
  EXPECT_TRUE(launcher_uses_rust_frontend("vllm", "dsv4", "b200"));
  EXPECT_TRUE(launcher_uses_rust_frontend("vllm", "dsv41flash", "gb300"));
  EXPECT_FALSE(launcher_uses_rust_frontend("vllm", "dsv4", "mi355x"));
  EXPECT_FALSE(launcher_uses_rust_frontend("vllm", "kimik3", "b300"));
  EXPECT_FALSE(launcher_uses_rust_frontend("sglang", "dsv4", "b200"));
  const Recipe b200 = load_recipe(kNvidia + "#dsv4-fp4-b200-vllm-agentic-mtp");
  ASSERT_TRUE(b200.server_env.count("VLLM_USE_RUST_FRONTEND"));
  EXPECT_EQ(b200.server_env.at("VLLM_USE_RUST_FRONTEND"), "1");
  EXPECT_TRUE(std::any_of(b200.notes.begin(), b200.notes.end(), [](const std::string& n) {
    return n.find("exports VLLM_USE_RUST_FRONTEND=1") != std::string::npos;
  }));
  const auto points = expand(b200);
  ASSERT_FALSE(points.empty());
  const auto pools = engines_for(b200, points.front(), sim::EngineCosts{}, nullptr, nullptr);
  ASSERT_FALSE(pools.empty());
  EXPECT_EQ(pools.front().config.scheduler, sim::SchedulerKind::vllm);
  EXPECT_EQ(pools.front().config.tokenizer_workers * pools.front().dp, sim::kRustFrontendWorkers);
  const Recipe sglang = load_recipe(kNvidia + "#dsv4-fp4-b200-sglang-agentic-hicache-mtp");
  EXPECT_FALSE(sglang.server_env.count("VLLM_USE_RUST_FRONTEND"));
}

// The MiniMax-M3 vLLM launchers on AMD GPUs and on H100/H200 pass
// --attention-backend TRITON_ATTN (benchmarks/single_node/agentic/
// minimaxm3_*_mtp.sh at 843c6254ff69); the generated command passes it on,
// and the engine reads it (sim/step_time.h, the serial KV walk).
TEST(MasterConfig, AMiniMaxEntryRunsTheAttentionBackendItsLauncherPasses) {
  EXPECT_EQ(launcher_attention_backend("vllm", "minimaxm3", "mi300x").target, "TRITON_ATTN");
  EXPECT_EQ(launcher_attention_backend("vllm", "minimaxm3", "mi300x").draft, "TRITON_ATTN");
  EXPECT_EQ(launcher_attention_backend("vllm", "minimaxm3", "h200").target, "TRITON_ATTN");
  EXPECT_EQ(launcher_attention_backend("vllm", "minimaxm3", "h200").draft, "FLASH_ATTN");
  EXPECT_EQ(launcher_attention_backend("vllm", "minimaxm3", "b200").target, "");  // vLLM's default there
  EXPECT_EQ(launcher_attention_backend("vllm", "kimik3", "mi355x").target, "");
  EXPECT_EQ(launcher_attention_backend("sglang", "minimaxm3", "mi300x").target, "");
  // The MI300X entry's LMCache arm leaves it without a generated command;
  // its prediction still runs the launcher's kernels.
  const Recipe mi300x = load_recipe(kAmd + "#minimaxm3-fp8-mi300x-vllm-agentic-mtp");
  const auto points = expand(mi300x);
  ASSERT_FALSE(points.empty());
  const auto pools = engines_for(mi300x, points.front(), sim::EngineCosts{}, nullptr, nullptr);
  ASSERT_FALSE(pools.empty());
  EXPECT_EQ(pools.front().config.attention_backend, "TRITON_ATTN");
  EXPECT_EQ(pools.front().config.draft_attention_backend, "TRITON_ATTN");
  // Where a command is generated (no offload arm on MI325X) it passes the flag.
  const Recipe mi325x = load_recipe(kAmd + "#minimaxm3-fp8-mi325x-vllm-agentic-mtp");
  ASSERT_FALSE(mi325x.server_command.empty()) << mi325x.server_missing;
  EXPECT_NE(mi325x.server_command.find("--attention-backend TRITON_ATTN"), std::string::npos) << mi325x.server_command;
  const Recipe b200 = load_recipe(kNvidia + "#minimaxm3-fp4-b200-vllm-agentic-mtp");
  EXPECT_EQ(b200.server_command.find("--attention-backend"), std::string::npos);
}

// An MTP entry drafts as its launcher does, at the golden acceptance length
// the launcher pins (benchmarks/single_node/agentic/*_mtp.sh at 843c6254ff69;
// InferenceX's golden_al_distribution/*.yaml), not the generic 3 steps at 3.39.
TEST(MasterConfig, AnMtpEntryDraftsAsItsLauncherDoes) {
  const auto glm_mi355x = launcher_speculation("sglang", "glm5.2", "mi355x", 4);
  ASSERT_TRUE(glm_mi355x);
  EXPECT_EQ(glm_mi355x->draft_tokens, 5);  // --speculative-num-steps 5, SGLANG_SIMULATE_ACC_LEN=3.61
  EXPECT_DOUBLE_EQ(glm_mi355x->accept_length, 3.61);
  EXPECT_DOUBLE_EQ(launcher_speculation("sglang", "glm5.2", "b300", 4)->accept_length, 2.99);
  EXPECT_DOUBLE_EQ(launcher_speculation("vllm", "minimaxm3", "mi300x", 4)->accept_length, 2.78);
  EXPECT_DOUBLE_EQ(launcher_speculation("sglang", "dsv4", "b200", 4)->accept_length, 2.49);
  const auto dspark = launcher_speculation("sglang", "dsv41flash", "b200", 4);
  EXPECT_TRUE(dspark->block);
  EXPECT_EQ(dspark->draft_tokens, 5);
  EXPECT_EQ(launcher_speculation("vllm", "kimik3", "b300", 8)->draft_tokens, 7);
  EXPECT_EQ(launcher_speculation("vllm", "kimik3", "b300", 16)->draft_tokens, 3);
  EXPECT_EQ(launcher_speculation("vllm", "kimik3", "b300", 24)->draft_tokens, 0);  // no draft above 16
  EXPECT_FALSE(launcher_speculation("sglang", "gptoss", "b200", 4));

  // Through the route: GLM-5.2 on MI355X runs 5 steps (6 verified) at 3.61.
  const auto glm = engines_of_first(load_recipe(kAmd + "#glm5.2-fp4-mi355x-sglang-agentic-mtp"),
                                    [](const ExpandedPoint& p) { return p.conc == 4; });
  ASSERT_EQ(glm.size(), 1u);
  EXPECT_TRUE(glm[0].config.spec.enabled);
  EXPECT_EQ(glm[0].config.spec.num_steps, 5);
  EXPECT_EQ(glm[0].config.spec.num_draft_tokens, 6);
  EXPECT_DOUBLE_EQ(glm[0].config.spec.accept_length, 3.61);
  // Kimi-K3 on B300: DSpark blocks of 7 at conc 8, no draft at conc 24.
  const auto kimi = load_recipe(kNvidia + "#kimik3-fp4-b300-vllm-agentic-dspark");
  const auto k8 = engines_of_first(kimi, [](const ExpandedPoint& p) { return p.conc == 8; });
  ASSERT_EQ(k8.size(), 1u);
  EXPECT_EQ(k8[0].config.spec.block_size, 7);
  EXPECT_EQ(k8[0].config.spec.max_accepted(), 8);
  EXPECT_DOUBLE_EQ(k8[0].config.spec.accept_length, 3.84);
  const auto k24 = engines_of_first(kimi, [](const ExpandedPoint& p) { return p.conc == 24; });
  ASSERT_EQ(k24.size(), 1u);
  EXPECT_FALSE(k24[0].config.spec.enabled);
}
