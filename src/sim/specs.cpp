#include "sim/specs.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_reader.h"
#include "sim/builtin_specs.h"
#include "sim/hardware_profile.h"

namespace agentperf::sim {
namespace {
using json = nlohmann::json;

std::pair<json, std::string> read_spec(const std::string& name_or_path,
                                       const std::map<std::string, std::string>& builtins, const char* kind) {
  if (auto it = builtins.find(name_or_path); it != builtins.end())
    return {json::parse(it->second), "built-in " + std::string(kind) + " spec '" + name_or_path + "'"};
  if (!std::filesystem::exists(name_or_path)) {
    std::string known;
    for (const auto& [k, v] : builtins) known += (known.empty() ? "" : ", ") + k;
    throw UserError(std::string("unknown ") + kind + " spec '" + name_or_path + "': not a built-in (" + known +
                    ") and no such file");
  }
  std::ifstream in(name_or_path);
  return {parse_json(in, name_or_path), name_or_path};
}
}  // namespace

double ModelSpec::total_weight_bytes() const {
  return dense_weight_bytes + other_weight_bytes + (moe ? moe->routed_weight_bytes : 0.0);
}

int ModelSpec::kv_heads_per_rank(int tp) const { return std::max(1, kv_heads / std::max(1, tp)); }

double ModelSpec::kv_bytes_per_token_rank(int tp) const {
  return static_cast<double>(layers_full) * 2.0 * kv_heads_per_rank(tp) * head_dim * kv_dtype_bytes;
}

double ModelSpec::draft_kv_bytes_per_token_rank(int tp) const {
  if (!mtp) return 0;
  return static_cast<double>(mtp->draft_kv_layers) * 2.0 * kv_heads_per_rank(tp) * head_dim * kv_dtype_bytes;
}

double ModelSpec::state_bytes_per_request_rank(int tp) const {
  if (!hybrid()) return 0;
  const auto& l = *linear;
  const double conv = static_cast<double>(l.conv_dim) / tp * (l.conv_kernel - 1) * l.conv_dtype_bytes;
  const double ssm = static_cast<double>(l.v_heads) / tp * l.v_dim * l.k_dim * l.ssm_dtype_bytes;
  return (conv + ssm) * layers_linear;
}

double ModelSpec::attention_flops_per_token_per_ctx() const {
  return 4.0 * q_heads * head_dim * layers_full;
}

std::string HardwareSpec::math_dtype_for(const std::string& dtype) const {
  static const std::vector<std::string> order = {"fp4", "fp8", "bf16"};
  auto it = std::find(order.begin(), order.end(), dtype);
  for (; it != order.end(); ++it)
    if (peak_flops.count(*it)) return *it;
  if (!peak_flops.empty()) return peak_flops.begin()->first;
  return dtype;
}

double HardwareSpec::peak_for(const std::string& dtype) const {
  if (auto p = peak_flops.find(math_dtype_for(dtype)); p != peak_flops.end()) return p->second;
  return 1e15;
}

double HardwareSpec::host_link_rate(double page_bytes) const {
  if (profile && !profile->host_link_h2d.empty()) return host_link_bandwidth * profile->host_link_h2d.at(page_bytes);
  return host_link_bandwidth * eff_host_link;
}

ModelSpec load_model_spec(const std::string& name_or_path) {
  auto [j, source] = read_spec(name_or_path, builtin_model_json(), "model");
  const JsonReader f(j, source);
  const auto pos = JsonRange::positive();
  ModelSpec m;
  m.name = f.string("name");
  m.served_model_name = f.string_or("served_model_name", m.name);
  m.layers_full = f.integer("layers_full_attention", pos);
  m.layers_linear = f.integer_or("layers_linear_attention", 0);
  m.hidden = f.integer("hidden_size", pos);
  m.q_heads = f.integer("q_heads", pos);
  m.kv_heads = f.integer("kv_heads", pos);
  m.head_dim = f.integer("head_dim", pos);
  m.kv_dtype_bytes = f.integer("kv_dtype_bytes", pos);
  m.dense_weight_bytes = f.number("dense_weight_bytes", pos);
  m.other_weight_bytes = f.number_or("other_weight_bytes", 0.0);
  m.active_params = f.number("active_params", pos);
  m.compute_dtype = f.string_or("compute_dtype", "bf16");
  m.max_context = f.integer("max_context", pos);
  if (m.layers_linear > 0) {
    LinearAttentionSpec l;
    l.conv_dim = f.integer("linear_attention.conv_dim");
    l.conv_kernel = f.integer("linear_attention.conv_kernel");
    l.conv_dtype_bytes = f.integer_or("linear_attention.conv_dtype_bytes", 2);
    l.v_heads = f.integer("linear_attention.v_heads");
    l.v_dim = f.integer("linear_attention.v_dim");
    l.k_dim = f.integer("linear_attention.k_dim");
    l.ssm_dtype_bytes = f.integer_or("linear_attention.ssm_dtype_bytes", 2);
    m.linear = l;
  }
  if (f.has("moe")) {
    MoeSpec moe;
    moe.experts = f.integer("moe.experts");
    moe.top_k = f.integer("moe.top_k", JsonRange::between(1, moe.experts));
    moe.routed_weight_bytes = f.number("moe.routed_weight_bytes");
    m.moe = moe;
  }
  if (f.has("mtp")) {
    MtpSpec mtp;
    mtp.weight_bytes = f.number("mtp.weight_bytes");
    mtp.draft_kv_layers = f.integer_or("mtp.draft_kv_layers", 1);
    mtp.moe_share_of_weights = f.number_or("mtp.moe_share_of_weights", 0.0);
    m.mtp = mtp;
  }
  return m;
}

HardwareSpec load_hardware_spec(const std::string& name_or_path) {
  auto [j, source] = read_spec(name_or_path, builtin_hardware_json(), "hardware");
  const JsonReader f(j, source);
  const auto pos = JsonRange::positive(), fraction = JsonRange::fraction();
  HardwareSpec h;
  h.name = f.string("name");
  h.hbm_bytes = f.number("hbm_bytes");
  h.hbm_usable_bytes = f.number_or("hbm_usable_bytes", h.hbm_bytes);
  f.check("hbm_usable_bytes", h.hbm_usable_bytes, pos);
  h.hbm_bandwidth = f.number("hbm_bandwidth", pos);
  for (const auto& [dtype, peak] : f.object("peak_flops", true).entries()) h.peak_flops[dtype] = peak.number("");
  h.nvlink_bandwidth = f.number("nvlink_bandwidth_one_way", pos);
  h.host_link_bandwidth = f.number("host_link_bandwidth", pos);
  h.eff_hbm = f.number("efficiency.hbm", fraction);
  h.eff_gemm = f.number("efficiency.gemm", fraction);
  h.eff_attention = f.number("efficiency.attention", fraction);
  h.eff_nvlink = f.number("efficiency.nvlink", fraction);
  h.eff_host_link = f.number("efficiency.host_link", fraction);
  h.allreduce_alpha_s = f.number("allreduce_alpha_s");
  h.launch_cuda_graph_s = f.number("launch_overhead_s.cuda_graph");
  h.launch_eager_s = f.number("launch_overhead_s.eager");
  h.per_step_cpu_s = f.number("launch_overhead_s.per_step_cpu");
  return h;
}

HardwareSpec load_hardware_spec(const std::string& name_or_path, const std::string& profile_path) {
  HardwareSpec h = load_hardware_spec(name_or_path);
  if (!profile_path.empty()) attach_hardware_profile(h, load_hardware_profile(profile_path));
  return h;
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> out;
  for (const auto& [k, v] : builtin_model_json()) out.push_back(k);
  return out;
}
std::vector<std::string> builtin_hardware_names() {
  std::vector<std::string> out;
  for (const auto& [k, v] : builtin_hardware_json()) out.push_back(k);
  return out;
}

}  // namespace agentperf::sim
