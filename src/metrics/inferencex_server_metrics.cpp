#include "metrics/inferencex_server_metrics.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace agentperf {
namespace {

// Not `json`: a unity build puts this file beside export.cpp, whose `json`
// is the ordered kind.
using PlainJson = nlohmann::json;
using ojson = nlohmann::ordered_json;
using Opt = std::optional<double>;
using Filter = std::function<bool(const PlainJson&)>;

ojson opt(Opt v) { return v ? ojson(*v) : ojson(nullptr); }
ojson opt_int(std::optional<std::int64_t> v) { return v ? ojson(*v) : ojson(nullptr); }

// aggregation_common.to_float: numbers (and numeric strings) only.
Opt to_float(const PlainJson& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  if (v.is_string()) {
    try {
      std::size_t used = 0;
      const std::string s = v.get<std::string>();
      const double d = std::stod(s, &used);
      if (used == s.size()) return d;
    } catch (...) {
    }
  }
  return std::nullopt;
}

const PlainJson& metrics_of(const PlainJson& j) {
  static const PlainJson empty = PlainJson::object();
  if (!j.is_object()) return empty;
  auto it = j.find("metrics");
  return it != j.end() && it->is_object() ? *it : empty;
}

std::vector<const PlainJson*> metric_series(const PlainJson& metrics, const std::vector<std::string>& names) {
  std::vector<const PlainJson*> out;
  for (const auto& name : names) {
    auto e = metrics.find(name);
    if (e == metrics.end() || !e->is_object()) continue;
    auto s = e->find("series");
    if (s == e->end() || !s->is_array()) continue;
    for (const auto& x : *s)
      if (x.is_object()) out.push_back(&x);
  }
  return out;
}

using Keys = std::vector<const char*>;
const Keys kCounterKeys = {"total", "sum", "max", "avg"};
const Keys kGaugeKeys = {"max", "avg", "total"};
const Keys kRateGaugeKeys = {"avg", "max", "total"};

Opt series_stat(const PlainJson& series, const Keys& keys) {
  auto st = series.find("stats");
  if (st == series.end() || !st->is_object()) return std::nullopt;
  for (const char* k : keys) {
    auto v = st->find(k);
    if (v == st->end()) continue;
    if (auto f = to_float(*v)) return f;
  }
  return std::nullopt;
}

Opt sum_stat(const PlainJson& m, const std::vector<std::string>& names, const Keys& keys = kCounterKeys,
             const Filter& filter = nullptr) {
  double total = 0;
  bool found = false;
  for (const PlainJson* s : metric_series(m, names)) {
    if (filter && !filter(*s)) continue;
    if (auto v = series_stat(*s, keys)) {
      total += *v;
      found = true;
    }
  }
  return found ? Opt(total) : std::nullopt;
}

Opt gauge_stat(const PlainJson& m, const std::vector<std::string>& names, const Keys& keys = kGaugeKeys,
               const std::string& combine = "max", const Filter& filter = nullptr) {
  std::vector<double> values;
  for (const PlainJson* s : metric_series(m, names)) {
    if (filter && !filter(*s)) continue;
    if (auto v = series_stat(*s, keys)) values.push_back(*v);
  }
  if (values.empty()) return std::nullopt;
  if (combine == "avg") {
    long double sum = 0;
    for (double v : values) sum += v;
    return static_cast<double>(sum / static_cast<long double>(values.size()));
  }
  if (combine == "sum") {
    double sum = 0;
    for (double v : values) sum += v;
    return sum;
  }
  return *std::max_element(values.begin(), values.end());
}

std::optional<std::string> label_value(const PlainJson& series, const std::string& key) {
  auto l = series.find("labels");
  if (l == series.end() || !l->is_object()) return std::nullopt;
  auto v = l->find(key);
  if (v == l->end() || v->is_null()) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  return v->dump();
}

Filter label_equals(std::string key, std::string value) {
  return [key, value](const PlainJson& s) { return label_value(s, key) == value; };
}

// Insertion-ordered {label: summed stat}, as the Python dict.
using LabelSums = std::vector<std::pair<std::string, double>>;
LabelSums sum_by_label(const PlainJson& m, const std::string& name, const std::string& label) {
  LabelSums out;
  for (const PlainJson* s : metric_series(m, {name})) {
    auto l = s->find("labels");
    if (l == s->end() || !l->is_object()) continue;
    auto lv = label_value(*s, label);
    if (!lv) continue;
    auto v = series_stat(*s, kCounterKeys);
    if (!v) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == *lv; });
    if (it == out.end()) out.emplace_back(*lv, *v);
    else it->second += *v;
  }
  return out;
}
Opt get(const LabelSums& s, const std::string& k) {
  for (const auto& [key, v] : s)
    if (key == k) return v;
  return std::nullopt;
}
ojson to_json(const LabelSums& s) {
  ojson j = ojson::object();
  for (const auto& [k, v] : s) j[k] = v;
  return j;
}

