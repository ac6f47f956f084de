// `agentperf sim predict` and `agentperf sim serve`.
#pragma once
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct SimCommand;
std::shared_ptr<SimCommand> add_sim_command(CLI::App& app);
// Returns -1 when no sim subcommand was selected.
int execute_sim_command(SimCommand& sc, const std::string& cli_command);

}  // namespace agentperf::cli
