// `agentperf replay`: AgentX-style replay of Weka traces.
#pragma once
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct ReplayCommand;
struct AiperfTranslation;
std::shared_ptr<ReplayCommand> add_replay_command(CLI::App& app);
int execute_replay_command(ReplayCommand& rc, const std::string& cli_command);  // -1 when not selected
// The replay runs for AIPerf's `profile --scenario` (cli/aiperf_compat.h):
// its results say so (metadata.scenario, submission_valid and its reasons,
// the AIPerf flags accepted but not modelled).
void set_replay_aiperf_scenario(ReplayCommand& rc, const AiperfTranslation& t);

}  // namespace agentperf::cli
