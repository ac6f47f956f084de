#include "cli/run_command.h"

#include <cstdio>

#include "cli/profile_command.h"
#include "testserver/openai_scripts.h"
#include "testserver/scripted_server.h"

namespace agentperf::cli {

// Until the engine simulator lands (issue: `agentperf sim`), the embedded
// default target is the paced endpoint: a real in-process HTTP/SSE server
// that answers every completion with a fixed TTFT and inter-token latency.
// It exercises the whole client and measurement path, not an engine model.
struct RunCommand {
  CLI::App* cmd = nullptr;
  ProfileConfig cfg;
  ProfileCliText text;
  bool url_given = false;
  double local_ttft_ms = 20;
  double local_itl_ms = 5;
};

std::shared_ptr<RunCommand> add_run_command(CLI::App& app) {
  auto rc = std::make_shared<RunCommand>();
  rc->cmd = app.add_subcommand("run",
                               "Main job: benchmark the embedded local target (or --url) with sane defaults");
  // Defaults of the main job: small, finishes in seconds.
  rc->cfg.concurrency = 8;
  rc->cfg.request_count = 400;
  rc->cfg.isl = {512, 0, 1};
  rc->cfg.osl = {64, 0, 1};
  rc->cfg.warmup_request_count = 16;
  rc->text.endpoint_type = "completions";
  rc->cfg.url = "";
  add_profile_options(*rc->cmd, rc->cfg, rc->text);
  rc->cmd->add_option("--local-ttft-ms", rc->local_ttft_ms, "Embedded target: time to first token")
      ->capture_default_str()->group("Embedded target");
  rc->cmd->add_option("--local-itl-ms", rc->local_itl_ms, "Embedded target: inter-token latency")
      ->capture_default_str()->group("Embedded target");
  return rc;
}

bool run_command_selected(const RunCommand& rc) { return rc.cmd->parsed(); }

int execute_run_command(RunCommand& rc, const std::string& cli_command) {
  finish_profile_options(rc.cfg, rc.text);
  std::unique_ptr<testserver::ScriptedServer> local;
  if (rc.cfg.url.empty()) {
    local = std::make_unique<testserver::ScriptedServer>(testserver::paced_openai_handler(
        std::chrono::nanoseconds(static_cast<std::int64_t>(rc.local_ttft_ms * 1e6)),
        std::chrono::nanoseconds(static_cast<std::int64_t>(rc.local_itl_ms * 1e6))));
    local->start(0);
    rc.cfg.url = local->url();
    if (!rc.cfg.quiet)
      std::fprintf(stderr, "agentperf: started the embedded target at %s (TTFT %.1f ms, ITL %.1f ms)\n",
                   rc.cfg.url.c_str(), rc.local_ttft_ms, rc.local_itl_ms);
  }
  int code = run_profile(rc.cfg, cli_command);
  if (local) local->stop();
  return code;
}

}  // namespace agentperf::cli
