#include "sim/published_pools.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_reader.h"
#include "sim/builtin_specs.h"

namespace agentperf::sim {
namespace {
constexpr double GiB = 1024.0 * 1024 * 1024;

std::string fmt(const char* f, double a = 0, double b = 0, double c = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}
}  // namespace

std::vector<PublishedPool> load_published_pools(const std::string& name_or_path) {
  nlohmann::json j;
  std::string source = name_or_path;
  if (name_or_path == "builtin") {
    const auto& b = builtin_validation_json();
    const auto it = b.find("kv_pools");
    if (it == b.end()) throw UserError("this build has no published KV pools (data/validation/kv_pools.json)");
    j = nlohmann::json::parse(it->second);
    source = "data/validation/kv_pools.json";
  } else {
    if (!std::filesystem::exists(name_or_path)) throw UserError("published pools '" + name_or_path + "': no such file");
    std::ifstream in(name_or_path);
    j = parse_json(in, name_or_path);
  }
  const JsonReader f(j, source);
  f.reject_unknown_keys({"notes", "pools"});
  const JsonReader arr = f.array("pools", true);
  std::vector<PublishedPool> out;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const JsonReader e = arr.at(i);
    e.reject_unknown_keys({"id", "model_spec", "hardware", "tp", "dp_attention", "mem_fraction_static",
                           "kv_cache_dtype", "dsa_backend", "published_tokens", "published_pool_gib", "source",
                           "notes"});
    PublishedPool p;
    p.id = e.string("id");
    p.model_spec = e.string("model_spec");
    p.hardware = e.string("hardware");
    p.tp = e.integer("tp", JsonRange::between(1, 64));
    p.dp_attention = e.boolean_or("dp_attention", false);
    p.mem_fraction_static = e.number("mem_fraction_static", JsonRange::between(0.05, 0.99));
    p.kv_cache_dtype = e.string_or("kv_cache_dtype", "auto");
    try {
      (void)parse_kv_cache_dtype(p.kv_cache_dtype);
    } catch (const UserError&) {
      e.fail("kv_cache_dtype",
             std::string("must be ") + kv_cache_dtype_choices() + ", got '" + p.kv_cache_dtype + "'");
    }
    p.dsa_backend = e.string_or("dsa_backend", "auto");
    const auto& names = dsa_backend_names();
    if (std::find(names.begin(), names.end(), p.dsa_backend) == names.end())
      e.fail("dsa_backend", "must be auto or one of SGLang's DSA backends (flashmla_kv, tilelang, trtllm, ...), got '" +
                                p.dsa_backend + "'");
    p.published_tokens = static_cast<long long>(e.number("published_tokens", JsonRange::between(1, 1e12)));
    p.published_pool_gib = e.number_or("published_pool_gib", 0, JsonRange::between(0, 1e6));
    p.source = e.string("source");
    p.notes = e.string_or("notes", "");
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<PublishedPoolRow> compare_published_pools(const std::vector<PublishedPool>& pools) {
  std::vector<PublishedPoolRow> rows;
  for (const auto& p : pools) {
    EngineConfig cfg;
    // A DP-attention rank: attention TP 1, the rest of the weights over all
    // TP GPUs (as the sweep route plans one).
    cfg.tp = p.dp_attention ? 1 : p.tp;
    cfg.mem_fraction_static = p.mem_fraction_static;
    cfg.kv_cache_dtype_bytes = parse_kv_cache_dtype(p.kv_cache_dtype);
    cfg.dsa_prefill_backend = cfg.dsa_decode_backend = p.dsa_backend;
    PublishedPoolRow r;
    r.pool = p;
    const ModelSpec spec = load_model_spec(p.model_spec);
    r.plan = plan_memory(p.dp_attention ? rank_model(spec, p.tp, 1, true) : spec, load_hardware_spec(p.hardware), cfg);
    r.planned_bytes_per_token = r.plan.kv_bytes_per_token_rank + r.plan.draft_kv_bytes_per_token_rank;
    r.planned_pool_gib = static_cast<double>(r.plan.kv_tokens) * r.planned_bytes_per_token / GiB;
    if (p.published_pool_gib > 0)
      r.published_bytes_per_token = p.published_pool_gib * GiB / static_cast<double>(p.published_tokens);
    r.tokens_error_pct =
        100.0 * (static_cast<double>(r.plan.kv_tokens) / static_cast<double>(p.published_tokens) - 1.0);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string published_pools_markdown(const std::vector<PublishedPoolRow>& rows) {
  std::string s =
      "| pool | deployment | bytes per token, published / planned | pool GiB per rank, published / planned | "
      "tokens, published / planned (error) |\n|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const auto& p = r.pool;
    s += "| " + p.id + " | " + p.model_spec + ", " + p.hardware + fmt(", TP%.0f", p.tp) +
         (p.dp_attention ? " DP attention" : "") + fmt(", mem %.2f, KV ", p.mem_fraction_static) + p.kv_cache_dtype +
         (p.dsa_backend != "auto" ? ", DSA " + p.dsa_backend : std::string()) + " | ";
    s += (r.published_bytes_per_token > 0 ? fmt("%.0f", r.published_bytes_per_token) : std::string("-")) +
         fmt(" / %.0f | ", r.planned_bytes_per_token);
    s += (p.published_pool_gib > 0 ? fmt("%.2f", p.published_pool_gib) : std::string("-")) +
         fmt(" / %.2f | ", r.planned_pool_gib);
    s += std::to_string(p.published_tokens) + " / " + std::to_string(r.plan.kv_tokens) +
         fmt(" (%+.1f %%) |\n", r.tokens_error_pct);
  }
  return s;
}

}  // namespace agentperf::sim
