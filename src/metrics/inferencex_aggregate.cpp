#include "metrics/inferencex_aggregate.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "common/bool_word.h"
#include "metrics/inferencex_server_metrics.h"
#include "metrics/metric_table.h"
#include "metrics/record_metrics.h"

namespace agentperf {
namespace {
using json = nlohmann::ordered_json;

// statistics.mean / pstdev work in exact fractions; a compensated sum in
// long double rounds the same way for any realistic run.
double py_mean(const std::vector<double>& v) {
  long double sum = 0, c = 0;
  for (double x : v) {
    const long double t = sum + x;
    c += std::fabs(static_cast<double>(sum)) >= std::fabs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
  }
  return static_cast<double>((sum + c) / static_cast<long double>(v.size()));
}
double py_pstdev(const std::vector<double>& v) {
  if (v.size() <= 1) return 0.0;
  long double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<long double>(v.size());
  long double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return static_cast<double>(std::sqrt(ss / static_cast<long double>(v.size())));
}
// aggregation_common.percentile
double py_percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  const double k = static_cast<double>(sorted.size() - 1) * (p / 100);
  const auto f = static_cast<std::size_t>(k);
  const std::size_t c = f + 1;
  if (c >= sorted.size()) return sorted[f];
  return sorted[f] + (k - static_cast<double>(f)) * (sorted[c] - sorted[f]);
}

// The block stats_for and _distribution share: mean, p50/75/90/95, std.
json mean_percentiles_std(json mean, std::vector<double> v) {
  const double sd = py_pstdev(v);
  std::sort(v.begin(), v.end());
  return json{{"mean", std::move(mean)},
              {"p50", py_percentile(v, 50)},
              {"p75", py_percentile(v, 75)},
              {"p90", py_percentile(v, 90)},
              {"p95", py_percentile(v, 95)},
              {"std", sd}};
}

// aggregation_common.stats_for, nested (_nest_stats): {} when empty.
json stats_for(std::vector<double> v) {
  if (v.empty()) return json::object();
  const double mean = py_mean(v);
  return mean_percentiles_std(mean, std::move(v));
}

// request_metrics._distribution over ints: statistics.mean of ints is an
// int when exact.
json distribution(const std::vector<std::int64_t>& ints) {
  if (ints.empty()) return json::object();
  std::int64_t sum = 0;
  std::vector<double> v;
  for (auto x : ints) {
    sum += x;
    v.push_back(static_cast<double>(x));
  }
  const auto n = static_cast<std::int64_t>(ints.size());
  json mean = sum % n == 0 ? json(sum / n) : json(static_cast<double>(sum) / static_cast<double>(n));
  return mean_percentiles_std(std::move(mean), std::move(v));
}

// request_metrics._interactivity_stats: 1 / the latency statistic, std of
// the per-request inverses.
json interactivity_stats(const json& latency_stats, const std::vector<double>& values) {
  json out = json::object();
  for (const char* k : {"mean", "p50", "p75", "p90", "p95"})
    if (latency_stats.contains(k) && latency_stats[k].get<double>() > 0) out[k] = 1.0 / latency_stats[k].get<double>();
  std::vector<double> inv;
  for (double x : values)
    if (x > 0) inv.push_back(1.0 / x);
  if (!inv.empty()) out["std"] = py_pstdev(inv);
  return out;
}

// request_metrics._error_category over the error object record_to_json writes.
std::string error_category(const ErrorInfo& e) {
  if (!e.type.empty()) return e.type;
  if (e.code) return std::to_string(*e.code);
  std::string m = e.message;
  const auto b = m.find_first_not_of(" \t\n\r\v\f");
  if (b == std::string::npos) return "unknown";
  m = m.substr(b);
  m = m.substr(0, m.find_first_of("\n\r\v\f"));
  m = m.substr(0, m.find(':'));
  if (m.empty()) return "unknown";
  std::size_t chars = 0, i = 0;
  for (; i < m.size(); ++i)
    if ((static_cast<unsigned char>(m[i]) & 0xC0) != 0x80 && ++chars > 120) break;
  return m.substr(0, i);
}

bool finite_pos(const std::optional<double>& x) { return x && std::isfinite(*x) && *x > 0; }

}  // namespace