Opt rate(Opt num, Opt den) {
  if (!num || !den || *den <= 0) return std::nullopt;
  return *num / *den;
}
Opt normalize_fraction(Opt v) {
  if (!v) return v;
  return *v > 1.5 ? *v / 100.0 : *v;
}
// Python's int(round(v)): round half to even.
std::optional<std::int64_t> counter_int(Opt v) {
  if (!v) return std::nullopt;
  return static_cast<std::int64_t>(std::nearbyint(*v));
}

bool starts_with(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}
bool any_name(const PlainJson& m, const std::function<bool(const std::string&)>& pred) {
  for (auto it = m.begin(); it != m.end(); ++it)
    if (pred(it.key())) return true;
  return false;
}

// backends/base.py SERVER_CACHE_FLAT_FIELDS
struct Flat {
  Opt gpu_hit, cpu_hit, ext_hit, overall_hit, gpu_usage, cpu_usage;
  Opt off_bytes_g2c, off_bytes_c2g, off_time_g2c, off_time_c2g, off_bw_g2c, off_bw_c2g;
  std::optional<std::int64_t> prompt_total, generation_total;
};

ojson empty_server_metrics(bool present, std::size_t count) {
  ojson n;
  n["present"] = present;
  n["adapter"] = "none";
  n["metric_count"] = count;
  n["cache"] = {{"gpu_cache_hit_rate", nullptr},          {"cpu_cache_hit_rate", nullptr},
                {"external_cache_hit_rate", nullptr},     {"overall_cache_hit_rate", nullptr},
                {"prefix_cache_hits", nullptr},           {"prefix_cache_queries", nullptr},
                {"external_prefix_cache_hits", nullptr},  {"external_prefix_cache_queries", nullptr},
                {"cached_tokens_by_source", ojson::object()}, {"frontend_cache_hit_rate", nullptr},
                {"router_kv_hit_rate", nullptr},          {"router_shared_cache_hit_rate", nullptr},
                {"frontend_cached_tokens", nullptr},      {"frontend_input_tokens", nullptr}};
  n["kv_cache"] = {{"gpu_usage_pct", nullptr}, {"gpu_total_tokens", nullptr}, {"cpu_usage_pct", nullptr},
                   {"cpu_used_tokens", nullptr}, {"cpu_total_tokens", nullptr}};
  n["kv_offload"] = {{"bytes_gpu_to_cpu", nullptr}, {"bytes_cpu_to_gpu", nullptr}, {"time_gpu_to_cpu", nullptr},
                     {"time_cpu_to_gpu", nullptr}, {"bandwidth_gpu_to_cpu_bytes_per_second", nullptr},
                     {"bandwidth_cpu_to_gpu_bytes_per_second", nullptr}};
  n["tokens"] = {{"prompt_total", nullptr},
                 {"generation_total", nullptr},
                 {"requests_completed", nullptr},
                 {"prompt_by_source",
                  {{"gpu_cache_hit", nullptr}, {"cpu_or_external_cache_hit", nullptr}, {"computed", nullptr},
                   {"raw", ojson::object()}}}};
  n["sources"] = ojson::array();
  return n;
}

