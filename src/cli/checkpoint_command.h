// `agentperf checkpoint`: locate and validate a model checkpoint.
#pragma once
#include <memory>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct CheckpointCommand;
std::shared_ptr<CheckpointCommand> add_checkpoint_command(CLI::App& app);
int execute_checkpoint_command(CheckpointCommand& cc);  // -1 when not selected

}  // namespace agentperf::cli
