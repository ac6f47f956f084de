#include "metrics/run_description.h"

#include "common/clock.h"
#include "common/version.h"
#include "metrics/export.h"

namespace agentperf {

nlohmann::ordered_json RunDescription::to_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["kind"] = kind;
  auto put = [&](const char* key, const auto& v) {
    if (v) j[key] = *v;
  };
  put("model", model);
  put("served_model", served_model);
  put("hardware", hardware);
  put("tp", tp);
  put("ep", ep);
  put("dp", dp);
  put("gpus", gpus);
  put("gpus_source", gpus_source);
  put("engine", engine);
  put("engine_version", engine_version);
  put("recipe", recipe);
  put("point", point);
  put("concurrency", concurrency);
  put("request_rate", request_rate);
  put("kv_offload", kv_offload);
  put("spec_decoding", spec_decoding);
  put("workload", workload);
  put("time_scale", time_scale);
  put("gpu_price_per_hour", gpu_price_per_hour);
  put("gpu_power_watts", gpu_power_watts);
  j["date"] = date.empty() ? iso_local(wall_ns()) : date;
  j["command_line"] = command_line;
  j["agentperf_version"] = std::string(version());
  return j;
}

RunDescription RunDescription::from_json(const nlohmann::json& j) {
  RunDescription d;
  if (!j.is_object()) return d;
  auto str = [&](const char* key, std::optional<std::string>& out) {
    if (j.contains(key) && j[key].is_string()) out = j[key].get<std::string>();
  };
  auto num = [&](const char* key, auto& out) {
    using T = typename std::remove_reference_t<decltype(out)>::value_type;
    if (j.contains(key) && j[key].is_number()) out = j[key].get<T>();
  };
  if (j.contains("kind") && j["kind"].is_string()) d.kind = j["kind"].get<std::string>();
  str("model", d.model);
  str("served_model", d.served_model);
  str("hardware", d.hardware);
  num("tp", d.tp);
  num("ep", d.ep);
  num("dp", d.dp);
  num("gpus", d.gpus);
  str("gpus_source", d.gpus_source);
  str("engine", d.engine);
  str("engine_version", d.engine_version);
  str("recipe", d.recipe);
  str("point", d.point);
  num("concurrency", d.concurrency);
  num("request_rate", d.request_rate);
  str("kv_offload", d.kv_offload);
  str("spec_decoding", d.spec_decoding);
  str("workload", d.workload);
  num("time_scale", d.time_scale);
  num("gpu_price_per_hour", d.gpu_price_per_hour);
  num("gpu_power_watts", d.gpu_power_watts);
  if (j.contains("date") && j["date"].is_string()) d.date = j["date"].get<std::string>();
  if (j.contains("command_line") && j["command_line"].is_string()) d.command_line = j["command_line"].get<std::string>();
  return d;
}

}  // namespace agentperf
