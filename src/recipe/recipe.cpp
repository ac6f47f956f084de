#include "recipe/recipe.h"

#include <filesystem>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "common/error.h"
#include "recipe/inferencex_map.h"
#include "recipe/master_config.h"
#include "recipe/search_space_fields.h"
#include "recipe/yaml_node.h"

namespace agentperf::recipe {
namespace {

using detail::Node;

std::string fill(std::string tpl, const std::map<std::string, std::string>& values, const std::string& source) {
  std::string out;
  for (std::size_t i = 0; i < tpl.size(); ++i) {
    if (tpl[i] != '{') {
      out += tpl[i];
      continue;
    }
    const auto close = tpl.find('}', i);
    if (close == std::string::npos) throw UserError(source + ": server.command: unclosed '{'");
    const std::string key = tpl.substr(i + 1, close - i - 1);
    auto it = values.find(key);
    if (it == values.end()) {
      std::string known;
      for (const auto& [k, v] : values) known += (known.empty() ? "" : ", ") + k;
      throw UserError(source + ": server.command: unknown placeholder {" + key + "} (known: " + known + ")");
    }
    out += it->second;
    i = close;
  }
  return out;
}

// 0.85 -> "0.85", as a launcher writes it.
std::string fmt_fraction(double f) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", f);
  return buf;
}

}  // namespace

std::int64_t total_cpu_dram_gb(std::int64_t available_mib, double utilization, int gpus, int gpus_per_node) {
  const double mib = static_cast<double>(std::min<std::int64_t>(available_mib, 2'861'022));
  return static_cast<std::int64_t>(std::floor(mib * 1048576.0 * utilization * gpus / gpus_per_node / 1e9));
}

std::int64_t hicache_size_per_rank_gb(std::int64_t total_gb, int tp) {
  // Integer arithmetic, as the launcher does it.
  return (total_gb - tp) * 15 / tp / 31;
}

void require_sweepable(const Recipe& r, bool dry_run) {
  if (r.multinode && !dry_run)
    throw UserError(r.source + ": a multinode entry (prefill/decode workers, " + r.framework +
                    "): a measured sweep starts single-node servers only; --dry-run predicts its worker pools");
  if (dry_run && r.sim_model_spec.empty())
    throw UserError(!r.sim_missing.empty() ? r.sim_missing + " (--dry-run needs one)"
                                           : r.source + ": --dry-run needs the recipe's 'sim' block (model-spec, hardware)");
  if (!dry_run && r.server_command.empty())
    throw UserError(!r.server_missing.empty() ? r.server_missing + "; or use --dry-run"
                                              : r.source + ": the recipe has no server.command to start");
}

std::vector<int> conc_range(int start, int end) {
  // generate_sweep_configs.py: double from start, then end itself.
  std::vector<int> out;
  for (long long c = start; c <= end;) {
    out.push_back(static_cast<int>(c));
    if (c == end) break;
    c = std::min<long long>(c * 2, end);
  }
  return out;
}

