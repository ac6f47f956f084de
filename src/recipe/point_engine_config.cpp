#include "recipe/point_engine_config.h"

namespace agentperf::recipe {

sim::EngineConfig engine_config_for(const ExpandedPoint& p, const sim::EngineCosts& costs) {
  sim::EngineConfig c;
  c.scheduler = sim::SchedulerKind::sglang;  // the recipes launch SGLang
  c.costs = costs;
  c.tp = p.entry->tp;
  c.mem_fraction_static = 0.80;
  c.max_running_requests = p.max_running_requests;
  c.cuda_graph_max_bs = p.cuda_graph_max_bs;
  c.spec.enabled = p.entry->spec_decoding == "mtp";
  if (p.entry->kv_offloading == "dram") {
    c.page_size = 64;
    c.hicache.enabled = true;
    c.hicache.size_gb = static_cast<double>(p.hicache_size_gb);
    c.hicache.write_policy = sim::WritePolicy::write_through_selective;
  }
  return c;
}

}  // namespace agentperf::recipe
