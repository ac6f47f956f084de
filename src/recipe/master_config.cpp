#include "recipe/master_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "common/error.h"
#include "recipe/inferencex_map.h"
#include "recipe/search_space_fields.h"
#include "recipe/srt_slurm_recipe.h"
#include "recipe/yaml_node.h"
#include "sim/engine_config.h"

namespace agentperf::recipe {
namespace detail {

bool looks_like_master_config(const YAML::Node& doc) {
  if (!doc.IsMap() || doc["name"] || doc["scenarios"]) return false;
  for (const auto& kv : doc)
    if (kv.second.IsMap() && kv.second["scenarios"]) return true;
  return false;
}

}  // namespace detail

namespace {
// What the dry run does with a multinode entry's router (sweep/point_ranks.h).
constexpr const char* kMultinodeRouterNote =
    ": its own policy is not modelled; --dry-run routes to the workers session-sticky (each its own KV pool and "
    "radix cache), and a disaggregated entry's decode side by least outstanding requests";


using detail::Node;

const char* kDpAttnNote =
    "true: planned as one DP rank (TP t, EP e <= t: t ranks of attention TP1; e > t: vLLM's TP t x DP e/t), weights "
    "spread over all the engine's GPUs except the attention and embedding, held at 1/attention-TP where the model "
    "spec gives their bytes (dp_attention_replicated_bytes; without them, spread too), KV and state per rank, "
    "2 x conc running split over the ranks";
const char* kPpNote =
    "pipeline parallelism: weights are spread over TP x PP GPUs, but each rank is planned as holding the KV of every "
    "layer (a pool PP times too small)";

// Notes are gathered per field: the first row's key path, how many more rows
// say the same, and what the tools do with it.
class Notes {
 public:
  void add(const std::string& field, const std::string& path, const std::string& what) {
    auto& n = notes_[field];
    if (n.count++ == 0) {
      n.path = path;
      n.what = what;
      order_.push_back(field);
    }
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (const auto& f : order_) {
      const auto& n = notes_.at(f);
      out.push_back(n.path + (n.count > 1 ? " (and " + std::to_string(n.count - 1) + " more)" : "") +
                    ": " + n.what);
    }
    return out;
  }