InferenceXAggregate inferencex_aggregate(const std::vector<RequestRecord>& records, const InferenceXInputs& in) {
  InferenceXAggregate out;
  std::vector<double> ttft, e2el, itl, full_itl, e2el_per_osl;
  std::vector<std::int64_t> isl, osl, expected;
  std::int64_t ok = 0, errors_profiled = 0, warmup = 0, errors_all = 0;
  std::vector<std::int64_t> starts_ns, ends_ns;
  double sum_isl_usage = 0, sum_cached = 0;
  bool any_cached = false;
  json categories = json::object();
  for (const auto& r : records) {
    const bool is_warmup = r.phase != Phase::profiling;
    if (is_warmup) ++warmup;
    if (!r.ok()) {
      ++errors_all;
      const std::string cat = error_category(*r.error);
      categories[cat] = categories.value(cat, 0) + 1;
      if (!is_warmup) ++errors_profiled;
    }
    if (!r.ok() || is_warmup) continue;
    ++ok;
    const auto m = compute_metrics(r);
    if (finite_pos(m.ttft_ms)) ttft.push_back(*m.ttft_ms / 1000.0);
    if (finite_pos(m.request_latency_ms)) e2el.push_back(*m.request_latency_ms / 1000.0);
    if (finite_pos(m.itl_ms)) itl.push_back(*m.itl_ms / 1000.0);
    if (finite_pos(m.full_itl_ms)) full_itl.push_back(*m.full_itl_ms / 1000.0);
    if (finite_pos(m.request_latency_ms) && m.osl && *m.osl > 0)
      e2el_per_osl.push_back(*m.request_latency_ms / 1000.0 / static_cast<double>(*m.osl));
    if (m.isl) isl.push_back(*m.isl);
    if (m.osl) osl.push_back(*m.osl);
    if (in.expected_outputs) {
      const std::string trace_id = r.conversation_id.substr(0, r.conversation_id.find("::"));
      auto it = in.expected_outputs->find(trace_id);
      if (!r.conversation_id.empty() && it != in.expected_outputs->end() && r.turn_index >= 0 &&
          static_cast<std::size_t>(r.turn_index) < it->second.size())
        expected.push_back(it->second[static_cast<std::size_t>(r.turn_index)]);
    }
    // request_start_ns / request_end_ns as profile_export.jsonl has them.
    if (r.start_wall_ns) starts_ns.push_back(r.start_wall_ns);
    if (r.end_ns) ends_ns.push_back(r.start_wall_ns + (r.end_ns - r.start_ns));
    if (m.isl) sum_isl_usage += static_cast<double>(*m.isl);
    if (r.usage_cached_tokens) {
      any_cached = true;
      sum_cached += static_cast<double>(*r.usage_cached_tokens);
    }
  }
  out.successful = ok;
  out.request_accounting = {{"records_total", static_cast<std::int64_t>(records.size())},
                            {"records_profiled", ok},
                            {"records_dropped_total", static_cast<std::int64_t>(records.size()) - ok},
                            {"records_warmup_dropped", warmup},
                            {"records_error_dropped", errors_all},
                            {"error_categories", categories}};

  // compute_qps_stats: full 1 s windows from the first end; the tail
  // window is dropped.
  json qps = json::object();
  if (ends_ns.size() >= 2) {
    std::vector<double> ends;
    for (auto e : ends_ns) ends.push_back(static_cast<double>(e) / 1e9);
    std::sort(ends.begin(), ends.end());
    const double duration = ends.back() - ends.front();
    if (duration > 0) {
      const double window = 1.0;
      std::vector<double> values;
      double current = ends.front();
      while (current + window <= ends.back()) {
        const auto lo = std::lower_bound(ends.begin(), ends.end(), current);
        const auto hi = std::lower_bound(ends.begin(), ends.end(), current + window);
        values.push_back(static_cast<double>(hi - lo) / window);
        current += window;
      }
      qps = {{"window_seconds", window}, {"samples", values.size()}};
      if (!values.empty()) {
        const json st = stats_for(values);
        for (const auto& [k, v] : st.items()) qps[k] = v;
      } else {
        qps["mean"] = static_cast<double>(ends.size()) / duration;
      }
    }
  }

  json latency;
  const json itl_stats = stats_for(itl), e2e_ratio_stats = stats_for(e2el_per_osl), full_stats = stats_for(full_itl);
  latency["ttft"] = stats_for(ttft);
  latency["e2el"] = stats_for(e2el);
  latency["itl"] = itl_stats;
  latency["tpot"] = itl_stats;
  latency["intvty"] = interactivity_stats(itl_stats, itl);
  latency["e2e_norm_intvty"] = interactivity_stats(e2e_ratio_stats, e2el_per_osl);
  latency["full_response_itl"] = full_stats;
  latency["full_response_intvty"] = interactivity_stats(full_stats, full_itl);

  json tokens = {{"input", distribution(isl)}, {"output_actual", distribution(osl)},
                 {"output_expected", distribution(expected)}};

  // compute_throughput_stats
  json throughput = json::object();
  if (!starts_ns.empty() && !ends_ns.empty()) {
    const std::int64_t diff =
        *std::max_element(ends_ns.begin(), ends_ns.end()) - *std::min_element(starts_ns.begin(), starts_ns.end());
    const double duration = static_cast<double>(diff) / 1e9;
    if (duration > 0) {
      std::int64_t total_in = 0, total_out = 0;
      for (auto x : isl) total_in += x;
      for (auto x : osl) total_out += x;
      out.input_tput = static_cast<double>(total_in) / duration;
      out.output_tput = static_cast<double>(total_out) / duration;
      out.total_tput = static_cast<double>(total_in + total_out) / duration;
      throughput = {{"input", {{"tokens_per_second", *out.input_tput}}},
                    {"output", {{"tokens_per_second", *out.output_tput}}},
                    {"total", {{"tokens_per_second", *out.total_tput}}},
                    {"duration_seconds", duration},
                    {"per_gpu", json::object()}};
    }
  }

  // compute_cache_stats: sum / count of the aggregate's theoretical_prefix_cache_hit.
  const std::optional<double> theoretical =
      in.theoretical_total_blocks > 0 ? std::optional<double>(static_cast<double>(in.theoretical_hit_blocks) /
                                                              static_cast<double>(in.theoretical_total_blocks))
                                      : std::nullopt;
  json cache = {{"theoretical_cache_hit_rate", theoretical ? json(*theoretical) : json(nullptr)}};

  out.request_metrics = {{"qps", qps}, {"latency", latency}, {"tokens", tokens}, {"throughput", throughput},
                         {"cache", cache}};

  auto srv = inferencex_server_metrics(in.server_metrics ? *in.server_metrics : nlohmann::json(), in.framework, isl, osl,
                                       static_cast<std::size_t>(ok));
  out.server_metrics = srv.nested;
  out.warnings = srv.warnings;

  // The observed hit: Prometheus first (as InferenceX), else the usage
  // cached tokens the server reported; n/a when neither.
  std::optional<double> observed;
  std::string observed_source;
  if (srv.overall_cache_hit_rate) {
    observed = srv.overall_cache_hit_rate;
    observed_source = "prometheus";
  } else if (any_cached && sum_isl_usage > 0) {
    observed = sum_cached / sum_isl_usage;
    observed_source = "usage";
  }

  const int gpus = std::max(1, in.gpus);
  json section;
  section["request_accounting"] = out.request_accounting;
  section["qps"] = qps;
  section["latency"] = latency;
  section["tokens"] = tokens;
  json tp = throughput;
  if (out.total_tput) {
    tp["num_gpus"] = gpus;
    tp["per_gpu"] = {{"total_tput_tps", *out.total_tput / gpus},
                     {"output_tput_tps", *out.output_tput / gpus},
                     {"input_tput_tps", *out.input_tput / gpus}};
  }
  section["throughput"] = tp;
  json sc = cache;
  sc["observed_cache_hit_rate"] = observed ? json(*observed) : json(nullptr);
  sc["observed_cache_hit_source"] = observed ? json(observed_source) : json(nullptr);
  section["cache"] = sc;
  const std::int64_t completed = ok + errors_profiled;
  const double error_rate = completed > 0 ? static_cast<double>(errors_profiled) / static_cast<double>(completed) : 0.0;
  const bool valid = ok > 0 && error_rate <= in.max_error_rate;
  section["validity"] = {{"error_rate", error_rate}, {"max_error_rate", in.max_error_rate}, {"valid", valid}};
  section["server_metrics"] = out.server_metrics;
  out.json = std::move(section);

  InferenceXHeadline& h = out.headline;
  h.total_tput_per_gpu = out.total_tput.value_or(0) / gpus;
  h.output_tput_per_gpu = out.output_tput.value_or(0) / gpus;
  auto stat = [](const json& j, const char* k) { return j.contains(k) ? j[k].get<double>() : 0.0; };
  h.intvty_p50 = stat(latency["intvty"], "p50");
  h.e2e_norm_intvty_p50 = stat(latency["e2e_norm_intvty"], "p50");
  h.ttft_p50_s = stat(latency["ttft"], "p50");
  h.e2el_p50_s = stat(latency["e2el"], "p50");
  h.observed_cache_hit = observed;
  h.theoretical_cache_hit = theoretical.value_or(0.0);
  h.records_profiled = ok;
  h.records_error = errors_profiled;
  h.valid = valid;
  return out;
}

