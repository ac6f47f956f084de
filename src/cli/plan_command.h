// `agentperf recipe validate|expand` and `agentperf plan`.
#pragma once
#include <memory>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct PlanCommand;
std::shared_ptr<PlanCommand> add_plan_commands(CLI::App& app);
int execute_plan_command(PlanCommand& pc);  // -1 when not selected

}  // namespace agentperf::cli
