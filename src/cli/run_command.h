// `agentperf run`: the main job, the README's first command. With no --url
// it starts the engine simulator in-process as an OpenAI-compatible server
// (`sim serve`, Qwen3-8B on an H200 by default), benchmarks it end to end
// with the real HTTP client (`profile`: warmup, then the profiling requests,
// with server-metrics scraping), writes the AIPerf-shaped results, and then
// prints the simulator's own virtual-time prediction of the same workload
// (`sim predict`) so measured and predicted numbers sit side by side. With
// --url it is `profile` against that server.
#pragma once
#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct RunCommand;
// Registers the subcommand; the returned object must outlive parsing.
std::shared_ptr<RunCommand> add_run_command(CLI::App& app);
bool run_command_selected(const RunCommand& rc);
int execute_run_command(RunCommand& rc, const std::string& cli_command);

}  // namespace agentperf::cli
