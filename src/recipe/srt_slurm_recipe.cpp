#include "recipe/srt_slurm_recipe.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>

#include "common/error.h"
#include "recipe/yaml_node.h"

namespace agentperf::recipe {

namespace fs = std::filesystem;

std::optional<std::string> find_srt_slurm_recipe(const std::string& master_file, const std::string& config_file) {
  const std::string prefix = "recipes/";
  const std::string rest = config_file.rfind(prefix, 0) == 0 ? config_file.substr(prefix.size()) : config_file;
  std::error_code ec;
  fs::path dir = fs::absolute(fs::path(master_file), ec).parent_path();
  while (!dir.empty()) {
    const fs::path candidate = dir / "benchmarks" / "multi_node" / "srt-slurm-recipes" / rest;
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return std::nullopt;
}

namespace {

// A flag's value on one command-line token: JSON values lose their spaces
// (the plan reads none of them, and a space would end the token).
std::string token(std::string v) {
  std::string out;
  for (char c : v)
    if (c != ' ' && c != '\n' && c != '\t') out += c;
  return out;
}

// The section's value for variant `index`: each list sliced (srtctl's
// _apply_zip_slice).
YAML::Node slice(const YAML::Node& over, int index, const std::string& where) {
  if (over.IsSequence()) {
    if (over.size() == 1) return YAML::Clone(over[0]);
    if (index < 0 || static_cast<std::size_t>(index) >= over.size())
      throw UserError(where + ": has " + std::to_string(over.size()) + " values, no variant [" + std::to_string(index) +
                      "]");
    return YAML::Clone(over[static_cast<std::size_t>(index)]);
  }
  if (!over.IsMap()) return YAML::Clone(over);
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : over) {
    const std::string key = kv.first.as<std::string>();
    out[key] = slice(kv.second, index, where + "." + key);
  }
  return out;
}

// `over` merged into `base` (srtctl's deep_merge).
YAML::Node merge(const YAML::Node& base, const YAML::Node& over) {
  YAML::Node out = YAML::Clone(base);
  for (const auto& kv : over) {
    const std::string key = kv.first.as<std::string>();
    if (kv.second.IsNull()) {
      out.remove(key);
    } else if (kv.second.IsMap() && base[key] && base[key].IsMap()) {
      out[key] = merge(base[key], kv.second);
    } else {
      out[key] = YAML::Clone(kv.second);
    }
  }
  return out;
}

}  // namespace

std::pair<std::string, std::optional<SrtSlurmVariant>> split_srt_slurm_config_file(const std::string& config_file) {
  const auto colon = config_file.find(':');
  if (colon == std::string::npos) return {config_file, std::nullopt};
  const std::string spec = config_file.substr(colon + 1);
  const auto open = spec.find('[');
  SrtSlurmVariant v;
  v.section = spec.substr(0, open);
  int index = -1, used = 0;
  if (v.section.rfind("zip_override_", 0) != 0 || open == std::string::npos ||
      std::sscanf(spec.c_str() + open, "[%d]%n", &index, &used) != 1 || index < 0 ||
      open + static_cast<std::size_t>(used) != spec.size())
    throw UserError("CONFIG_FILE=" + config_file + ": expected FILE or FILE:zip_override_NAME[i]");
  v.index = index;
  return {config_file.substr(0, colon), v};
}

SrtSlurmRole srt_slurm_role(const std::string& path, const std::string& role, const std::string& model,
                            const std::optional<SrtSlurmVariant>& variant) {
  YAML::Node doc = detail::load_yaml_file(path, "srt-slurm recipe");
  if (variant) {
    const YAML::Node base = doc["base"], section = doc[variant->section];
    if (!base || !base.IsMap()) throw UserError(path + ": an override variant's file needs a 'base' recipe mapping");
    if (!section || !section.IsMap())
      throw UserError(path + ": no override section '" + variant->section + "' (a mapping)");
    doc = merge(base, slice(section, variant->index, path + ": " + variant->section));
  }
  const YAML::Node backend = doc["backend"];
  if (!backend) return {"", "the recipe has no backend section"};
  if (!backend.IsMap()) throw UserError(path + ": field 'backend': expected a mapping of the engine's settings");
  std::string launcher;
  YAML::Node config;
  if (backend["sglang_config"]) {
    launcher = "python3 -m sglang.launch_server --model-path " + model;
    config = backend["sglang_config"];
  } else if (backend["vllm_config"]) {
    launcher = "vllm serve " + model;
    config = backend["vllm_config"];
  } else if (backend["trtllm_config"]) {
    return {"", "a TensorRT-LLM recipe (trtllm_config), whose engine settings are not read"};
  } else {
    return {"", "the recipe's backend has no sglang_config or vllm_config"};
  }
  if (!config.IsMap()) throw UserError(path + ": the backend's engine config: expected a mapping of roles");
  const YAML::Node flags = config[role];
  if (!flags) return {"", "the recipe's engine config has no '" + role + "' role"};
  if (!flags.IsMap())
    throw UserError(path + ": the backend's '" + role + "' role: expected a mapping of flag names to values");
  std::string command = launcher;
  for (const auto& kv : flags) {
    const std::string name = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (v.IsScalar()) {
      const std::string s = v.as<std::string>();
      if (s == "true") {
        command += " --" + name;
      } else if (s != "false" && !s.empty()) {
        command += " --" + name + " " + token(s);
      }
    } else if (v.IsSequence()) {  // e.g. --cuda-graph-bs 1 2 4, as the engines' argument parsers take it
      command += " --" + name;
      for (const auto& item : v)
        if (item.IsScalar()) command += " " + token(item.as<std::string>());
    }
  }
  return {command, ""};
}

}  // namespace agentperf::recipe
