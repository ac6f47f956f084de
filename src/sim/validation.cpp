#include "sim/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/command_line.h"
#include "common/error.h"
#include "common/json_reader.h"
#include "metrics/record_metrics.h"
#include "metrics/stats.h"
#include "sim/builtin_specs.h"
#include "sim/engine.h"
#include "sim/predictor.h"

namespace agentperf::sim {
namespace {

// The fraction a point's launch command (its `key` string) passes to
// `flag`; absent when the command does not name the flag. No fraction in
// (0, 1] after it is the data's error, named.
std::optional<double> flag_fraction(const JsonReader& point, const char* key, const std::string& flag) {
  const auto value = command_flag_value(point.string_or(key, ""), flag);
  if (!value) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(value->c_str(), &end);
  if (value->empty() || *end != '\0' || !(v > 0 && v <= 1))
    point.fail(key, flag + " must be followed by a fraction in (0, 1], not '" + *value + "'");
  return v;
}

}  // namespace

const std::vector<std::string>& validation_metric_names() {
  static const std::vector<std::string> m = {
      "tpot_ms_mean", "tpot_ms_median", "itl_ms_mean", "itl_ms_median", "ttft_ms_mean", "ttft_ms_median",
      "ttft_ms_p95", "output_tokens_per_s", "output_tokens_per_s_per_gpu", "total_tokens_per_s",
      "total_tokens_per_s_per_gpu"};
  return m;
}

namespace {
double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return percentile_sorted(v, 50);
}

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

double metric_of(const std::string& metric, const std::vector<RequestRecord>& records, int tp) {
  std::vector<double> tpot, gaps, ttft;
  double out_tokens = 0, all_tokens = 0;
  std::int64_t first_start = 0, last_end = 0;
  bool any = false;
  for (const auto& r : records) {
    if (r.error || r.phase != Phase::profiling) continue;
    const RecordMetrics m = compute_metrics(r);
    if (m.ttft_ms) ttft.push_back(*m.ttft_ms);
    if (m.itl_ms) tpot.push_back(*m.itl_ms);
    gaps.insert(gaps.end(), m.inter_chunk_ms.begin(), m.inter_chunk_ms.end());
    const double osl = static_cast<double>(m.osl.value_or(0));
    out_tokens += osl;
    all_tokens += osl + static_cast<double>(m.isl.value_or(0));
    if (!any || r.start_ns < first_start) first_start = r.start_ns;
    last_end = std::max(last_end, r.end_ns);
    any = true;
  }
  const double seconds = any ? static_cast<double>(last_end - first_start) / 1e9 : 0.0;
  if (metric == "tpot_ms_mean") return mean_of(tpot);
  if (metric == "tpot_ms_median") return median_of(tpot);
  if (metric == "itl_ms_mean") return mean_of(gaps);
  if (metric == "itl_ms_median") return median_of(gaps);
  if (metric == "ttft_ms_mean") return mean_of(ttft);
  if (metric == "ttft_ms_median") return median_of(ttft);
  if (metric == "ttft_ms_p95") {
    std::sort(ttft.begin(), ttft.end());
    return ttft.empty() ? 0 : percentile_sorted(ttft, 95);
  }
  if (seconds <= 0) return 0;
  if (metric == "output_tokens_per_s") return out_tokens / seconds;
  if (metric == "output_tokens_per_s_per_gpu") return out_tokens / seconds / std::max(1, tp);
  if (metric == "total_tokens_per_s") return all_tokens / seconds;
  if (metric == "total_tokens_per_s_per_gpu") return all_tokens / seconds / std::max(1, tp);
  throw UserError("validation metric '" + metric + "' is not known");
}

ValidationSet load_validation_set(const std::string& name_or_path) {
  nlohmann::json j;
  ValidationSet set;
  if (name_or_path == "builtin") {
    const auto& b = builtin_validation_json();
    auto it = b.find("points");
    if (it == b.end()) throw UserError("this build has no built-in validation set (data/validation/points.json)");
    j = nlohmann::json::parse(it->second);
    set.source = "built-in validation set (data/validation/points.json)";
  } else {
    if (!std::filesystem::exists(name_or_path)) throw UserError("validation set '" + name_or_path + "': no such file");
    std::ifstream in(name_or_path);
    j = parse_json(in, name_or_path);
    set.source = name_or_path;
  }
  const JsonReader f(j, set.source);
  f.reject_unknown_keys({"schema", "notes", "assumed_input_tokens", "setups", "points"});
  set.assumed_input_tokens = f.integer_or("assumed_input_tokens", 512, JsonRange::between(1, 10000000));
  if (f.has("setups")) {
    const JsonReader s = f.object("setups");
    for (const auto& [key, value] : s.entries()) set.setups[key] = value.string("");
  }
  const JsonReader pts = f.array("points", true);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const JsonReader p = pts.at(i);
    p.reject_unknown_keys({"id", "split", "kind", "engine", "engine_version", "model", "hf_model", "precision", "gpu",
                           "num_gpus", "tp", "ep", "flags", "load", "setup", "kv_dtype_bytes", "metric", "value", "source",
                           "source_detail", "retrieved", "notes", "excluded", "speculative"});
    ValidationPoint v;
    v.id = p.string("id");
    v.split = p.string("split");
    if (v.split != "fit" && v.split != "held_out") p.fail("split", "must be \"fit\" or \"held_out\"");
    // Points that name no setup share one, so a fit never gives each of
    // them costs of its own.
    v.setup = p.string_or("setup", "unnamed");
    if (p.has("setup") && !set.setups.count(v.setup)) p.fail("setup", "names no entry of the set's \"setups\"");
    v.kind = p.string("kind");
    v.engine = p.string("engine");
    if (v.engine != "vllm" && v.engine != "sglang") p.fail("engine", "must be vllm or sglang (the schedulers the simulator has)");
    v.engine_version = p.string_or("engine_version", "");
    v.model = p.string("model");
    v.gpu = p.string("gpu");
    v.tp = p.integer_or("tp", 1, JsonRange::between(1, 64));
    v.kv_dtype_bytes = p.integer_or("kv_dtype_bytes", 2, JsonRange::between(1, 4));
    v.mem_fraction_static = flag_fraction(p, "flags", "--mem-fraction-static");
    v.flags = p.string_or("flags", "");
    if (p.has("speculative")) {
      const JsonReader sp = p.object("speculative");
      sp.reject_unknown_keys({"accept_length", "num_steps", "num_draft_tokens"});
      v.spec_num_steps = sp.integer_or("num_steps", 3, JsonRange::between(1, 16));
      v.spec_num_draft_tokens = sp.integer_or("num_draft_tokens", v.spec_num_steps + 1, JsonRange::between(1, 32));
      v.spec_accept_length = sp.number("accept_length", JsonRange::between(1, v.spec_num_steps + 1));
    }
    const JsonReader load = p.object("load");
    load.reject_unknown_keys({"concurrency", "input_tokens", "output_tokens", "num_prompts", "prefix_tokens",
                              "input_tokens_stddev", "output_tokens_stddev", "notes"});
    v.concurrency = load.integer("concurrency", JsonRange::between(1, 100000));
    if (load.has("input_tokens") && !load.node()["input_tokens"].is_null())
      v.input_tokens = load.integer("input_tokens", JsonRange::between(1, 10000000));
    v.output_tokens = load.integer("output_tokens", JsonRange::between(1, 10000000));
    if (load.has("num_prompts")) v.num_prompts = load.integer("num_prompts", JsonRange::between(1, 1000000));
    v.prefix_tokens = load.integer_or("prefix_tokens", 0, JsonRange::between(0, 10000000));
    v.input_tokens_stddev = load.number_or("input_tokens_stddev", 0, JsonRange::between(0, 10000000));
    v.output_tokens_stddev = load.number_or("output_tokens_stddev", 0, JsonRange::between(0, 10000000));
    if (v.prefix_tokens > 0 && (!v.input_tokens || v.prefix_tokens >= *v.input_tokens))
      load.fail("prefix_tokens", "must be below input_tokens (the prefix is part of the input)");
    if (v.prefix_tokens > 0 && v.input_tokens_stddev > 0)
      load.fail("input_tokens_stddev", "must be 0 with a shared prefix (a spread input could fall below the prefix)");
    v.metric = p.string("metric");
    if (std::find(validation_metric_names().begin(), validation_metric_names().end(), v.metric) == validation_metric_names().end()) {
      std::string list;
      for (const auto& m : validation_metric_names()) list += (list.empty() ? "" : ", ") + m;
      p.fail("metric", "must be one of " + list);
    }
    v.value = p.number("value", JsonRange::positive());
    v.source = p.string("source");
    v.excluded = p.string_or("excluded", "");
    for (const auto& other : set.points)
      if (other.id == v.id) p.fail("id", "duplicates an earlier point's id");
    set.points.push_back(std::move(v));
  }
  return set;
}

