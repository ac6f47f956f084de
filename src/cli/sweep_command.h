// `agentperf sweep RECIPE` and `agentperf results list/show/export` (docs/sweep.md).
#pragma once
#include <memory>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct SweepCommand;
std::shared_ptr<SweepCommand> add_sweep_commands(CLI::App& app);
int execute_sweep_command(SweepCommand& sc);  // -1 when not selected

}  // namespace agentperf::cli
