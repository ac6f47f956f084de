// `agentperf route`: the session-sticky, cache-aware router (docs/route.md).
#pragma once
#include <memory>

#include <CLI/CLI.hpp>

namespace agentperf::cli {

struct RouteCommand;
std::shared_ptr<RouteCommand> add_route_command(CLI::App& app);
int execute_route_command(RouteCommand& rc);  // -1 when not selected

}  // namespace agentperf::cli