void populate_sglang(const PlainJson& m, Flat& f, ojson& n) {
  const Opt prompt_total = sum_stat(m, {"sglang:prompt_tokens"});
  const Opt generation_total = sum_stat(m, {"sglang:generation_tokens"});
  f.prompt_total = counter_int(prompt_total);
  f.generation_total = counter_int(generation_total);
  const LabelSums cached = sum_by_label(m, "sglang:cached_tokens", "cache_source");
  const Opt device = get(cached, "device"), host = get(cached, "host");
  Opt total_cached;
  if (!cached.empty()) {
    double t = 0;
    for (const auto& [k, v] : cached) t += v;
    total_cached = t;
  }
  f.gpu_hit = rate(device, prompt_total);
  f.cpu_hit = rate(host, prompt_total);
  f.ext_hit = f.cpu_hit;  // HiCache host hits are external to the GPU cache
  f.overall_hit = rate(total_cached, prompt_total);
  if (!f.overall_hit)
    f.overall_hit = normalize_fraction(gauge_stat(m, {"sglang:cache_hit_rate"}, kRateGaugeKeys, "avg"));
  f.gpu_usage = normalize_fraction(gauge_stat(m, {"sglang:token_usage"}));
  const Opt max_total = sum_stat(m, {"sglang:max_total_num_tokens"}, {"max", "avg", "total", "sum"});
  const Opt host_used = gauge_stat(m, {"sglang:hicache_host_used_tokens"});
  const Opt host_total = gauge_stat(m, {"sglang:hicache_host_total_tokens"});
  f.cpu_usage = rate(host_used, host_total);
  const Opt prefill_compute =
      sum_stat(m, {"sglang:realtime_tokens"}, kCounterKeys, label_equals("mode", "prefill_compute"));
  auto& c = n["cache"];
  c["gpu_cache_hit_rate"] = opt(f.gpu_hit);
  c["cpu_cache_hit_rate"] = opt(f.cpu_hit);
  c["external_cache_hit_rate"] = opt(f.ext_hit);
  c["overall_cache_hit_rate"] = opt(f.overall_hit);
  c["cached_tokens_by_source"] = to_json(cached);
  auto& kv = n["kv_cache"];
  kv["gpu_usage_pct"] = opt(f.gpu_usage);
  kv["gpu_total_tokens"] = opt_int(counter_int(max_total));
  kv["cpu_usage_pct"] = opt(f.cpu_usage);
  kv["cpu_used_tokens"] = opt(host_used);
  kv["cpu_total_tokens"] = opt(host_total);
  auto& t = n["tokens"];
  t["prompt_total"] = opt_int(f.prompt_total);
  t["generation_total"] = opt_int(f.generation_total);
  t["prompt_by_source"] = {{"gpu_cache_hit", opt(device)}, {"cpu_or_external_cache_hit", opt(host)},
                           {"computed", opt(prefill_compute)}, {"raw", to_json(cached)}};
}

std::string source_id(const PlainJson& s) {
  std::string component;
  if (auto v = label_value(s, "dynamo_component"); v && !v->empty()) component = *v;
  else if (auto w = label_value(s, "component")) component = *w;
  std::string role = component == "prefill"                              ? "prefill"
                     : component == "backend" || component == "decode"    ? "decode"
                     : component == "frontend" || component == "router"   ? "router"
                                                                          : "combined";
  std::string id = role;
  if (auto e = s.find("endpoint_url"); e != s.end() && e->is_string() && !e->get<std::string>().empty())
    id += "|" + e->get<std::string>();
  for (const char* key : {"worker_id", "dp_rank", "engine"})
    if (auto v = label_value(s, key)) id += std::string("|") + key + "=" + *v;
  return id;
}

