// `agentperf capacity`: the largest concurrency whose measured runs meet
// every --slo on a live endpoint, the simulator proposing where to look
// (sweep/capacity_search.h; docs/capacity.md).
#pragma once
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct CapacityCommand;
std::shared_ptr<CapacityCommand> add_capacity_command(CLI::App& app);
int execute_capacity_command(CapacityCommand& cc, const std::string& cli_command);  // -1 when not selected

}  // namespace agentperf::cli