Recipe load_recipe(const std::string& path) {
  if (auto ref = parse_master_ref(path)) return load_master_entry(ref->file, ref->key);
  const YAML::Node doc = detail::load_yaml_file(path, "recipe");
  if (detail::looks_like_master_config(doc))
    throw UserError(path + ": an InferenceX master config, not a recipe: name one of its entries as " + path +
                    "#KEY (`agentperf recipe list " + path + "` lists those with an agentic-coding scenario)");
  Recipe r;
  r.source = path;
  Node root(doc, "", r.source);
  root.only({"name", "image", "model", "model-prefix", "precision", "framework", "runner", "hardware", "sim",
             "scenarios", "server", "replay", "cost"});
  r.name = root.get<std::string>("name", "a string");
  r.image = root.get<std::string>("image", "a container image", std::string());
  r.model = root.get<std::string>("model", "a model id");
  r.model_prefix = root.get<std::string>("model-prefix", "a string", std::string());
  r.precision = root.get<std::string>("precision", "a string", std::string());
  r.framework = root.get<std::string>("framework", "sglang, vllm, trt or sim");
  r.runner = root.get<std::string>("runner", "a runner name", std::string());
  if (root.has("hardware")) {
    auto h = root["hardware"];
    h.only({"gpus-per-node", "available-cpu-dram-mib"});
    r.gpus_per_node = h.get<int>("gpus-per-node", "an integer", 8);
    r.available_cpu_dram_mib = h.get<std::int64_t>("available-cpu-dram-mib", "an integer (MiB)", std::int64_t{0});
    if (r.gpus_per_node < 1) h["gpus-per-node"].fail("must be at least 1");
  }
  if (root.has("cost")) {
    auto c = root["cost"];
    c.only({"gpu-price-per-hour", "gpu-power-watts"});
    if (c.has("gpu-price-per-hour")) {
      r.gpu_price_per_hour = c.get<double>("gpu-price-per-hour", "dollars per GPU-hour");
      if (!(*r.gpu_price_per_hour > 0)) c["gpu-price-per-hour"].fail("must be > 0 dollars per GPU-hour");
    }
    if (c.has("gpu-power-watts")) {
      r.gpu_power_watts = c.get<double>("gpu-power-watts", "watts per GPU");
      if (!(*r.gpu_power_watts > 0)) c["gpu-power-watts"].fail("must be > 0 watts per GPU");
    }
  }
  if (root.has("sim")) {
    auto s = root["sim"];
    s.only({"model-spec", "hardware"});
    r.sim_model_spec = s.get<std::string>("model-spec", "a model spec name or file");
    r.sim_hardware_spec = s.get<std::string>("hardware", "a hardware spec name or file");
  }
  auto sc = root["scenarios"];
  sc.only({"agentic-coding"});
  auto blocks = sc["agentic-coding"];
  if (!blocks.is_seq() || blocks.size() == 0) blocks.fail("expected a non-empty list of scenario blocks");
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    auto bn = blocks.at(b);
    bn.only({"dram-utilization", "search-space"});
    ScenarioBlock block;
    block.dram_utilization = read_dram_utilization(bn);
    auto ss = bn["search-space"];
    if (!ss.is_seq() || ss.size() == 0) ss.fail("expected a non-empty list of entries");
    for (std::size_t i = 0; i < ss.size(); ++i) {
      auto en = ss.at(i);
      en.only({"tp", "ep", "pp", "dp-attn", "spec-decoding", "kv-offloading", "kv-offload-backend", "conc-list",
               "conc-start", "conc-end"});
      SearchSpaceEntry e;
      e.tp = en.get<int>("tp", "an integer");
      e.ep = en.get<int>("ep", "an integer", 1);
      e.pp = en.get<int>("pp", "an integer", 1);
      e.dp_attn = en.get<bool>("dp-attn", "true or false", false);
      e.spec_decoding = en.get<std::string>("spec-decoding", "mtp, draft_model or none", std::string("none"));
      e.kv_offloading = en.get<std::string>("kv-offloading", "none or dram");
      if (e.tp < 1 || e.tp * e.pp > r.gpus_per_node)
        en["tp"].fail("TP x PP = " + std::to_string(e.tp * e.pp) + " must be in 1.." + std::to_string(r.gpus_per_node) +
                      " (GPUs per node)");
      if (e.spec_decoding != "mtp" && e.spec_decoding != "draft_model" && e.spec_decoding != "none")
        en["spec-decoding"].fail("'" + e.spec_decoding + "' is not mtp, draft_model or none");
      if (e.kv_offloading != "none" && e.kv_offloading != "dram")
        en["kv-offloading"].fail("'" + e.kv_offloading + "' is not none or dram");
      if (e.kv_offloading == "dram") {
        if (!en.has("kv-offload-backend")) en["kv-offload-backend"].fail("required with kv-offloading: dram");
        auto kb = en["kv-offload-backend"];
        kb.only({"name", "version"});
        e.kv_offload_backend = kb.get<std::string>("name", "a backend name");
        if (!block.dram_utilization) bn["dram-utilization"].fail("required when an entry uses kv-offloading: dram");
        if (r.available_cpu_dram_mib <= 0)
          root["hardware"]["available-cpu-dram-mib"].fail("required when an entry uses kv-offloading: dram");
      } else if (en.has("kv-offload-backend")) {
        en["kv-offload-backend"].fail("only with kv-offloading: dram");
      }
      e.conc_list = read_concs(en);
      block.search_space.push_back(std::move(e));
    }
    r.agentic.push_back(std::move(block));
  }
  if (root.has("server")) {
    auto s = root["server"];
    s.only({"command", "env", "startup-timeout"});
    r.server_command = s.get<std::string>("command", "a command template");
    // The sweep picks a free port per point and reaches the server only there.
    if (r.server_command.find("{port}") == std::string::npos)
      s["command"].fail("no {port} placeholder (expected the server's listen port as {port}, e.g. --port {port}: "
                        "the sweep chooses a free port for each point and reaches the server there)");
    r.server_startup_timeout_s = s.get<double>("startup-timeout", "seconds", 1800.0);
    if (r.server_startup_timeout_s <= 0) s["startup-timeout"].fail("must be > 0 seconds");
    if (s.has("env")) {
      // The node held by name: a range-for over s["env"].raw() would iterate
      // a member of a temporary that C++20 destroys before the loop runs.
      const auto env = s["env"];
      if (!env.raw().IsMap()) env.fail("expected a mapping of variables");
      for (const auto& kv : env.raw()) r.server_env[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
  }
  if (root.has("replay")) {
    auto rp = root["replay"];
    rp.only({"duration", "traces", "grace", "warmup", "system-idle-cap", "endpoint-type", "random-seed"});
    r.duration_s = rp.get<double>("duration", "seconds", 3600.0);
    if (r.duration_s <= 0) rp["duration"].fail("must be > 0");
    if (rp.has("traces")) {
      r.replay_traces = rp.get<std::string>("traces", "a trace file or directory");
      const std::filesystem::path tp(r.replay_traces);
      // "synth:PRESET" names a synthetic corpus, not a file.
      if (tp.is_relative() && r.replay_traces.rfind("synth:", 0) != 0) r.replay_traces = (std::filesystem::path(path).parent_path() / tp).string();
    }
    r.replay_grace_s = rp.get<double>("grace", "seconds", 30.0);
    if (r.replay_grace_s < 0) rp["grace"].fail("must be >= 0 seconds");
    r.replay_warmup = rp.get<bool>("warmup", "true or false", true);
    r.replay_system_idle_cap_s = rp.get<double>("system-idle-cap", "seconds", 10.0);
    if (r.replay_system_idle_cap_s <= 0) rp["system-idle-cap"].fail("must be > 0 seconds");
    const auto seed = rp.get<std::int64_t>("random-seed", "a whole number >= 0", std::int64_t{42});
    if (seed < 0) rp["random-seed"].fail("must be >= 0");
    r.replay_seed = static_cast<std::uint64_t>(seed);
    r.replay_endpoint_type = rp.get<std::string>("endpoint-type", "chat or completions", std::string("completions"));
    if (r.replay_endpoint_type != "chat" && r.replay_endpoint_type != "completions")
      rp["endpoint-type"].fail("must be chat or completions");
  }
  return r;
}

namespace {

std::string worker_tag(const char* role, const WorkerSpec& w) {
  // generate_sweep_configs.py multinode_agentic_exp_name, plus pp/dcp/pcp.
  std::string t = role + std::to_string(w.num_worker) + "x" + std::to_string(w.tp);
  if (w.ep != 1) t += "ep" + std::to_string(w.ep);
  if (w.dp_attn) t += "dpa";
  if (w.pp != 1) t += "pp" + std::to_string(w.pp);
  if (w.dcp != 1) t += "dcp" + std::to_string(w.dcp);
  if (w.pcp != 1) t += "pcp" + std::to_string(w.pcp);
  return t;
}

std::string topology_tag(const SearchSpaceEntry& e) {
  if (e.multinode()) return worker_tag("p", *e.prefill) + "_" + worker_tag("d", *e.decode);
  std::string t = "tp" + std::to_string(e.tp);
  if (e.ep > 1) t += "ep" + std::to_string(e.ep);
  if (e.dp_attn) t += "dpa";
  if (e.pp > 1) t += "pp" + std::to_string(e.pp);
  if (e.dcp > 1) t += "dcp" + std::to_string(e.dcp);
  if (e.pcp > 1) t += "pcp" + std::to_string(e.pcp);
  return t;
}

// GPUs of a multinode prefill worker on one node (generate_sweep_configs.py
// worker_gpus_per_node): a replica spanning nodes fills each of them.
int worker_gpus_on_node(const WorkerSpec& w, int gpus_per_node, const std::string& source) {
  const int g = w.gpus();
  if (g > gpus_per_node) {
    if (g % gpus_per_node != 0)
      throw UserError(source + ": prefill worker tp*pp*pcp = " + std::to_string(g) +
                      " spans nodes but is not a multiple of gpus-per-node " + std::to_string(gpus_per_node));
    return gpus_per_node;
  }
  if (gpus_per_node % g != 0)
    throw UserError(source + ": prefill worker tp*pp*pcp = " + std::to_string(g) + " does not divide gpus-per-node " +
                    std::to_string(gpus_per_node) + " evenly");
  return g;
}

std::string parallel_args(const Recipe& r, const SearchSpaceEntry& e) {
  if (r.command_flavor == "vllm") {
    std::string s = e.dp_attn ? "--tensor-parallel-size 1 --data-parallel-size " + std::to_string(e.tp)
                              : "--tensor-parallel-size " + std::to_string(e.tp) + " --data-parallel-size 1";
    if (e.ep > 1) s += " --enable-expert-parallel";
    if (e.pp > 1) s += " --pipeline-parallel-size " + std::to_string(e.pp);
    if (e.dcp > 1) s += " --decode-context-parallel-size " + std::to_string(e.dcp);
    if (e.pcp > 1) s += " --prefill-context-parallel-size " + std::to_string(e.pcp);
    return s;
  }
  std::string s = "--tp " + std::to_string(e.tp) + " --ep-size " + std::to_string(e.ep);
  if (e.dp_attn) s += " --enable-dp-attention --dp-size " + std::to_string(e.tp);
  return s;
}

std::string spec_args(const Recipe& r, const SearchSpaceEntry& e) {
  if (e.spec_decoding != "mtp") return "";
  if (r.command_flavor == "vllm") return R"(--speculative-config '{"method": "mtp", "num_speculative_tokens": 3}')";
  return "--speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 "
         "--speculative-num-draft-tokens 4";
}

std::string offload_args(const Recipe& r, const SearchSpaceEntry& e, const ExpandedPoint& p) {
  if (e.kv_offloading != "dram") return "";
  if (r.command_flavor == "vllm") {
    // The SimpleCPUOffloadConnector as the entry's own launcher configures it
    // (its key, bytes, laziness and block: the point's launcher_host); a
    // launcher the table does not know gets dsv4_fp4_b200_vllm_mtp.sh's form:
    // DRAM split evenly over the GPUs a rank, stored as computed.
    const auto& h = p.launcher_host;
    const bool known = h && !h->bytes_key.empty();
    const std::string key = known ? h->bytes_key : "cpu_bytes_to_use_per_rank";
    const std::int64_t bytes = known ? h->bytes_value : p.total_cpu_dram_gb * 1000000000LL / (e.tp * e.pp * e.pcp);
    std::string s = R"(--kv-transfer-config '{"kv_connector": "SimpleCPUOffloadConnector", "kv_role": "kv_both", )"
                    R"("kv_connector_extra_config": {")" +
                    key + "\": " + std::to_string(bytes) +
                    (known && h->cross_layer_blocks ? R"(, "enable_cross_layers_blocks": "true")" : "") +
                    R"(, "lazy_offload": )" + (known && h->lazy ? "true" : "false") + "}}'";
    if (known && h->block_size > 0) s += " --block-size " + std::to_string(h->block_size);
    return s;
  }
  return "--page-size 64 --enable-hierarchical-cache --hicache-size " + std::to_string(p.hicache_size_gb) +
         " --hicache-io-backend kernel --hicache-mem-layout page_first --hicache-write-policy write_through_selective";
}

}  // namespace

