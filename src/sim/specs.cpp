#include "sim/specs.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "sim/builtin_specs.h"
#include "sim/hardware_profile.h"

namespace agentperf::sim {
namespace {
using json = nlohmann::json;

// Reads a field, naming the file and the field when it is missing or wrong.
class FieldReader {
 public:
  FieldReader(const json& j, std::string source) : j_(j), source_(std::move(source)) {}

  template <class T>
  T get(const std::string& path, std::optional<T> fallback = std::nullopt) const {
    const json* node = &j_;
    std::size_t start = 0;
    while (true) {
      const auto dot = path.find('.', start);
      const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!node->is_object() || !node->contains(key)) {
        if (fallback) return *fallback;
        throw UserError(source_ + ": missing field '" + path + "'");
      }
      node = &(*node)[key];
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    try {
      return node->get<T>();
    } catch (const json::exception&) {
      throw UserError(source_ + ": field '" + path + "' has the wrong type (" + node->dump() + ")");
    }
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  void positive(const std::string& path, double v) const {
    if (!(v > 0) || !std::isfinite(v)) throw UserError(source_ + ": field '" + path + "' must be > 0, got " + std::to_string(v));
  }

 private:
  const json& j_;
  std::string source_;
};

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
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) throw UserError(name_or_path + ": not valid JSON");
  return {j, name_or_path};
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
  FieldReader f(j, source);
  ModelSpec m;
  m.name = f.get<std::string>("name");
  m.served_model_name = f.get<std::string>("served_model_name", m.name);
  m.layers_full = f.get<int>("layers_full_attention");
  m.layers_linear = f.get<int>("layers_linear_attention", 0);
  m.hidden = f.get<int>("hidden_size");
  m.q_heads = f.get<int>("q_heads");
  m.kv_heads = f.get<int>("kv_heads");
  m.head_dim = f.get<int>("head_dim");
  m.kv_dtype_bytes = f.get<int>("kv_dtype_bytes");
  m.dense_weight_bytes = f.get<double>("dense_weight_bytes");
  m.other_weight_bytes = f.get<double>("other_weight_bytes", 0.0);
  m.active_params = f.get<double>("active_params");
  m.compute_dtype = f.get<std::string>("compute_dtype", std::string("bf16"));
  m.max_context = f.get<int>("max_context");
  for (auto [k, v] : {std::pair{"layers_full_attention", double(m.layers_full)}, {"hidden_size", double(m.hidden)},
                      {"q_heads", double(m.q_heads)}, {"kv_heads", double(m.kv_heads)},
                      {"head_dim", double(m.head_dim)}, {"kv_dtype_bytes", double(m.kv_dtype_bytes)},
                      {"dense_weight_bytes", m.dense_weight_bytes}, {"active_params", m.active_params},
                      {"max_context", double(m.max_context)}})
    f.positive(k, v);
  if (m.layers_linear > 0) {
    LinearAttentionSpec l;
    l.conv_dim = f.get<int>("linear_attention.conv_dim");
    l.conv_kernel = f.get<int>("linear_attention.conv_kernel");
    l.conv_dtype_bytes = f.get<int>("linear_attention.conv_dtype_bytes", 2);
    l.v_heads = f.get<int>("linear_attention.v_heads");
    l.v_dim = f.get<int>("linear_attention.v_dim");
    l.k_dim = f.get<int>("linear_attention.k_dim");
    l.ssm_dtype_bytes = f.get<int>("linear_attention.ssm_dtype_bytes", 2);
    m.linear = l;
  }
  if (f.has("moe")) {
    MoeSpec moe;
    moe.experts = f.get<int>("moe.experts");
    moe.top_k = f.get<int>("moe.top_k");
    moe.routed_weight_bytes = f.get<double>("moe.routed_weight_bytes");
    if (moe.top_k <= 0 || moe.top_k > moe.experts) throw UserError(source + ": field 'moe.top_k' must be in 1..moe.experts");
    m.moe = moe;
  }
  if (f.has("mtp")) {
    MtpSpec mtp;
    mtp.weight_bytes = f.get<double>("mtp.weight_bytes");
    mtp.draft_kv_layers = f.get<int>("mtp.draft_kv_layers", 1);
    mtp.moe_share_of_weights = f.get<double>("mtp.moe_share_of_weights", 0.0);
    m.mtp = mtp;
  }
  return m;
}

HardwareSpec load_hardware_spec(const std::string& name_or_path) {
  auto [j, source] = read_spec(name_or_path, builtin_hardware_json(), "hardware");
  FieldReader f(j, source);
  HardwareSpec h;
  h.name = f.get<std::string>("name");
  h.hbm_bytes = f.get<double>("hbm_bytes");
  h.hbm_usable_bytes = f.get<double>("hbm_usable_bytes", h.hbm_bytes);
  h.hbm_bandwidth = f.get<double>("hbm_bandwidth");
  h.peak_flops = f.get<std::map<std::string, double>>("peak_flops");
  h.nvlink_bandwidth = f.get<double>("nvlink_bandwidth_one_way");
  h.host_link_bandwidth = f.get<double>("host_link_bandwidth");
  h.eff_hbm = f.get<double>("efficiency.hbm");
  h.eff_gemm = f.get<double>("efficiency.gemm");
  h.eff_attention = f.get<double>("efficiency.attention");
  h.eff_nvlink = f.get<double>("efficiency.nvlink");
  h.eff_host_link = f.get<double>("efficiency.host_link");
  h.allreduce_alpha_s = f.get<double>("allreduce_alpha_s");
  h.launch_cuda_graph_s = f.get<double>("launch_overhead_s.cuda_graph");
  h.launch_eager_s = f.get<double>("launch_overhead_s.eager");
  h.per_step_cpu_s = f.get<double>("launch_overhead_s.per_step_cpu");
  for (auto [k, v] : {std::pair{"hbm_usable_bytes", h.hbm_usable_bytes}, {"hbm_bandwidth", h.hbm_bandwidth},
                      {"nvlink_bandwidth_one_way", h.nvlink_bandwidth}, {"host_link_bandwidth", h.host_link_bandwidth}})
    f.positive(k, v);
  for (auto [k, v] : {std::pair{"efficiency.hbm", h.eff_hbm}, {"efficiency.gemm", h.eff_gemm},
                      {"efficiency.attention", h.eff_attention}, {"efficiency.nvlink", h.eff_nvlink},
                      {"efficiency.host_link", h.eff_host_link}})
    if (!(v > 0 && v <= 1)) throw UserError(source + ": field '" + k + "' must be in (0, 1], got " + std::to_string(v));
  if (h.peak_flops.empty()) throw UserError(source + ": field 'peak_flops' must list at least one dtype");
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
