// Internal to src/recipe: the fields a recipe and an InferenceX master-config
// entry share in their agentic-coding scenario blocks, read by one rule each
// (recipe.cpp and master_config.cpp).
#pragma once
#include <optional>
#include <vector>

#include "recipe/recipe.h"
#include "recipe/yaml_node.h"

namespace agentperf::recipe::detail {

// A search-space entry's concurrencies: conc-list, or conc-start..conc-end
// doubled as InferenceX does (conc_range), never both.
inline std::vector<int> read_concs(const Node& en) {
  const bool list = en.has("conc-list"), range = en.has("conc-start") || en.has("conc-end");
  if (list && range) en["conc-list"].fail("give conc-list or conc-start/conc-end, not both");
  std::vector<int> out;
  if (list) {
    auto cl = en["conc-list"];
    if (!cl.is_seq() || cl.size() == 0) cl.fail("expected a non-empty list of concurrencies");
    for (std::size_t k = 0; k < cl.size(); ++k) {
      const int c = cl.at(k).as<int>("a positive integer");
      if (c < 1) cl.at(k).fail("must be at least 1");
      out.push_back(c);
    }
    return out;
  }
  const int a = en.get<int>("conc-start", "an integer (or give conc-list)");
  const int z = en.get<int>("conc-end", "an integer");
  if (a < 1 || z < a) en["conc-end"].fail("conc-start..conc-end must be a range of positive integers");
  return conc_range(a, z);
}

// A scenario block's dram-utilization, in (0, 1]; absent stays unset.
inline std::optional<double> read_dram_utilization(const Node& block) {
  if (!block.has("dram-utilization")) return std::nullopt;
  const double u = block.get<double>("dram-utilization", "a number in (0, 1]");
  if (!(u > 0 && u <= 1)) block["dram-utilization"].fail("must be in (0, 1]");
  return u;
}

}  // namespace agentperf::recipe::detail
