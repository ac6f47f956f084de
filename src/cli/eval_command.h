// `agentperf eval gsm8k`: few-shot GSM8K accuracy against an endpoint.
#pragma once
#include <memory>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct EvalCommand;
std::shared_ptr<EvalCommand> add_eval_command(CLI::App& app);
int execute_eval_command(EvalCommand& ec);  // -1 when not selected

}  // namespace agentperf::cli