 private:
  struct Note {
    std::string path, what;
    int count = 0;
  };
  std::map<std::string, Note> notes_;
  std::vector<std::string> order_;
};

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

WorkerSpec read_worker(const Node& w) {
  w.only({"num-worker", "tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn", "hardware", "additional-settings"});
  WorkerSpec s;
  s.num_worker = w.get<int>("num-worker", "an integer >= 0");
  s.tp = w.get<int>("tp", "an integer");
  s.ep = w.get<int>("ep", "an integer");
  s.dp_attn = w.get<bool>("dp-attn", "true or false");
  s.pp = w.get<int>("pp", "an integer", 1);
  s.dcp = w.get<int>("dcp-size", "an integer", 1);
  s.pcp = w.get<int>("pcp-size", "an integer", 1);
  if (s.num_worker < 0) w["num-worker"].fail("must be >= 0");
  if (s.tp < 1) w["tp"].fail("must be at least 1");
  if (s.ep < 1) w["ep"].fail("must be at least 1");
  if (s.pp < 1) w["pp"].fail("must be at least 1");
  if (s.pcp < 1) w["pcp-size"].fail("must be at least 1");
  if (s.dcp < 1 || s.tp % s.dcp != 0)
    w["dcp-size"].fail("tp (" + std::to_string(s.tp) + ") must be divisible by dcp-size (" + std::to_string(s.dcp) + ")");
  if (w.has("additional-settings")) {
    auto a = w["additional-settings"];
    if (!a.is_seq()) a.fail("expected a list of strings");
    for (std::size_t i = 0; i < a.size(); ++i) s.additional_settings.push_back(a.at(i).as<std::string>("a string"));
  }
  return s;
}

// A worker pool's engine flags from the srt-slurm recipe its
// CONFIG_FILE names (srt_slurm_recipe.h), found beside the master config in
// an InferenceX checkout: the role's own settings ("aggregated" for an
// entry without decode workers). Where the recipe is not found or gives
// none, a note says so and the pool keeps the framework's defaults.
// The CONFIG_FILE a worker's additional-settings name ("" when none).
std::string config_file_of(const WorkerSpec& w) {
  const std::string key = "CONFIG_FILE=";
  for (const auto& setting : w.additional_settings)
    if (setting.rfind(key, 0) == 0) return setting.substr(key.size());
  return "";
}

// One recipe describes the whole deployment; InferenceX's rows name it on
// one worker (usually the prefill side), and every pool reads its own role.
void read_pool_flags(WorkerSpec& w, const std::string& config_file, const std::string& role, bool aggregated,
                     const std::string& model, const std::string& master_file, const std::string& path, Notes& notes,
                     bool first_pool) {
  std::pair<std::string, std::optional<SrtSlurmVariant>> parts;
  try {
    parts = split_srt_slurm_config_file(config_file);
  } catch (const UserError& e) {
    throw UserError(path + ": " + e.what());
  }
  const auto& [file, variant] = parts;
  const auto recipe = find_srt_slurm_recipe(master_file, file);
  if (!recipe) {
    if (first_pool)
      notes.add("srt-slurm recipe not found", path,
                "CONFIG_FILE=" + config_file +
                    ": not under benchmarks/multi_node/srt-slurm-recipes beside the master config or above it; the "
                    "pool is planned at its framework's defaults");
    return;
  }
  const std::string recipe_role = aggregated ? "aggregated" : role;
  const auto flags = srt_slurm_role(*recipe, recipe_role, model, variant);
  if (!flags.read()) {
    notes.add("srt-slurm recipe not read", path,
              *recipe + ": role '" + recipe_role + "': " + flags.why_not +
                  "; the pool is planned at its framework's defaults");
    return;
  }
  if (const auto dtype = command_flag_value(flags.command, "--kv-cache-dtype")) {
    try {
      (void)sim::parse_kv_cache_dtype(*dtype);
    } catch (const UserError& e) {
      throw UserError(*recipe + ": role '" + recipe_role + "': " + e.what());
    }
  }
  w.server_command = flags.command;
  w.trtllm = flags.trtllm;
  if (first_pool && flags.trtllm)
    notes.add("srt-slurm recipe", path,
              "CONFIG_FILE=" + config_file +
                  ": each worker pool's TensorRT-LLM options are read from its role in the srt-slurm recipe "
                  "(free_gpu_memory_fraction, KV dtype and block, host cache size, max_batch_size, max_num_tokens, "
                  "MTP draft length, stream interval); pool_ratio, mamba_state_config and the per-conversation "
                  "block-reuse policy are not modelled");
  else if (first_pool)
    notes.add("srt-slurm recipe", path,
              "CONFIG_FILE=" + config_file +
                  ": each worker pool's engine flags are read from its role in the srt-slurm recipe (memory fraction, "
                  "KV dtype, prefill chunking, block or page size, stream interval, state slots and the scheduling "
                  "flags)");
}

std::string component(const Node& c) {  // {name, version}
  c.only({"name", "version"});
  const auto name = c.get<std::string>("name", "a name");
  const auto version = c.get<std::string>("version", "a version", std::string());
  return version.empty() ? name : name + " " + version;
}

std::string gpu_of(const std::string& runner) {
  const auto colon = runner.find(':');
  const std::string site = colon == std::string::npos ? runner : runner.substr(colon + 1);
  return site.substr(0, site.find('-'));
}

}  // namespace

std::optional<MasterRef> parse_master_ref(const std::string& path) {
  const auto hash = path.rfind('#');
  if (hash == std::string::npos) return std::nullopt;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return std::nullopt;  // a file whose name has a '#'
  MasterRef ref{path.substr(0, hash), path.substr(hash + 1)};
  if (ref.file.empty())
    throw UserError("'" + path + "': no file before '#' (expected PATH#KEY: an InferenceX master config and one of its entry keys)");
  if (ref.key.empty())
    throw UserError("'" + path + "': no entry key after '#' (expected PATH#KEY; `agentperf recipe list " + ref.file +
                    "` lists the keys)");
  return ref;
}

struct MasterConfig::Impl {
  std::string path;
  YAML::Node doc;
};

MasterConfig::MasterConfig(const std::string& path) {
  auto impl = std::make_shared<Impl>();
  impl->path = path;
  impl->doc = detail::load_yaml_file(path, "master config");
  if (!detail::looks_like_master_config(impl->doc))
    throw UserError(path + ": not an InferenceX master config (expected a mapping of entry keys to entries with "
                           "'scenarios'; a recipe is read without #KEY)");
  impl_ = std::move(impl);
}

const std::string& MasterConfig::path() const { return impl_->path; }

std::size_t MasterConfig::entry_count() const { return impl_->doc.size(); }

std::vector<std::string> MasterConfig::agentic_keys() const {
  std::vector<std::string> keys;
  for (const auto& kv : impl_->doc) {
    const auto& v = kv.second;
    if (v.IsMap() && v["scenarios"] && v["scenarios"].IsMap() && v["scenarios"]["agentic-coding"])
      keys.push_back(kv.first.as<std::string>());
  }
  return keys;
}

MasterEntrySummary MasterConfig::summary(const std::string& key) const {
  const auto r = entry(key);
  MasterEntrySummary s;
  s.key = key;
  s.model = r.model;
  s.precision = r.precision;
  s.framework = r.framework;
  s.runner = r.runner;
  s.multinode = r.multinode;
  s.disagg = r.disagg;
  for (const auto& b : r.agentic) {
    s.rows += static_cast<int>(b.search_space.size());
    for (const auto& e : b.search_space) s.points += static_cast<int>(e.conc_list.size());
  }
  if (const auto* m = find_model_spec(r.model, r.precision)) s.model_spec = m->spec;
  return s;
}

Recipe MasterConfig::entry(const std::string& key) const {
  const auto& file = impl_->path;
  const YAML::Node node = impl_->doc[key];
  if (!node.IsDefined()) {
    const auto keys = agentic_keys();
    std::string best;
    std::size_t best_d = std::string::npos;
    for (const auto& k : keys)
      if (const auto d = edit_distance(k, key); d < best_d) best_d = d, best = k;
    const bool close = !best.empty() && best_d <= std::max<std::size_t>(3, key.size() / 4);
    throw UserError(file + ": no entry '" + key + "'" + (close ? " (did you mean '" + best + "'?)" : "") + "; " +
                    std::to_string(keys.size()) + " of its " + std::to_string(impl_->doc.size()) +
                    " entries have an agentic-coding scenario (`agentperf recipe list " + file + "`)");
  }
  Recipe r;
  r.source = file + "#" + key;
  r.master_file = file;
  r.master_key = key;
  r.name = key;
  Node root(node, key, file);
  root.only({"image", "model", "model-prefix", "precision", "framework", "runner", "multinode", "disagg", "router",
             "kv-p2p-transfer", "scenarios"});
  r.image = root.get<std::string>("image", "a container image");
  r.model = root.get<std::string>("model", "a model id");
  r.model_prefix = root.get<std::string>("model-prefix", "a string");
  r.precision = root.get<std::string>("precision", "a string");
  r.framework = root.get<std::string>("framework", "a framework name");
  r.runner = root.get<std::string>("runner", "a runner label");
  r.multinode = root.get<bool>("multinode", "true or false");
  r.disagg = root.get<bool>("disagg", "true or false", false);
  if (r.disagg && !r.multinode) root["disagg"].fail("true needs multinode: true");
  r.replay_traces = default_corpus_for(r.model_prefix);  // stands in for the corpus the launcher replays
  r.duration_s = 3600;                     // DEFAULT_AGENTIC_DURATION_SECONDS

  Notes notes;
  if (r.framework.find("trt") != std::string::npos)
    notes.add("framework", key + ".framework",
              "'" + r.framework + "': the simulator sizes its pools as TensorRT-LLM does (free_gpu_memory_fraction of "
              "the HBM left after weights: its srt-slurm recipe's or launcher's, else TensorRT-LLM's default 0.9) "
              "and schedules it by in-flight batching (context chunks and generation in one forward of "
              "max_num_tokens), with SGLang's engine costs");
  else if (r.framework == "vllm")
    notes.add("framework", key + ".framework",
              "'vllm': the simulator schedules it with vLLM's scheduler and sizes its pools as SGLang does, its "
              "launcher's --gpu-memory-utilization taken as mem_fraction_static (0.80 where unknown)");
  else if (r.framework.find("vllm") != std::string::npos)
    notes.add("framework", key + ".framework",
              "'" + r.framework + "': the simulator schedules it with vLLM's scheduler and sizes its pools as SGLang "
              "does, at vLLM's default --gpu-memory-utilization 0.90");
  else if (r.framework != "sglang")
    notes.add("framework", key + ".framework",
              "'" + r.framework + "': the simulator sizes and schedules it as SGLang (mem_fraction_static 0.80)");
  if (r.multinode)
    notes.add("multinode", key + ".multinode",
              "true: each worker pool (prefill, decode) is planned as one engine of its own TP; a measured sweep "
              "cannot launch it; --dry-run predicts its workers (an aggregated pool's workers as replicas behind a "
              "session-sticky router)");
  if (r.disagg) {
    std::string transfer = root.get<std::string>("kv-p2p-transfer", "a transfer backend", std::string());
    notes.add("disagg", key + ".disagg",
              "true: prefill and decode workers are planned as separate engines; --dry-run sends each prompt's KV "
              "between them" +
                  (transfer.empty() ? std::string() : " (" + transfer + ")") +
                  " over the hardware spec's kv_transfer_bandwidth_one_way, without link contention");
  } else if (root.has("kv-p2p-transfer")) {
    notes.add("kv-p2p-transfer", key + ".kv-p2p-transfer", "not modelled (no disaggregated serving)");
  }
  if (root.has("router"))
    notes.add("router", key + ".router",
              component(root["router"]) + (r.multinode ? kMultinodeRouterNote
                                                       : ": the router is not modelled; the plan and --dry-run see one engine"));

  const RunnerRow* runner = find_runner(r.runner);
  if (!runner) {
    std::string known;
    for (const auto& row : runner_rows()) known += (known.empty() ? "" : ", ") + std::string(row.runner);
    root["runner"].fail("'" + r.runner + "' has no row in the runner table (src/recipe/inferencex_map.cpp; known: " +
                        known + ")");
  }
  r.gpus_per_node = runner->gpus_per_node;
  r.available_cpu_dram_mib = runner->available_cpu_dram_mib;
  const ModelSpecRow* spec = find_model_spec(r.model, r.precision);
  if (!spec)
    r.sim_missing = r.source + ": no simulator model spec for " + r.model + " (precision " + r.precision +
                    "): data/models has none, or src/recipe/inferencex_map.cpp maps it to none";
  else if (std::string(runner->hardware).empty())
    r.sim_missing = r.source + ": no simulator hardware spec for runner " + r.runner + " (" + gpu_of(r.runner) + ")";
  else {
    r.sim_model_spec = spec->spec;
    r.sim_hardware_spec = runner->hardware;
  }

  auto sc = root["scenarios"];
  sc.only({"fixed-seq-len", "agentic-coding"});
  if (!sc.has("agentic-coding"))
    sc.fail("no agentic-coding scenario (only fixed-seq-len): not a recipe; `agentperf recipe list " + file +
            "` lists the agentic entries");
  auto blocks = sc["agentic-coding"];
  if (!blocks.is_seq() || blocks.size() == 0) blocks.fail("expected a non-empty list of scenario blocks");
  bool all_hicache = true, all_vllm_simple = true;
  std::string other_backend;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    auto bn = blocks.at(b);
    bn.only({"search-space", "dram-utilization"});
    ScenarioBlock block;
    block.dram_utilization = read_dram_utilization(bn);
    auto ss = bn["search-space"];
    if (!ss.is_seq() || ss.size() == 0) ss.fail("expected a non-empty list of entries");
    for (std::size_t i = 0; i < ss.size(); ++i) {
      auto en = ss.at(i);
      en.only({"tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn", "spec-decoding", "prefill", "decode", "kv-offloading",
               "kv-offload-backend", "router", "kv-p2p-transfer", "conc-start", "conc-end", "conc-list"});
      SearchSpaceEntry e;
      const bool workers = en.has("prefill") || en.has("decode");
      if (workers && en.has("tp")) en["tp"].fail("give tp (single node) or prefill and decode (multinode), not both");
      if (workers != r.multinode)
        en.fail(workers ? "prefill/decode workers in an entry with multinode: false"
                        : "no prefill/decode workers in an entry with multinode: true");
      e.spec_decoding = en.get<std::string>("spec-decoding", "mtp, draft_model or none", std::string("none"));
      if (e.spec_decoding != "mtp" && e.spec_decoding != "draft_model" && e.spec_decoding != "none")
        en["spec-decoding"].fail("'" + e.spec_decoding + "' is not mtp, draft_model or none");
      if (e.spec_decoding == "draft_model")
        notes.add("draft_model", en["spec-decoding"].path(), "draft_model: no draft model is simulated (planned without speculation)");
      if (workers) {
        for (const char* k : {"pp", "dcp-size", "pcp-size"})
          if (en.has(k)) en[k].fail("not allowed in a multinode row (set it on the prefill/decode worker)");
        if (!en.has("prefill") || !en.has("decode")) en[en.has("prefill") ? "decode" : "prefill"].fail("missing (a multinode row needs prefill and decode)");
        e.prefill = read_worker(en["prefill"]);
        e.decode = read_worker(en["decode"]);
        if (e.prefill->num_worker + e.decode->num_worker == 0) en["prefill"]["num-worker"].fail("no workers (prefill and decode num-worker are 0)");
        const WorkerSpec& serving = e.decode->num_worker > 0 ? *e.decode : *e.prefill;
        e.tp = serving.tp * serving.pcp;
        e.ep = serving.ep;
        e.pp = serving.pp;
        e.dp_attn = serving.dp_attn;
        e.kv_offloading = en.get<std::string>("kv-offloading", "none or dram", std::string("none"));
        // The row's recipe, named on the prefill worker or else the decode one.
        const bool on_prefill = !config_file_of(*e.prefill).empty();
        const std::string config_file = config_file_of(on_prefill ? *e.prefill : *e.decode);
        bool recipe_noted = false;  // one note a row, not one a pool
        for (const char* role : {"prefill", "decode"}) {
          WorkerSpec& w = std::string(role) == "prefill" ? *e.prefill : *e.decode;
          if (w.num_worker == 0) continue;
          const auto wp = en[role];
          if (w.dp_attn)
            notes.add("dp-attn", wp["dp-attn"].path(), kDpAttnNote);
          if (w.pp > 1) notes.add("pp", wp["pp"].path(), kPpNote);
          if (w.dcp > 1)
            notes.add("dcp-size", wp["dcp-size"].path(),
                      "decode context parallelism is not modelled; KV per token as without it (DCP splits each request's "
                      "KV over its ranks)");
          if (w.pcp > 1)
            notes.add("pcp-size", wp["pcp-size"].path(),
                      "prefill context parallelism is not modelled; planned as TP tp x pcp-size over the same GPUs (the "
                      "server runs tp-size tp x pcp with attention context-parallel)");
          if (!config_file.empty()) {
            read_pool_flags(w, config_file, role, e.decode->num_worker == 0, r.model, file,
                            en[on_prefill ? "prefill" : "decode"]["additional-settings"].path(), notes, !recipe_noted);
            recipe_noted = true;
          }
          if (wp.has("hardware")) notes.add("hardware", wp["hardware"].path(), "per-worker hardware is not modelled; planned on the runner's GPU");
        }
      } else {
        e.tp = en.get<int>("tp", "an integer");
        e.ep = en.get<int>("ep", "an integer", 1);
        e.pp = en.get<int>("pp", "an integer", 1);
        e.dcp = en.get<int>("dcp-size", "an integer", 1);
        e.pcp = en.get<int>("pcp-size", "an integer", 1);
        e.dp_attn = en.get<bool>("dp-attn", "true or false", false);
        e.kv_offloading = en.get<std::string>("kv-offloading", "none or dram");
        if (e.tp < 1 || e.pp < 1 || e.pcp < 1 || e.tp * e.pp * e.pcp > r.gpus_per_node)
          en["tp"].fail("TP x PP x PCP = " + std::to_string(e.tp * e.pp * e.pcp) + " must be in 1.." +
                        std::to_string(r.gpus_per_node) + " (GPUs per node of " + r.runner + ")");
        if (e.ep < 1) en["ep"].fail("must be at least 1");
        if (e.dcp < 1 || e.tp % e.dcp != 0)
          en["dcp-size"].fail("tp (" + std::to_string(e.tp) + ") must be divisible by dcp-size (" + std::to_string(e.dcp) + ")");
        if (e.dp_attn) notes.add("dp-attn", en["dp-attn"].path(), kDpAttnNote);
        if (e.pp > 1) notes.add("pp", en["pp"].path(), kPpNote);
        if (e.dcp > 1)
          notes.add("dcp-size", en["dcp-size"].path(),
                    "decode context parallelism is not modelled; KV per token as without it (DCP splits each request's KV "
                    "over its ranks)");
        if (e.pcp > 1)
          notes.add("pcp-size", en["pcp-size"].path(),
                    "prefill context parallelism is not modelled; planned as TP" + std::to_string(e.tp) + " on TP x PCP GPUs");
      }
      if (en.has("router"))
        notes.add("router", en["router"].path(),
                  component(en["router"]) +
                      (e.dp_attn && !r.multinode
                           ? ": its own policy is not read; --dry-run routes the DP-attention ranks as InferenceX's "
                             "launchers' routers do, by consistent hashing of each conversation with no load bound "
                             "(each rank its own KV pool and radix cache, stepping in lockstep)"
                       : r.multinode ? kMultinodeRouterNote
                                     : ": the router is not modelled; the plan and --dry-run see one engine"));
      if (en.has("kv-p2p-transfer")) {
        if (!r.multinode) en["kv-p2p-transfer"].fail("only valid with multinode: true");
        notes.add("kv-p2p-transfer", en["kv-p2p-transfer"].path(),
                  en.get<std::string>("kv-p2p-transfer", "a string") +
                      ": --dry-run sends the KV over the hardware spec's kv_transfer_bandwidth_one_way, not this backend's own costs");
      }
      if (e.kv_offloading != "none" && e.kv_offloading != "dram")
        en["kv-offloading"].fail("'" + e.kv_offloading + "' is not none or dram");
      if (e.kv_offloading == "dram") {
        if (!en.has("kv-offload-backend")) en["kv-offload-backend"].fail("required with kv-offloading: dram");
        auto kb = en["kv-offload-backend"];
        kb.only({"name", "version"});
        e.kv_offload_backend = kb.get<std::string>("name", "a backend name");
        if (!block.dram_utilization) bn["dram-utilization"].fail("required when an entry uses kv-offloading: dram");
        all_hicache = all_hicache && e.kv_offload_backend == "hicache";
        all_vllm_simple = all_vllm_simple && e.kv_offload_backend == "vllm-simple";
        if (e.kv_offload_backend != "hicache") {
          other_backend = e.kv_offload_backend;
          notes.add("kv-offload-backend", kb.path(),
                    "'" + e.kv_offload_backend + "': host offload is planned as SGLang HiCache: the launcher's bytes a "
                    "rank, store policy and block where its table knows them (single-node vLLM launchers, TensorRT-LLM "
                    "options), else page 64 and the Qwen3.5 launcher's per-rank rule");
        }
      } else if (en.has("kv-offload-backend")) {
        en["kv-offload-backend"].fail("only with kv-offloading: dram");
      }
      e.conc_list = read_concs(en);
      block.search_space.push_back(std::move(e));
    }
    r.agentic.push_back(std::move(block));
  }
  // The launcher's API server: vLLM's Rust front end where it exports it.
  if (launcher_uses_rust_frontend(r.framework, r.model_prefix, r.sim_hardware_spec)) {
    r.server_env[sim::kRustFrontendEnv] = "1";
    notes.add("front end", key + ".framework",
              "'vllm': its launcher exports VLLM_USE_RUST_FRONTEND=1, so the server runs (and the prediction "
              "models) vLLM's Rust API server, which templates and tokenizes prompts side by side");
  }
  r.notes = notes.lines();