double predict_metric(const ModelSpec& model, const HardwareSpec& hw, const EngineConfig& cfg,
                      const BenchmarkShape& shape) {
  Engine engine(model, hw, cfg);
  PredictConfig pc;
  auto& load = pc.load;
  load.prompt_format = PromptFormat::token_ids;
  load.concurrency = shape.concurrency;
  load.isl = {static_cast<double>(shape.input_tokens), shape.input_tokens_stddev, 1};
  load.osl = {static_cast<double>(shape.output_tokens), shape.output_tokens_stddev, 1};
  if (shape.prefix_tokens > 0) {
    load.prefix_length = shape.prefix_tokens;
    load.num_prefix_groups = 1;
  }
  // Enough requests for the batch to stay full for most of the run.
  load.request_count = shape.num_prompts ? *shape.num_prompts : std::max<std::int64_t>(2LL * shape.concurrency, 4);
  load.warmup_request_count = shape.warmup_prompts;
  load.seed = 1;
  const PredictResult r = predict(engine, pc);
  return metric_of(shape.metric, r.run.records, cfg.tp);
}

ValidationUnknowns ValidationUnknowns::from_named(const std::map<std::string, double>& named) {
  ValidationUnknowns u;
  for (const auto& [k, v] : named) {
    const auto colon = k.find(':');
    const std::string kind = k.substr(0, colon), what = colon == std::string::npos ? "" : k.substr(colon + 1);
    if (kind == "input_tokens") u.input_tokens[what] = v;
    else if (kind == "hbm_efficiency") u.hbm_efficiency[what] = v;
    else if (const auto c2 = what.rfind(':'); kind == "setup_cost" && c2 != std::string::npos)
      u.setup_costs[what.substr(0, c2)][what.substr(c2 + 1)] = v;
    else if (kind == "hardware" && c2 != std::string::npos)
      u.hardware[what.substr(0, c2)][what.substr(c2 + 1)] = v;
    else
      throw std::invalid_argument("validation unknown '" + k +
                                  "' is not input_tokens:<setup>, hbm_efficiency:<gpu>, setup_cost:<setup>:<coefficient> "
                                  "or hardware:<platform>:<coefficient>");
  }
  return u;
}

