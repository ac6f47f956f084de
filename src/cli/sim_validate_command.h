// `agentperf sim validate`: the simulator against published measurements
// (sim/validation.h), and the fit of engine costs on their fitting half.
#pragma once
#include <memory>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct SimValidateCommand;
std::shared_ptr<SimValidateCommand> add_sim_validate_command(CLI::App& sim);
// Returns -1 when `sim validate` was not selected.
int execute_sim_validate_command(SimValidateCommand& vc);

}  // namespace agentperf::cli
