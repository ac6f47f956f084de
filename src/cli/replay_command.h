// `agentperf replay`: AgentX-style replay of Weka traces.
#pragma once
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct ReplayCommand;
std::shared_ptr<ReplayCommand> add_replay_command(CLI::App& app);
int execute_replay_command(ReplayCommand& rc, const std::string& cli_command);  // -1 when not selected

}  // namespace agentperf::cli