nlohmann::ordered_json ValidationUnknowns::to_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["input_tokens"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : input_tokens) j["input_tokens"][k] = std::lround(v);
  j["hbm_efficiency"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : hbm_efficiency) j["hbm_efficiency"][k] = v;
  j["setup_costs"] = nlohmann::ordered_json::object();
  for (const auto& [s, coefs] : setup_costs)
    for (const auto& [c, v] : coefs) j["setup_costs"][s][c] = v;
  return j;
}

ValidationUnknowns validation_unknowns_of_profile(const std::string& name_or_path) {
  ValidationUnknowns u;
  const auto doc = engine_profile_document(name_or_path);
  if (!doc) return u;  // roofline
  const nlohmann::json& j = doc->json;
  const auto fit = j.find("fit");
  if (fit == j.end() || !fit->is_object()) return u;
  const auto vu = fit->find("validation_unknowns");
  if (vu == fit->end()) return u;
  const JsonReader r(*vu, doc->source + ": fit.validation_unknowns");
  r.reject_unknown_keys({"input_tokens", "hbm_efficiency", "setup_costs"});
  if (r.has("input_tokens")) {
    const JsonReader t = r.object("input_tokens");
    for (const auto& [k, v] : t.entries()) u.input_tokens[k] = v.number("", JsonRange::between(1, 10000000));
  }
  if (r.has("hbm_efficiency")) {
    const JsonReader h = r.object("hbm_efficiency");
    for (const auto& [k, v] : h.entries()) u.hbm_efficiency[k] = v.number("", JsonRange::between(0.01, 1.0));
  }
  if (r.has("setup_costs")) {
    for (const auto& [setup, coefs] : r.object("setup_costs").entries())
      for (const auto& [name, v] : coefs.entries()) {
        const auto names = EngineCosts::names();
        if (std::find(names.begin(), names.end(), name) == names.end())
          coefs.fail(name, "is not an engine cost coefficient");
        const auto [lo, hi] = EngineCosts::range(name);
        u.setup_costs[setup][name] = v.number("", JsonRange::between(lo, hi));
      }
  }
  return u;
}

int input_tokens_of(const ValidationSet& set, const ValidationPoint& p, const ValidationUnknowns& u) {
  if (p.input_tokens) return *p.input_tokens;
  if (auto it = u.input_tokens.find(p.setup); it != u.input_tokens.end())
    return static_cast<int>(std::lround(it->second));
  return set.assumed_input_tokens;
}

