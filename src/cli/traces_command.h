// `agentperf traces synth` and `agentperf traces inspect`.
#pragma once
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct TracesCommand;
std::shared_ptr<TracesCommand> add_traces_command(CLI::App& app);
// Returns -1 when no traces subcommand was selected.
int execute_traces_command(TracesCommand& tc);

}  // namespace agentperf::cli