json inferencex_round_floats(const json& j) {
  if (j.is_number_float()) {
    const double x = j.get<double>();
    if (!std::isfinite(x)) return j;
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.5f", x);  // correctly rounded, ties to even on the exact value
    const double r = std::strtod(buf, nullptr);
    if (std::fabs(r) >= 1 && r == std::floor(r) && std::fabs(r) < 9.2e18) return json(static_cast<std::int64_t>(r));
    return json(r);
  }
  if (j.is_object()) {
    json out = json::object();
    for (const auto& [k, v] : j.items()) out[k] = inferencex_round_floats(v);
    return out;
  }
  if (j.is_array()) {
    json out = json::array();
    for (const auto& v : j) out.push_back(inferencex_round_floats(v));
    return out;
  }
  return j;
}

const std::vector<std::string>& inferencex_env_names() {
  static const std::vector<std::string> names = {
      "RESULT_FILENAME", "RUNNER_TYPE", "CONC", "IMAGE", "RECIPE_FINGERPRINT", "MODEL", "MODEL_PREFIX", "FRAMEWORK",
      "PRECISION", "SPEC_DECODING", "DISAGG", "IS_MULTINODE", "TP", "EP_SIZE", "DP_ATTENTION", "PP_SIZE", "DCP_SIZE",
      "PCP_SIZE", "KV_OFFLOADING", "KV_OFFLOAD_BACKEND", "KV_OFFLOAD_BACKEND_METADATA", "TOTAL_CPU_DRAM_GB",
      "ROUTER_METADATA", "KV_P2P_TRANSFER", "PREFILL_NUM_WORKERS", "PREFILL_TP", "PREFILL_PP_SIZE", "PREFILL_DCP_SIZE",
      "PREFILL_PCP_SIZE", "PREFILL_EP", "PREFILL_DP_ATTN", "PREFILL_HARDWARE", "DECODE_NUM_WORKERS", "DECODE_TP",
      "DECODE_PP_SIZE", "DECODE_DCP_SIZE", "DECODE_PCP_SIZE", "DECODE_EP", "DECODE_DP_ATTN", "DECODE_HARDWARE"};
  return names;
}

