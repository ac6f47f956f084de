// `agentperf report`: the HTML report over result directories.
#pragma once
#include <memory>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct ReportCommand;
std::shared_ptr<ReportCommand> add_report_command(CLI::App& app);
int execute_report_command(ReportCommand& rc);  // -1 when not selected

}  // namespace agentperf::cli
