#include "recipe/srt_slurm_recipe.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>

#include "common/error.h"
#include "recipe/yaml_node.h"
#include "sim/engine_config.h"

namespace agentperf::recipe {

namespace fs = std::filesystem;

std::optional<std::string> find_srt_slurm_recipe(const std::string& master_file, const std::string& config_file) {
  std::string rest = config_file;
  for (const std::string prefix : {"recipes/", "benchmarks/multi_node/srt-slurm-recipes/"})
    if (config_file.rfind(prefix, 0) == 0) {
      rest = config_file.substr(prefix.size());
      break;
    }
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

// A TensorRT-LLM role's options (trtllm_settings.h). A field the plan reads
// must have the kind TensorRT-LLM takes; the rest are not looked at.
TrtllmSettings trtllm_settings(const detail::Node& role) {
  TrtllmSettings t;
  auto positive = [&](const detail::Node& n, const char* key, int& into) {
    if (!n.has(key)) return;
    const auto v = n[key].as<long long>("a positive integer");
    if (v <= 0 || v > (1 << 30)) n[key].fail("expected a positive integer, got " + std::to_string(v));
    into = static_cast<int>(v);
  };
  const detail::Node kv = role["kv_cache_config"];
  if (kv.is_map()) {
    if (kv.has("free_gpu_memory_fraction")) {
      t.free_gpu_memory_fraction = kv["free_gpu_memory_fraction"].as<double>("a fraction in (0, 1]");
      if (!(t.free_gpu_memory_fraction > 0 && t.free_gpu_memory_fraction <= 1))
        kv["free_gpu_memory_fraction"].fail("expected a fraction in (0, 1]");
    }
    positive(kv, "tokens_per_block", t.tokens_per_block);
    if (kv.has("dtype")) {
      t.kv_cache_dtype = kv["dtype"].as<std::string>("a KV cache dtype");
      try {
        (void)sim::parse_kv_cache_dtype(t.kv_cache_dtype);
      } catch (const UserError& e) {
        kv["dtype"].fail(e.what());
      }
    }
    if (kv.has("host_cache_size")) {
      t.host_cache_bytes = kv["host_cache_size"].as<std::int64_t>("a size in bytes");
      if (t.host_cache_bytes < 0) kv["host_cache_size"].fail("expected a size in bytes, at least 0");
    }
    if (kv.has("enable_block_reuse")) t.enable_block_reuse = kv["enable_block_reuse"].as<bool>("true or false");
  } else if (role.has("kv_cache_config")) {
    role["kv_cache_config"].fail("expected a mapping");
  }
  positive(role, "max_batch_size", t.max_batch_size);
  positive(role, "max_num_tokens", t.max_num_tokens);
  positive(role, "stream_interval", t.stream_interval);
  // A speculative_config drafts max_draft_len tokens a step (MTP's
  // num_nextn_predict_layers where that is what it gives; one, MTP's
  // default, where it gives neither).
  const detail::Node spec = role["speculative_config"];
  if (spec.is_map()) {
    t.max_draft_len = 1;
    for (const char* key : {"max_draft_len", "num_nextn_predict_layers"})
      if (spec.has(key)) {
        const auto v = spec[key].as<long long>("a draft length");
        if (v < 0 || v > 64) spec[key].fail("expected a draft length in [0, 64], got " + std::to_string(v));
        t.max_draft_len = static_cast<int>(v);
        break;
      }
  }
  return t;
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
  if (!backend) return {"", std::nullopt, "the recipe has no backend section"};
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
    const detail::Node trt(backend["trtllm_config"], "backend.trtllm_config", path);
    if (!trt.is_map()) trt.fail("expected a mapping of roles");
    if (!trt.has(role.c_str())) return {"", std::nullopt, "the recipe's engine config has no '" + role + "' role"};
    const detail::Node r = trt[role.c_str()];
    if (!r.is_map()) r.fail("expected a mapping of TensorRT-LLM options");
    return {"", trtllm_settings(r), ""};
  } else {
    return {"", std::nullopt, "the recipe's backend has no sglang_config, vllm_config or trtllm_config"};
  }
  if (!config.IsMap()) throw UserError(path + ": the backend's engine config: expected a mapping of roles");
  const YAML::Node flags = config[role];
  if (!flags) return {"", std::nullopt, "the recipe's engine config has no '" + role + "' role"};
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
  return {command, std::nullopt, ""};
}

}  // namespace agentperf::recipe