InferenceXEnv inferencex_env_from_process() {
  InferenceXEnv env;
  for (const auto& n : inferencex_env_names())
    if (const char* v = std::getenv(n.c_str())) env[n] = v;
  return env;
}

namespace {

struct Env {
  const InferenceXEnv& e;
  // os.environ.get(name, default)
  std::string str(const std::string& n, const std::string& def = "") const {
    auto it = e.find(n);
    return it == e.end() ? def : it->second;
  }
  bool has_value(const std::string& n) const {
    auto it = e.find(n);
    return it != e.end() && !it->second.empty();
  }
  // env_int: unset or "" -> default, else int(value)
  std::int64_t integer(const std::string& n, std::int64_t def = 0) const {
    if (!has_value(n)) return def;
    const std::string v = str(n);
    try {
      std::size_t used = 0;
      auto b = v.find_first_not_of(" \t");
      auto x = std::stoll(v.substr(b == std::string::npos ? 0 : b), &used);
      if (b == std::string::npos || v.substr(b + used).find_first_not_of(" \t\n") != std::string::npos) throw 0;
      return x;
    } catch (...) {
      throw std::invalid_argument(n + " must be an integer, not '" + v + "'");
    }
  }
  // env_bool: set and not a true word (common/bool_word.h) is false
  bool boolean(const std::string& n, bool def = false) const {
    if (!has_value(n)) return def;
    return parse_bool_word(str(n)).value_or(false);
  }
};

// optional_component_metadata / optional_kv_offload_backend_metadata
json metadata_json(const Env& env, const std::string& name, bool version_optional) {
  if (!env.e.count(name)) return nullptr;
  const std::string raw = env.str(name);
  if (raw.empty() || raw == "null") return nullptr;
  json m = json::parse(raw, nullptr, false);
  if (m.is_discarded()) throw std::invalid_argument(name + " must contain valid JSON");
  auto keys_ok = [&] {
    if (!m.is_object()) return false;
    for (const auto& [k, v] : m.items())
      if (k != "name" && k != "version") return false;
    return version_optional ? m.contains("name") : m.contains("name") && m.contains("version");
  };
  if (!keys_ok())
    throw std::invalid_argument(version_optional ? name + " must contain 'name' and optional 'version'"
                                                 : name + " must contain exactly 'name' and 'version'");
  for (const auto& [k, v] : m.items())
    if (!v.is_string() || v.get<std::string>().empty())
      throw std::invalid_argument(version_optional ? name + " values must be non-empty strings"
                                                   : name + " name and version must be non-empty strings");
  return m;
}

struct GpuShape {
  json fields = json::object();
  std::int64_t num_gpus = 0, tp = 1, ep = 1;
  std::string dp_attention;
};

// process_agentic_result._gpu_shape
GpuShape gpu_shape(const Env& env) {
  GpuShape g;
  g.tp = env.integer("TP", 1);
  g.ep = env.integer("EP_SIZE", 1);
  g.dp_attention = env.str("DP_ATTENTION", "false");
  if (!env.boolean("IS_MULTINODE")) {
    const auto pp = env.integer("PP_SIZE", 1), dcp = env.integer("DCP_SIZE", 1), pcp = env.integer("PCP_SIZE", 1);
    if (pp <= 0 || dcp <= 0 || pcp <= 0)
      throw std::invalid_argument("PP_SIZE, DCP_SIZE, and PCP_SIZE must be positive integers.");
    g.fields = {{"pp", pp}, {"dcp_size", dcp}, {"pcp_size", pcp}};
    g.num_gpus = g.tp * pp * pcp;
    return g;
  }
  const auto p_workers = env.integer("PREFILL_NUM_WORKERS"), p_tp = env.integer("PREFILL_TP"),
             p_pp = env.integer("PREFILL_PP_SIZE", 1), p_dcp = env.integer("PREFILL_DCP_SIZE", 1),
             p_pcp = env.integer("PREFILL_PCP_SIZE", 1), p_ep = env.integer("PREFILL_EP", 1);
  const std::string p_dpa = env.str("PREFILL_DP_ATTN", "false");
  auto d_workers = env.integer("DECODE_NUM_WORKERS"), d_tp = env.integer("DECODE_TP"),
       d_pp = env.integer("DECODE_PP_SIZE", 1), d_dcp = env.integer("DECODE_DCP_SIZE", 1),
       d_pcp = env.integer("DECODE_PCP_SIZE", 1), d_ep = env.integer("DECODE_EP", 1);
  const std::string d_dpa = env.str("DECODE_DP_ATTN", "false");
  for (auto v : {p_pp, p_dcp, p_pcp, d_pp, d_dcp, d_pcp})
    if (v <= 0) throw std::invalid_argument("Multinode PP, DCP, and PCP sizes must be positive integers.");
  const std::string p_hw = env.str("PREFILL_HARDWARE"), d_hw = env.str("DECODE_HARDWARE");
  if (p_hw.empty() != d_hw.empty())
    throw std::invalid_argument("PREFILL_HARDWARE and DECODE_HARDWARE must be specified together.");
  const auto n_prefill = p_workers * p_tp * p_pp * p_pcp;
  const auto n_decode = d_workers * d_tp * d_pp * d_pcp;
  g.num_gpus = n_prefill + n_decode;
  if (n_decode <= 0) {
    d_tp = 0;
    d_ep = 0;
    d_pp = 1;
    d_dcp = 1;
    d_pcp = 1;
  }
  g.tp = p_tp + d_tp;
  g.ep = std::max(p_ep, d_ep);
  g.dp_attention = env.boolean("PREFILL_DP_ATTN") || env.boolean("DECODE_DP_ATTN") ? "true" : "false";
  g.fields = {{"prefill_num_workers", p_workers}, {"prefill_tp", p_tp},     {"prefill_pp", p_pp},
              {"prefill_dcp_size", p_dcp},        {"prefill_pcp_size", p_pcp}, {"prefill_ep", p_ep},
              {"prefill_dp_attention", p_dpa},    {"num_prefill_gpu", n_prefill}, {"decode_num_workers", d_workers},
              {"decode_tp", d_tp},                {"decode_pp", d_pp},       {"decode_dcp_size", d_dcp},
              {"decode_pcp_size", d_pcp},         {"decode_ep", d_ep},       {"decode_dp_attention", d_dpa},
              {"num_decode_gpu", n_decode}};
  if (!p_hw.empty()) {
    g.fields["prefill_hw"] = p_hw;
    g.fields["decode_hw"] = d_hw;
  }
  return g;
}

}  // namespace