ojson vllm_sources(const PlainJson& m) {
  std::set<std::string> ids;
  for (const char* name : {"vllm:prompt_tokens", "vllm:generation_tokens", "vllm:prefix_cache_hits",
                           "vllm:prefix_cache_queries", "vllm:kv_cache_usage_perc", "vllm:prompt_tokens_by_source"})
    for (const PlainJson* s : metric_series(m, {name})) ids.insert(source_id(*s));
  ojson out = ojson::array();
  for (const auto& id : ids) {
    if (id.empty()) continue;
    Filter f = [id](const PlainJson& s) { return source_id(s) == id; };
    const Opt hits = sum_stat(m, {"vllm:prefix_cache_hits"}, kCounterKeys, f);
    const Opt queries = sum_stat(m, {"vllm:prefix_cache_queries"}, kCounterKeys, f);
    out.push_back({{"id", id},
                   {"role", id.substr(0, id.find('|'))},
                   {"prompt_tokens", opt(sum_stat(m, {"vllm:prompt_tokens"}, kCounterKeys, f))},
                   {"generation_tokens", opt(sum_stat(m, {"vllm:generation_tokens"}, kCounterKeys, f))},
                   {"prefix_cache_hit_rate", opt(rate(hits, queries))},
                   {"gpu_kv_cache_usage_pct",
                    opt(normalize_fraction(gauge_stat(m, {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
                                                      kGaugeKeys, "max", f)))}});
  }
  return out;
}

Opt first_counter_total(const PlainJson& m, const std::vector<std::string>& names) {
  for (const auto& n : names)
    if (auto v = sum_stat(m, {n})) return v;
  return std::nullopt;
}

void populate_vllm(const PlainJson& m, Flat& f, ojson& n, bool dynamo) {
  const Opt prompt_total = dynamo ? first_counter_total(m, {"dynamo_frontend_input_sequence_tokens", "vllm:prompt_tokens"})
                                  : sum_stat(m, {"vllm:prompt_tokens"});
  const Opt generation_total = dynamo ? first_counter_total(m, {"dynamo_frontend_output_tokens", "vllm:generation_tokens"})
                                      : sum_stat(m, {"vllm:generation_tokens"});
  f.prompt_total = counter_int(prompt_total);
  f.generation_total = counter_int(generation_total);
  const Opt prefix_hits = sum_stat(m, {"vllm:prefix_cache_hits"});
  const Opt prefix_queries = sum_stat(m, {"vllm:prefix_cache_queries"});
  const Opt gpu_rate = rate(prefix_hits, prefix_queries);
  f.gpu_hit = gpu_rate;
  const Opt ext_hits = sum_stat(m, {"vllm:external_prefix_cache_hits"});
  const Opt ext_queries = sum_stat(m, {"vllm:external_prefix_cache_queries"});
  const Opt ext_rate = rate(ext_hits, ext_queries);
  f.ext_hit = ext_rate;
  f.cpu_hit = ext_rate;
  const LabelSums by_source = sum_by_label(m, "vllm:prompt_tokens_by_source", "source");
  if (!by_source.empty()) {
    const Opt local_hit = get(by_source, "local_cache_hit"), ext_transfer = get(by_source, "external_kv_transfer"),
              local_compute = get(by_source, "local_compute");
    double total = 0;
    for (const auto& [k, v] : by_source) total += v;
    if (total > 0) {
      if (local_hit) f.gpu_hit = *local_hit / total;
      if (ext_transfer) {
        f.cpu_hit = *ext_transfer / total;
        f.ext_hit = *ext_transfer / total;
      }
      f.overall_hit = (local_hit.value_or(0.0) + ext_transfer.value_or(0.0)) / total;
    }
    n["tokens"]["prompt_by_source"] = {{"gpu_cache_hit", opt(local_hit)}, {"cpu_or_external_cache_hit", opt(ext_transfer)},
                                       {"computed", opt(local_compute)}, {"raw", to_json(by_source)}};
  } else if (gpu_rate) {
    f.overall_hit = gpu_rate;
  }
  f.gpu_usage = normalize_fraction(gauge_stat(m, {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}));
  f.cpu_usage = normalize_fraction(gauge_stat(m, {"vllm:cpu_kv_cache_usage_perc"}));
  f.off_bytes_g2c = sum_stat(m, {"vllm:kv_offload_bytes_gpu_to_cpu"});
  f.off_bytes_c2g = sum_stat(m, {"vllm:kv_offload_bytes_cpu_to_gpu"});
  f.off_time_g2c = sum_stat(m, {"vllm:kv_offload_time_gpu_to_cpu"});
  f.off_time_c2g = sum_stat(m, {"vllm:kv_offload_time_cpu_to_gpu"});
  f.off_bw_g2c = rate(f.off_bytes_g2c, f.off_time_g2c);
  f.off_bw_c2g = rate(f.off_bytes_c2g, f.off_time_c2g);
  auto& c = n["cache"];
  c["gpu_cache_hit_rate"] = opt(f.gpu_hit);
  c["cpu_cache_hit_rate"] = opt(f.cpu_hit);
  c["external_cache_hit_rate"] = opt(f.ext_hit);
  c["overall_cache_hit_rate"] = opt(f.overall_hit);
  c["prefix_cache_hits"] = opt(prefix_hits);
  c["prefix_cache_queries"] = opt(prefix_queries);
  c["external_prefix_cache_hits"] = opt(ext_hits);
  c["external_prefix_cache_queries"] = opt(ext_queries);
  n["kv_cache"]["gpu_usage_pct"] = opt(f.gpu_usage);
  n["kv_cache"]["cpu_usage_pct"] = opt(f.cpu_usage);
  n["kv_offload"] = {{"bytes_gpu_to_cpu", opt(f.off_bytes_g2c)}, {"bytes_cpu_to_gpu", opt(f.off_bytes_c2g)},
                     {"time_gpu_to_cpu", opt(f.off_time_g2c)}, {"time_cpu_to_gpu", opt(f.off_time_c2g)},
                     {"bandwidth_gpu_to_cpu_bytes_per_second", opt(f.off_bw_g2c)},
                     {"bandwidth_cpu_to_gpu_bytes_per_second", opt(f.off_bw_c2g)}};
  n["tokens"]["prompt_total"] = opt_int(f.prompt_total);
  n["tokens"]["generation_total"] = opt_int(f.generation_total);
  n["sources"] = vllm_sources(m);
  if (!dynamo) return;
  // dynamo_vllm.py _populate_dynamo
  const Opt dyn_usage = normalize_fraction(gauge_stat(m, {"dynamo_component_gpu_cache_usage_percent"}));
  if (!f.gpu_usage) {
    f.gpu_usage = dyn_usage;
    n["kv_cache"]["gpu_usage_pct"] = opt(dyn_usage);
  }
  const Opt fe_cached = sum_stat(m, {"dynamo_frontend_cached_tokens"});
  const Opt fe_input = sum_stat(m, {"dynamo_frontend_input_sequence_tokens"});
  const Opt fe_rate = rate(fe_cached, fe_input);
  const Opt router_kv = normalize_fraction(gauge_stat(m, {"dynamo_component_router_kv_hit_rate"}, kRateGaugeKeys, "avg"));
  const Opt router_shared =
      normalize_fraction(gauge_stat(m, {"dynamo_component_router_shared_cache_hit_rate"}, kRateGaugeKeys, "avg"));
  if (!f.overall_hit) f.overall_hit = fe_rate && *fe_rate != 0.0 ? fe_rate : router_shared;  // Python `a or b`
  c["frontend_cache_hit_rate"] = opt(fe_rate);
  c["router_kv_hit_rate"] = opt(router_kv);
  c["router_shared_cache_hit_rate"] = opt(router_shared);
  c["frontend_cached_tokens"] = opt(fe_cached);
  c["frontend_input_tokens"] = opt(fe_input);
}

std::vector<std::string> atom_names(const std::string& suffix) { return {"atom:" + suffix, "atom_" + suffix}; }
std::vector<std::string> atom_counter_names(const std::string& stem) {
  return {"atom:" + stem, "atom_" + stem, "atom:" + stem + "_total", "atom_" + stem + "_total"};
}

void populate_atom(const PlainJson& m, Flat& f, ojson& n) {
  const Opt prompt_total = sum_stat(m, atom_counter_names("prompt_tokens"));
  const Opt generation_total = sum_stat(m, atom_counter_names("generation_tokens"));
  f.prompt_total = counter_int(prompt_total);
  f.generation_total = counter_int(generation_total);
  const Opt cached = sum_stat(m, atom_counter_names("prefix_cache_cached_tokens"));
  const Opt full = sum_stat(m, atom_counter_names("prefix_cache_full_tokens"));
  const Opt hit = rate(cached, full);
  const Opt external = sum_stat(m, atom_counter_names("lmcache_loaded_tokens"));
  const Opt ext_hit = rate(external, full);
  f.gpu_hit = hit;
  f.cpu_hit = ext_hit;
  f.ext_hit = ext_hit;
  f.overall_hit = hit;
  f.gpu_usage = normalize_fraction(gauge_stat(m, atom_names("kv_cache_usage_ratio")));
  auto& c = n["cache"];
  c["gpu_cache_hit_rate"] = opt(hit);
  c["cpu_cache_hit_rate"] = opt(ext_hit);
  c["external_cache_hit_rate"] = opt(ext_hit);
  c["overall_cache_hit_rate"] = opt(hit);
  c["prefix_cache_hits"] = opt(cached);
  c["prefix_cache_queries"] = opt(full);
  c["external_prefix_cache_hits"] = opt(external);
  c["external_prefix_cache_queries"] = opt(full);
  n["kv_cache"]["gpu_usage_pct"] = opt(f.gpu_usage);
  n["tokens"]["prompt_total"] = opt_int(f.prompt_total);
  n["tokens"]["generation_total"] = opt_int(f.generation_total);
}

}  // namespace

