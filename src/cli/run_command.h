// `agentperf run`: the main job. With no --url it starts the embedded
// default target in-process and benchmarks it end to end.
#pragma once
#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct RunCommand;
// Registers the subcommand; the returned object must outlive parsing.
std::shared_ptr<RunCommand> add_run_command(CLI::App& app);
bool run_command_selected(const RunCommand& rc);
int execute_run_command(RunCommand& rc, const std::string& cli_command);

}  // namespace agentperf::cli
