// agentperf: benchmark, plan and route LLM inference under agentic workloads.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/capacity_command.h"
#include "cli/aiperf_compat.h"
#include "cli/calibrate_command.h"
#include "cli/checkpoint_command.h"
#include "cli/cli_suggest.h"
#include "cli/eval_command.h"
#include "cli/plan_command.h"
#include "cli/profile_command.h"
#include "cli/run_descriptions.h"
#include "cli/run_command.h"
#include "cli/replay_command.h"
#include "cli/report_command.h"
#include "cli/route_command.h"
#include "cli/sim_command.h"
#include "cli/sweep_command.h"
#include "cli/traces_command.h"
#include "common/error.h"
#include "common/run_control.h"
#include "common/version.h"

namespace {
std::string join_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    s += argv[i];
  }
  return s;
}
// A message on one line: CLI11 puts some lists on several.
std::string one_line(std::string s) {
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace agentperf;
  CLI::App app{"agentperf: a native load generator and toolkit for LLM inference under agentic workloads"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(version()));
  const std::string exit_codes =
      "Exit codes (docs/exit-codes.md): 0 valid run; 1 run finished but not valid (errors above --max-error-rate, "
      "nothing succeeded, stopped by its own gate, failed accuracy check or sweep point); 2 usage or input error; "
      "3 results could not be written; 70 internal error; 130 stopped by SIGINT; 143 stopped by SIGTERM (partial "
      "results written, marked complete: false).";
  app.footer(exit_codes);

  auto* profile = app.add_subcommand("profile", "Benchmark an OpenAI-compatible endpoint with synthetic prompts");
  ProfileConfig profile_cfg;
  cli::ProfileCliText profile_text;
  cli::add_profile_options(*profile, profile_cfg, profile_text);

  auto run = cli::add_run_command(app);
  auto sim = cli::add_sim_command(app);
  auto traces = cli::add_traces_command(app);
  auto replay = cli::add_replay_command(app);
  auto checkpoint = cli::add_checkpoint_command(app);
  auto eval = cli::add_eval_command(app);
  auto report = cli::add_report_command(app);
  auto plan = cli::add_plan_commands(app);
  auto calibrate = cli::add_calibrate_command(app);
  auto route = cli::add_route_command(app);
  auto sweep = cli::add_sweep_commands(app);
  auto capacity = cli::add_capacity_command(app);

  for (auto* sub : app.get_subcommands([](CLI::App*) { return true; })) sub->footer(exit_codes);
  // AIPerf's `profile --scenario ...` (as InferenceX launches it, also when
  // this binary runs under the name `aiperf`) becomes a replay
  // (cli/aiperf_compat.h).
  std::vector<std::string> args(argv + 1, argv + argc);
  std::optional<cli::AiperfTranslation> aiperf;
  if (cli::is_aiperf_scenario_command(args)) {
    try {
      aiperf = cli::translate_aiperf_profile(args);
    } catch (const UserError& e) {
      std::fprintf(stderr, "agentperf: error: %s\n", e.what());
      return exit_code::usage;
    }
    args = aiperf->args;
    cli::set_replay_aiperf_scenario(*replay, *aiperf);
    for (const auto& f : aiperf->accepted_not_modelled)
      std::fprintf(stderr, "agentperf: %s: accepted, not modelled (listed in the results' metadata)\n", f.c_str());
    for (const auto& v : aiperf->violations)
      std::fprintf(stderr, "agentperf: scenario rule broken under --unsafe-override: %s (submission_valid: false)\n",
                   v.c_str());
  }
  std::vector<char*> parse_argv{argv[0]};
  for (auto& a : args) parse_argv.push_back(a.data());
  try {
    app.parse(static_cast<int>(parse_argv.size()), parse_argv.data());
  } catch (const CLI::ParseError& e) {
    // --help and --version print and exit 0 as CLI11 does. Every other
    // parse error is a usage error (exit 2, docs/exit-codes.md), not
    // CLI11's internal 104-114, on one line as the other input errors are.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    // A mistyped command or flag: name it and the nearest real one.
    if (const auto why = cli::explain_unknown_argument(app, args)) {
      std::fprintf(stderr, "agentperf: error: %s\n", why->c_str());
      return exit_code::usage;
    }
    std::fprintf(stderr, "agentperf: error: %s\n", one_line(e.what()).c_str());
    return exit_code::usage;
  }
  const std::string command = join_args(argc, argv);
  try {
    if (profile->parsed()) {
      cli::finish_profile_options(profile_cfg, profile_text);
      RunDescription described;
      cli::apply_describe(profile_text.describe, described);
      return cli::run_profile_repeated(profile_cfg, command, described);
    }
    if (cli::run_command_selected(*run)) return cli::execute_run_command(*run, command);
    if (int code = cli::execute_sim_command(*sim, command); code >= 0) return code;
    if (int code = cli::execute_traces_command(*traces); code >= 0) return code;
    if (int code = cli::execute_replay_command(*replay, command); code >= 0) return code;
    if (int code = cli::execute_checkpoint_command(*checkpoint); code >= 0) return code;
    if (int code = cli::execute_eval_command(*eval); code >= 0) return code;
    if (int code = cli::execute_report_command(*report); code >= 0) return code;
    if (int code = cli::execute_plan_command(*plan); code >= 0) return code;
    if (int code = cli::execute_calibrate_command(*calibrate); code >= 0) return code;
    if (int code = cli::execute_route_command(*route); code >= 0) return code;
    if (int code = cli::execute_sweep_command(*sweep); code >= 0) return code;
    if (int code = cli::execute_capacity_command(*capacity, command); code >= 0) return code;
  } catch (const UserError& e) {
    std::fprintf(stderr, "agentperf: error: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "agentperf: internal error: %s\n", e.what());
    return 70;
  }
  return 0;
}