InferenceXServerMetrics inferencex_server_metrics(const nlohmann::json& export_json, const std::string& framework,
                                                  const std::vector<std::int64_t>& isl,
                                                  const std::vector<std::int64_t>& osl, std::size_t records) {
  InferenceXServerMetrics out;
  const PlainJson& m = metrics_of(export_json);
  const std::string fw = lower(framework);
  Flat f;
  ojson n = empty_server_metrics(!m.empty(), m.size());
  // backends/__init__.py detect_backend
  std::string adapter;
  if (starts_with(fw, "dynamo") || any_name(m, [](const std::string& s) { return starts_with(s, "dynamo_"); }))
    adapter = "dynamo-vllm";
  else if (any_name(m, [](const std::string& s) { return starts_with(s, "atom:") || starts_with(s, "atom_"); }) ||
           (m.empty() && fw == "atom"))
    adapter = "atom";
  else if (any_name(m, [](const std::string& s) { return starts_with(s, "sglang:"); }) || (m.empty() && fw == "sglang"))
    adapter = "sglang";
  else if (any_name(m, [](const std::string& s) { return starts_with(s, "vllm:"); }) || (m.empty() && fw == "vllm"))
    adapter = "vllm";

  // base.py apply_profile_totals
  auto totals = [&] {
    if (!f.prompt_total && !isl.empty()) {
      std::int64_t s = 0;
      for (auto v : isl) s += v;
      f.prompt_total = s;
    }
    if (!f.generation_total && !osl.empty()) {
      std::int64_t s = 0;
      for (auto v : osl) s += v;
      f.generation_total = s;
    }
  };
  if (m.empty()) {
    out.warnings.push_back("server_metrics_export.json missing or empty");
    totals();
    n["tokens"]["prompt_total"] = opt_int(f.prompt_total);
    n["tokens"]["generation_total"] = opt_int(f.generation_total);
    n["tokens"]["requests_completed"] = records;
    out.nested = std::move(n);
    return out;
  }
  if (adapter.empty()) {
    std::vector<std::string> names;
    for (auto it = m.begin(); it != m.end(); ++it) names.push_back(it.key());
    std::sort(names.begin(), names.end());
    std::string preview;
    for (std::size_t i = 0; i < names.size() && i < 10; ++i) preview += (i ? ", " : "") + names[i];
    out.warnings.push_back("Unsupported agentic server metrics backend; framework='" + fw + "', metric_names=[" +
                           preview + "]");
  } else {
    n["adapter"] = adapter;
    if (adapter == "sglang") populate_sglang(m, f, n);
    else if (adapter == "atom") populate_atom(m, f, n);
    else populate_vllm(m, f, n, adapter == "dynamo-vllm");
  }
  totals();
  if (n["tokens"]["prompt_total"].is_null()) n["tokens"]["prompt_total"] = opt_int(f.prompt_total);
  if (n["tokens"]["generation_total"].is_null()) n["tokens"]["generation_total"] = opt_int(f.generation_total);
  n["tokens"]["requests_completed"] = records;
  out.overall_cache_hit_rate = f.overall_hit;
  out.nested = std::move(n);
  return out;
}

}  // namespace agentperf
