// The simulated engine's flags for a recipe point, as the launcher sets them
// for SGLang (mem fraction 0.80, 2 x conc running, graph cap, MTP, HiCache
// with page 64 and write_through_selective when the point offloads to DRAM).
#pragma once
#include "recipe/recipe.h"
#include "sim/engine_config.h"

namespace agentperf::recipe {

// costs: the engine profile predictions use (sim/engine_costs.h).
sim::EngineConfig engine_config_for(const ExpandedPoint& p, const sim::EngineCosts& costs);

}  // namespace agentperf::recipe
