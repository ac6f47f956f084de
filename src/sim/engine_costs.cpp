#include "sim/engine_costs.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "common/error.h"
#include "common/json_reader.h"
#include "sim/builtin_specs.h"

namespace agentperf::sim {
namespace {

struct Coefficient {
  const char* name;
  double EngineCosts::*field;
  double lo, hi;  // plausible range, in the file's units (seconds, bytes, ratios)
};

// Ranges catch a value in the wrong unit (ms for s) or sign; a real engine
// sits far inside them.
const std::vector<Coefficient>& coefficients() {
  static const std::vector<Coefficient> c = {
      {"front_end_s", &EngineCosts::front_end_s, 0, 1},
      {"front_end_token_s", &EngineCosts::front_end_token_s, 0, 1e-4},
      {"step_s", &EngineCosts::step_s, 0, 0.1},
      {"request_s", &EngineCosts::request_s, 0, 0.01},
      {"attention_request_s", &EngineCosts::attention_request_s, 0, 0.001},
      {"prefill_token_s", &EngineCosts::prefill_token_s, 0, 0.001},
      {"weight_read_scale", &EngineCosts::weight_read_scale, 0.1, 20},
      {"kv_read_scale", &EngineCosts::kv_read_scale, 0.1, 20},
      {"gemm_scale", &EngineCosts::gemm_scale, 0.1, 20},
      {"attention_scale", &EngineCosts::attention_scale, 0.1, 50},
      {"prefix_attention_scale", &EngineCosts::prefix_attention_scale, 0.1, 50},
      {"moe_half_tokens_per_expert", &EngineCosts::moe_half_tokens_per_expert, 0, 1e5},
      {"moe_layer_step_s", &EngineCosts::moe_layer_step_s, 0, 0.01},
      {"moe_prefill_layer_s", &EngineCosts::moe_prefill_layer_s, 0, 0.1},
      {"linear_prefill_layer_s", &EngineCosts::linear_prefill_layer_s, 0, 0.1},
      {"linear_decode_s", &EngineCosts::linear_decode_s, 0, 0.001},
      {"linear_prefill_token_s", &EngineCosts::linear_prefill_token_s, 0, 0.001},
      {"allreduce_half_bytes", &EngineCosts::allreduce_half_bytes, 0, 1e10},
  };
  return c;
}

const Coefficient& find(const std::string& name) {
  for (const auto& c : coefficients())
    if (name == c.name) return c;
  throw std::out_of_range("unknown engine cost coefficient '" + name + "'");
}

}  // namespace

const std::vector<std::string>& EngineCosts::names() {
  static const std::vector<std::string> n = [] {
    std::vector<std::string> v;
    for (const auto& c : coefficients()) v.emplace_back(c.name);
    return v;
  }();
  return n;
}

double& EngineCosts::at(const std::string& name) { return this->*find(name).field; }
double EngineCosts::at(const std::string& name) const { return this->*find(name).field; }
std::pair<double, double> EngineCosts::range(const std::string& name) {
  const auto& c = find(name);
  return {c.lo, c.hi};
}

bool EngineCosts::neutral_value(const std::string& name) const {
  static const EngineCosts neutral;
  return at(name) == neutral.at(name);
}

std::optional<EngineProfileDocument> engine_profile_document(const std::string& name_or_path) {
  const auto& builtins = builtin_engine_json();
  if (auto it = builtins.find(name_or_path); it != builtins.end())
    return EngineProfileDocument{nlohmann::json::parse(it->second), "built-in engine profile '" + name_or_path + "'"};
  if (name_or_path == "roofline") return std::nullopt;
  if (!std::filesystem::exists(name_or_path)) {
    std::string known = "roofline";
    for (const auto& [k, v] : builtins) known += ", " + k;
    throw UserError("unknown engine profile '" + name_or_path + "': not a shipped one (" + known + ") and no such file");
  }
  std::ifstream in(name_or_path);
  return EngineProfileDocument{parse_json(in, name_or_path), name_or_path};
}

EngineCosts load_engine_costs(const std::string& name_or_path) {
  const auto doc = engine_profile_document(name_or_path);
  if (!doc) return EngineCosts{};
  const nlohmann::json& j = doc->json;
  const std::string& source = doc->source;
  const JsonReader f(j, source);
  f.reject_unknown_keys({"schema", "name", "notes", "engine", "coefficients", "fit"});
  EngineCosts c;
  c.name = f.string("name");
  if (c.name.empty()) f.fail("name", "must be a non-empty string");
  c.source = source;
  const JsonReader co = f.object("coefficients");
  for (const auto& [key, value] : co.entries()) {
    const Coefficient* known = nullptr;
    for (const auto& k : coefficients())
      if (key == k.name) known = &k;
    if (!known) {
      std::string list;
      for (const auto& k : coefficients()) list += (list.empty() ? "" : ", ") + std::string(k.name);
      co.fail(key, "is not an engine cost coefficient (known: " + list + ")");
    }
    c.*known->field = co.number(key, JsonRange::between(known->lo, known->hi));
  }
  return c;
}

std::vector<std::string> builtin_engine_cost_names() {
  std::vector<std::string> out{"roofline"};
  for (const auto& [k, v] : builtin_engine_json()) out.push_back(k);
  return out;
}

nlohmann::ordered_json engine_costs_json(const EngineCosts& c, const std::string& notes,
                                         const nlohmann::ordered_json& fit) {
  nlohmann::ordered_json j;
  j["schema"] = "agentperf-engine-costs-v1";
  j["name"] = c.name;
  j["notes"] = notes;
  nlohmann::ordered_json co = nlohmann::ordered_json::object();
  for (const auto& n : EngineCosts::names()) co[n] = c.at(n);
  j["coefficients"] = co;
  if (!fit.is_null()) j["fit"] = fit;
  return j;
}

}  // namespace agentperf::sim