double predict_point(const ValidationSet& set, const ValidationPoint& p, const EngineCosts& costs,
                     const ValidationUnknowns& unknowns) {
  const auto& hbm_efficiency = unknowns.hbm_efficiency;
  ModelSpec model = load_model_spec(p.model);
  model.kv_dtype_bytes = p.kv_dtype_bytes;
  HardwareSpec hw = load_hardware_spec(p.gpu);
  if (auto it = hbm_efficiency.find(p.gpu); it != hbm_efficiency.end()) hw.eff_hbm = it->second;
  if (auto it = unknowns.hardware.find(hw.platform); it != unknowns.hardware.end())
    for (const auto& [name, v] : it->second) set_hardware_coefficient(hw, name, v);
  EngineConfig cfg;
  cfg.tp = p.tp;
  cfg.costs = costs;
  if (auto it = unknowns.setup_costs.find(p.setup); it != unknowns.setup_costs.end())
    for (const auto& [name, v] : it->second) cfg.costs.at(name) = v;
  if (p.engine == "vllm") {
    // vllm serve's defaults on >= 70 GiB GPUs (vllm/engine/arg_utils.py):
    // 8192 batched tokens, 1024 sequences, KV at 90 % of memory, CUDA
    // graphs up to batch 512, 16-token blocks.
    cfg.scheduler = SchedulerKind::vllm;
    cfg.max_num_batched_tokens = 8192;
    cfg.max_running_requests = 1024;
    cfg.mem_fraction_static = 0.9;
    cfg.cuda_graph_max_bs = 512;
    cfg.page_size = 16;
  }
  if (p.spec_accept_length > 0) {
    cfg.spec.enabled = true;
    cfg.spec.num_steps = p.spec_num_steps;
    cfg.spec.num_draft_tokens = p.spec_num_draft_tokens;
    cfg.spec.accept_length = p.spec_accept_length;
  }
  if (p.engine == "sglang") {
    // sglang.launch_server's defaults by GPU memory (ServerArgs'
    // _handle_gpu_memory_settings, python/sglang/srt/server_args.py in
    // github.com/sgl-project/sglang, late-2025 releases): below 160 GiB
    // (H100, H200) chunked prefill 8k tokens and CUDA graphs up to batch 256
    // at TP under 4, else 512; from 160 GiB (B200) 16k and 512. The engine
    // config's own default (graphs to 64) is the recipes' --cuda-graph-max-bs.
    // The memory fraction is the launch's own, else what SGLang derives
    // from those (DP attention, which the step-level set does not model,
    // is left out of it).
    const bool large = hw.hbm_bytes >= 160.0 * (1ull << 30);
    cfg.chunked_prefill_size = large ? 16384 : 8192;
    cfg.cuda_graph_max_bs = large || p.tp >= 4 ? 512 : 256;
  }
  // The launch command's own scheduling flags where it gives them (e.g.
  // InferenceX's AMD launchers: --scheduler-recv-interval 30,
  // --chunked-prefill-size 131072, --cuda-graph-max-bs $CONC, the
  // launcher's concurrency), then what SGLang derives from them.
  std::string flags = p.flags;
  for (std::size_t at; (at = flags.find("$CONC")) != std::string::npos;)
    flags.replace(at, 5, std::to_string(p.concurrency));
  apply_scheduling_flags(flags, cfg);
  if (const int n = command_flag_positive_int(flags, "--cuda-graph-max-bs")) cfg.cuda_graph_max_bs = n;
  if (const int n = command_flag_positive_int(flags, "--max-running-requests")) cfg.max_running_requests = n;
  if (p.engine == "sglang") {
    cfg.mem_fraction_static = p.mem_fraction_static.value_or(sglang_default_mem_fraction_static(
        hw.hbm_usable_bytes, p.tp, cfg.chunked_prefill_size, cfg.cuda_graph_max_bs, 1, cfg.spec.enabled));
  }
  BenchmarkShape shape;
  shape.concurrency = p.concurrency;
  shape.input_tokens = input_tokens_of(set, p, unknowns);
  shape.output_tokens = p.output_tokens;
  shape.prefix_tokens = p.prefix_tokens;
  shape.input_tokens_stddev = p.input_tokens_stddev;
  shape.output_tokens_stddev = p.output_tokens_stddev;
  shape.num_prompts = p.num_prompts;
  shape.metric = p.metric;
  return predict_metric(model, hw, cfg, shape);
}

}  // namespace agentperf::sim
