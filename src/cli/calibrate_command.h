// `agentperf calibrate`: measure a GPU (builds with -DAGENTPERF_CUDA=ON) and
// turn measurements into a hardware profile the simulator and planner load;
// `calibrate engine` probes a live endpoint and fits an engine profile
// (calibrate/engine_probe.h).
#pragma once
#include <memory>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct CalibrateCommand;
std::shared_ptr<CalibrateCommand> add_calibrate_command(CLI::App& app);
int execute_calibrate_command(CalibrateCommand& cc);  // -1 when not selected

}  // namespace agentperf::cli