std::vector<ExpandedPoint> expand(const Recipe& r) {
  std::vector<ExpandedPoint> out;
  for (const auto& block : r.agentic) {
    for (const auto& e : block.search_space) {
      for (int conc : e.conc_list) {
        ExpandedPoint p;
        p.entry = &e;
        p.conc = conc;
        p.max_running_requests = 2 * conc;
        p.cuda_graph_max_bs = std::min(conc, 64);
        if (e.kv_offloading == "dram") {
          // The DRAM budget of one server node (generate_sweep_configs.py
          // agentic_dram_offload_gb): single node, the TP x PP x PCP GPUs;
          // multinode, the prefill worker's GPUs on a node (only prefill offloads).
          const int gpus = e.multinode() ? worker_gpus_on_node(*e.prefill, r.gpus_per_node, r.source) : e.tp * e.pp * e.pcp;
          p.dram_ranks = e.multinode() ? gpus : e.tp;
          p.total_cpu_dram_gb = total_cpu_dram_gb(r.available_cpu_dram_mib, *block.dram_utilization, gpus, r.gpus_per_node);
          p.hicache_size_gb = hicache_size_per_rank_gb(p.total_cpu_dram_gb, p.dram_ranks);
          p.projected_host_gb = static_cast<double>(p.hicache_size_gb) * 31.0 / 15.0 * p.dram_ranks;
          // A single-node vLLM entry's host KV is its launcher's connector
          // budget where the table knows the launcher (as the dry run sizes it).
          if (r.framework == "vllm" && !e.multinode())
            p.launcher_host = launcher_host_offload(r.model_prefix, r.sim_hardware_spec, e.kv_offload_backend, e.tp,
                                                    e.dp_attn, p.total_cpu_dram_gb);
          if (p.launcher_host) {
            p.hicache_size_gb = std::llround(p.launcher_host->bytes_per_rank / 1e9);
            p.projected_host_gb = p.launcher_host->bytes_per_rank * p.dram_ranks / 1e9;
          }
          if (p.hicache_size_gb <= 0)
            throw UserError(r.source + ": tp " + std::to_string(p.dram_ranks) + " with dram-utilization " +
                            std::to_string(*block.dram_utilization) + ": " + std::to_string(p.total_cpu_dram_gb) +
                            " GB of host DRAM cannot fit a HiCache pool per rank");
        }
        p.exp_name = r.name + "_" + topology_tag(e) + (e.spec_decoding != "none" ? "_" + e.spec_decoding : "") +
                     "_conc" + std::to_string(conc) +
                     (e.kv_offloading == "dram" ? "_kvdram-" + e.kv_offload_backend : "");
        if (!r.server_command.empty()) {
          p.command = fill(r.server_command,
                           {{"model", r.model},
                            {"tp", std::to_string(e.tp)},
                            {"ep", std::to_string(e.ep)},
                            {"conc", std::to_string(conc)},
                            {"max_running_requests", std::to_string(p.max_running_requests)},
                            {"cuda_graph_max_bs", std::to_string(p.cuda_graph_max_bs)},
                            {"hicache_args", offload_args(r, e, p)},
                            {"spec_args", spec_args(r, e)},
                            {"parallel_args", parallel_args(r, e)},
                            {"mem_fraction_static",
                             fmt_fraction(launcher_memory_fraction(r.framework, r.model_prefix, r.sim_hardware_spec, e.tp,
                                                                   e.dp_attn, conc))},
                            {"port", "{port}"}},
                           r.source);
          // Collapse the spaces an empty argument group leaves.
          std::string squeezed;
          for (char c : p.command)
            if (!(c == ' ' && !squeezed.empty() && squeezed.back() == ' ')) squeezed += c;
          p.command = squeezed;
        }
        out.push_back(std::move(p));
      }
    }
  }
  return out;
}

}  // namespace agentperf::recipe
