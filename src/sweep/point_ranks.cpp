#include "sweep/point_ranks.h"

namespace agentperf::sweep {

PointRanks point_ranks(const recipe::PointEngine& pe, const sim::ModelSpec& model, const sim::HardwareSpec& hw,
                       const sim::EngineConfig& cfg) {
  PointRanks out;
  const sim::ModelSpec& rank_model = pe.model ? *pe.model : model;
  for (int i = 0; i < pe.dp * pe.workers; ++i) {
    out.owned.push_back(std::make_unique<sim::Engine>(rank_model, hw, cfg));
    out.ranks.push_back(out.owned.back().get());
  }
  const bool several = out.ranks.size() > 1;
  out.routing_headers = several;  // the entries' DP arms run behind a session-sticky router
  out.options.policy = several ? route::Policy::session_sticky : route::Policy::round_robin;
  out.options.lockstep_ranks = pe.dp > 1 ? pe.dp : 1;
  return out;
}

}  // namespace agentperf::sweep
