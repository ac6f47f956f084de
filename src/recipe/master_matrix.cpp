#include "recipe/master_matrix.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "common/error.h"
#include "recipe/inferencex_map.h"
#include "recipe/point_engine_config.h"

namespace agentperf::recipe {

std::string MatrixRow::shape() const {
  std::string s = (role.empty() ? "" : role + " " + std::to_string(workers) + "x ") + "TP" + std::to_string(tp);
  if (ep > 1) s += " EP" + std::to_string(ep);
  if (dp_attn) s += " DPA";
  if (pp > 1) s += " PP" + std::to_string(pp);
  if (pcp > 1) s += " PCP" + std::to_string(pcp);
  s += spec_decoding == "none" ? "" : ", " + spec_decoding;
  if (kv_offloading == "dram") s += ", dram (" + kv_offload_backend + ")";
  return s;
}

std::vector<MatrixRow> plan_matrix(const MasterConfig& mc) {
  std::vector<MatrixRow> out;
  for (const auto& key : mc.agentic_keys()) {
    const Recipe r = mc.entry(key);
    const auto points = expand(r);
    std::optional<sim::ModelSpec> model;
    std::optional<sim::HardwareSpec> hw;
    if (!r.sim_model_spec.empty()) {
      model = sim::load_model_spec(r.sim_model_spec);
      hw = sim::load_hardware_spec(r.sim_hardware_spec);
    }
    const RunnerRow* runner = find_runner(r.runner);
    // Engine shapes in first-seen order, each planned at its largest conc.
    std::map<std::tuple<std::string, std::string, int, bool, std::string, std::string, std::string, std::int64_t>, std::size_t> index;
    std::vector<std::pair<MatrixRow, PointEngine>> shapes;
    for (const auto& p : points) {
      const auto engines = engines_for(r, p, sim::EngineCosts{}, model ? &*model : nullptr, hw ? &*hw : nullptr);
      for (const auto& pe : engines) {
        MatrixRow row;
        row.key = key;
        row.model = r.model;
        row.precision = r.precision;
        row.framework = r.framework;
        row.gpu = runner && *runner->hardware ? runner->hardware : r.runner;
        row.model_spec = r.sim_model_spec;
        row.role = pe.role;
        const bool decode = pe.role == "decode";
        const auto& w = !p.entry->multinode() ? std::optional<WorkerSpec>() : decode ? p.entry->decode : p.entry->prefill;
        row.workers = w ? w->num_worker : 1;
        row.tp = w ? w->tp : p.entry->tp;
        row.ep = w ? w->ep : p.entry->ep;
        row.pp = w ? w->pp : p.entry->pp;
        row.pcp = w ? w->pcp : p.entry->pcp;
        row.dp_attn = w ? w->dp_attn : p.entry->dp_attn;
        row.gpus = pe.gpus;
        row.dp = pe.dp;
        row.rank_tp = pe.config.tp;
        // A TensorRT-LLM role without speculative_config runs no draft.
        row.spec_decoding = pe.trtllm && pe.trtllm->max_draft_len == 0 ? "none" : p.entry->spec_decoding;
        row.kv_offloading = pe.config.hicache.enabled ? "dram" : "none";
        // A TensorRT-LLM recipe's host cache is its own offload ("native"),
        // sized by the recipe, whatever the entry declares.
        row.kv_offload_backend = !pe.config.hicache.enabled              ? ""
                                 : !p.entry->kv_offload_backend.empty() ? p.entry->kv_offload_backend
                                 : pe.trtllm                            ? "native"
                                                                        : "";
        row.total_cpu_dram_gb = pe.config.hicache.enabled ? p.total_cpu_dram_gb : 0;
        row.hicache_size_gb = pe.config.hicache.enabled ? std::llround(pe.config.hicache.size_gb) : 0;
        row.max_conc = p.conc;
        for (const auto& line : pe.sizing) row.sizing += (row.sizing.empty() ? "" : "; ") + line;
        const auto k = std::make_tuple(row.role, row.shape(), row.ep, row.dp_attn, row.spec_decoding, row.kv_offloading,
                                       row.kv_offload_backend, row.total_cpu_dram_gb);
        auto it = index.find(k);
        if (it == index.end()) {
          index.emplace(k, shapes.size());
          shapes.emplace_back(row, pe);
        } else if (p.conc > shapes[it->second].first.max_conc) {
          shapes[it->second] = {row, pe};
        }
      }
    }
    for (auto& [row, pe] : shapes) {
      if (!model) {
        row.status = MatrixRow::Status::no_spec;
        row.why = r.sim_missing;
      } else {
        try {
          row.plan = sim::plan_memory(pe.model ? *pe.model : *model, *hw, pe.config);
          row.status = MatrixRow::Status::planned;
        } catch (const UserError& e) {
          row.status = MatrixRow::Status::does_not_fit;
          row.why = e.what();
        }
      }
      out.push_back(std::move(row));
    }
  }
  return out;
}

MatrixCoverage coverage(const std::vector<MatrixRow>& rows) {
  MatrixCoverage c;
  std::set<std::string> entries, with_spec;
  using Tuple = std::tuple<std::string, std::string, std::string, int, int, bool>;
  std::set<Tuple> tuples, spec_tuples, planned;
  std::set<Tuple> failed;
  for (const auto& r : rows) {
    entries.insert(r.key);
    if (!r.model_spec.empty()) with_spec.insert(r.key);
    ++c.rows;
    const Tuple t{r.model, r.precision, r.gpu, r.tp * r.pcp, r.ep, r.dp_attn};
    tuples.insert(t);
    switch (r.status) {
      case MatrixRow::Status::planned:
        ++c.rows_planned;
        spec_tuples.insert(t);
        planned.insert(t);
        break;
      case MatrixRow::Status::does_not_fit:
        ++c.rows_not_fitting;
        spec_tuples.insert(t);
        failed.insert(t);
        break;
      case MatrixRow::Status::no_spec:
        ++c.rows_no_spec;
        break;
    }
  }
  c.entries = static_cast<int>(entries.size());
  c.entries_with_spec = static_cast<int>(with_spec.size());
  c.tuples = static_cast<int>(tuples.size());
  c.tuples_with_spec = static_cast<int>(spec_tuples.size());
  // A tuple counts as planned when every engine of that shape planned.
  int ok = 0;
  for (const auto& t : planned)
    if (!failed.count(t)) ++ok;
  c.tuples_planned = ok;
  return c;
}

}  // namespace agentperf::recipe
