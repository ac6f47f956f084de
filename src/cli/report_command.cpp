#include "cli/report_command.h"

#include <cstdio>
#include <fstream>

#include "cli/cli_numbers.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "report/report.h"

namespace agentperf::cli {

struct ReportCommand {
  CLI::App* cmd = nullptr;
  std::vector<std::string> dirs;
  std::string output = "report.html";
  report::ReportOptions opts;
};

std::shared_ptr<ReportCommand> add_report_command(CLI::App& app) {
  auto rc = std::make_shared<ReportCommand>();
  rc->cmd = app.add_subcommand("report", "Write one self-contained HTML report over result directories");
  rc->cmd->add_option("results", rc->dirs, "Result directories (profile, replay, run or sim predict -o)")->required();
  rc->cmd->add_option("-o,--output", rc->output, "HTML file to write")->capture_default_str();
  rc->cmd->add_option("--gpus", rc->opts.gpus, "GPUs per run for throughput per GPU (default: from the results, else 1)")
      ->transform(int_in(0, 1000000));
  return rc;
}

int execute_report_command(ReportCommand& rc) {
  if (!rc.cmd->parsed()) return -1;
  const auto data = report::report_data(rc.dirs, rc.opts);
  const std::string html = report::render_report(data);
  write_file_atomically(rc.output, html);
  std::printf("report: %s (%zu runs, %.1f kB)\n", rc.output.c_str(), data["runs"].size(),
              static_cast<double>(html.size()) / 1024);
  return 0;
}

}  // namespace agentperf::cli