  // The server command: generated for single-node SGLang and vLLM entries
  // from what the entry gives (the launcher's derived values as in a recipe);
  // InferenceX's launchers (benchmarks/single_node/agentic/*.sh) add tuned
  // flags (quantization backends, KV dtype, attention backend) it does not say.
  if (r.multinode) {
    r.server_missing = r.source + ": a multinode entry (" + r.framework +
                       "): no server command is generated; a measured sweep runs single-node entries only";
  } else if (r.framework == "sglang" && all_hicache) {
    r.server_command =
        "python3 -m sglang.launch_server --model-path {model} --host 127.0.0.1 --port {port} --trust-remote-code "
        "{parallel_args} --mem-fraction-static {mem_fraction_static} --max-running-requests {max_running_requests} "
        "--cuda-graph-max-bs {cuda_graph_max_bs} --max-prefill-tokens 16384 --chunked-prefill-size 16384 {spec_args} "
        "{hicache_args} --enable-metrics --enable-cache-report";
    r.server_env["SGLANG_TIMEOUT_KEEP_ALIVE"] = "1800";
  } else if (r.framework == "vllm" && all_vllm_simple) {
    r.command_flavor = "vllm";
    r.server_command =
        "vllm serve {model} --host 127.0.0.1 --port {port} --trust-remote-code {parallel_args} "
        "--gpu-memory-utilization {mem_fraction_static} --max-num-seqs {max_running_requests} "
        "--enable-prefix-caching {spec_args} {hicache_args}";
    // The launcher's attention kernel, where it chooses one (step time:
    // vLLM's Triton unified attention walks contexts serially; the
    // prediction takes the drafter's from launcher_attention_backend).
    if (const auto attention = launcher_attention_backend(r.framework, r.model_prefix, r.sim_hardware_spec);
        !attention.target.empty())
      r.server_command += " --attention-backend " + attention.target;
  } else {
    r.server_missing = r.source + ": no server command is generated for framework '" + r.framework + "'" +
                       (r.framework == "sglang" || r.framework == "vllm"
                            ? " with kv-offload-backend '" + other_backend + "'"
                            : std::string()) +
                       " (only sglang with hicache and vllm with vllm-simple); write a recipe with server.command";
  }
  return r;
}

Recipe load_master_entry(const std::string& file, const std::string& key) { return MasterConfig(file).entry(key); }

}  // namespace agentperf::recipe