int inferencex_num_gpus(const InferenceXEnv& env) { return static_cast<int>(gpu_shape(Env{env}).num_gpus); }

json inferencex_result(const InferenceXAggregate& ix, const json& aggregate, const InferenceXEnv& e) {
  const Env env{e};
  // _validate_kv_offload_env
  if (!env.has_value("KV_OFFLOADING")) throw std::invalid_argument("Missing required environment variable: KV_OFFLOADING");
  const std::string kv_offloading = env.str("KV_OFFLOADING");
  const std::string backend_name = env.str("KV_OFFLOAD_BACKEND");
  const json backend = metadata_json(env, "KV_OFFLOAD_BACKEND_METADATA", true);
  if (kv_offloading == "none") {
    if (!backend_name.empty() || !backend.is_null())
      throw std::invalid_argument("KV_OFFLOAD_BACKEND must be empty when KV_OFFLOADING=none");
  } else {
    if (backend_name.empty() || backend_name == "none" || backend.is_null())
      throw std::invalid_argument("KV_OFFLOAD_BACKEND is required when KV_OFFLOADING is enabled");
    if (backend["name"].get<std::string>() != backend_name)
      throw std::invalid_argument("KV_OFFLOAD_BACKEND must match KV_OFFLOAD_BACKEND_METADATA.name");
  }
  const GpuShape g = gpu_shape(env);
  json agg;
  agg["hw"] = env.str("RUNNER_TYPE");
  agg["conc"] = env.integer("CONC", 0);
  agg["image"] = env.str("IMAGE");
  agg["recipe_fingerprint"] = env.str("RECIPE_FINGERPRINT");
  agg["model"] = env.str("MODEL");
  agg["infmax_model_prefix"] = env.str("MODEL_PREFIX");
  agg["framework"] = env.str("FRAMEWORK");
  agg["precision"] = env.str("PRECISION");
  agg["spec_decoding"] = env.str("SPEC_DECODING", "none");
  agg["disagg"] = env.boolean("DISAGG");
  agg["scenario_type"] = "agentic-coding";
  agg["is_multinode"] = env.boolean("IS_MULTINODE");
  agg["tp"] = g.tp;
  agg["ep"] = g.ep;
  agg["dp_attention"] = g.dp_attention;
  agg["kv_offloading"] = kv_offloading;
  agg["kv_offload_backend"] = backend;
  agg["allocated_cpu_dram_gb"] = env.integer("TOTAL_CPU_DRAM_GB");
  agg["num_requests_total"] = ix.request_accounting["records_total"];
  agg["num_requests_successful"] = ix.successful;
  agg["request_accounting"] = ix.request_accounting;
  for (const auto& [k, v] : g.fields.items()) agg[k] = v;
  const json router = metadata_json(env, "ROUTER_METADATA", false);
  if (!router.is_null()) agg["router"] = router;
  if (env.has_value("KV_P2P_TRANSFER")) agg["kv_p2p_transfer"] = env.str("KV_P2P_TRANSFER");
  if (aggregate.contains("metadata") && aggregate["metadata"].is_object() && aggregate["metadata"].contains("dataset") &&
      aggregate["metadata"]["dataset"].is_object())
    agg["dataset"] = aggregate["metadata"]["dataset"];
  json rm = ix.request_metrics;
  if (ix.total_tput && g.num_gpus > 0) {
    const auto n = static_cast<double>(g.num_gpus);
    rm["throughput"]["per_gpu"] = {{"total_tput_tps", *ix.total_tput / n},
                                   {"output_tput_tps", ix.output_tput.value_or(0) / n},
                                   {"input_tput_tps", ix.input_tput.value_or(0) / n}};
  }
  agg["request_metrics"] = rm;
  agg["server_metrics"] = ix.server_metrics;
  agg["kv_cache_pool_tokens"] = ix.server_metrics["kv_cache"]["gpu_total_tokens"];
  if (!ix.warnings.empty()) agg["warnings"] = ix.warnings;
  return inferencex_round_floats(agg);
}

}  // namespace agentperf
