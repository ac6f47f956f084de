#include "cli/report_command.h"

#include <cstdio>
#include <filesystem>
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
  std::string markdown;  // empty: the HTML file's name with .md
  report::ReportOptions opts;
  std::vector<std::string> gpu_metrics;  // DIR=FILE, or FILE with one result directory
};

namespace {
// report.html -> report.md, beside it; another name gets .md appended.
std::string markdown_path(const std::string& html) {
  std::filesystem::path p(html);
  if (p.extension() == ".html" || p.extension() == ".htm") return p.replace_extension(".md").string();
  return html + ".md";
}
}  // namespace

std::shared_ptr<ReportCommand> add_report_command(CLI::App& app) {
  auto rc = std::make_shared<ReportCommand>();
  rc->cmd = app.add_subcommand("report", "Write one self-contained HTML report over result directories");
  rc->cmd->add_option("results", rc->dirs, "Result directories (profile, replay, run or sim predict -o)")->required();
  rc->cmd->add_option("-o,--output", rc->output, "HTML file to write")->capture_default_str();
  rc->cmd->add_option("--gpus", rc->opts.gpus, "GPUs per run for throughput per GPU (default: from the results, else 1)")
      ->transform(int_in(0, 1000000));
  rc->cmd->add_option("--markdown", rc->markdown, "Markdown summary to write (default: the HTML file's name with .md)");
  rc->cmd->add_option("--gpu-price-per-hour", rc->opts.gpu_price_per_hour,
                      "Dollars per GPU-hour: adds cost per million tokens")
      ->check(real_in(0, 1e6, true));
  rc->cmd->add_option("--gpu-power-watts", rc->opts.gpu_power_watts, "Watts drawn per GPU: adds tokens per joule")
      ->check(real_in(0, 1e5, true));
  rc->cmd->add_option("--gpu-metrics", rc->gpu_metrics,
                      "DIR=CSV: GPU telemetry of a result directory (nvidia-smi --format=csv, or AIPerf's "
                      "gpu_telemetry_export.jsonl); default: the directory's gpu_metrics.csv")
      ->allow_extra_args(false);
  return rc;
}

int execute_report_command(ReportCommand& rc) {
  if (!rc.cmd->parsed()) return -1;
  for (const auto& g : rc.gpu_metrics) {
    const auto eq = g.find('=');
    if (eq == std::string::npos) {
      if (rc.dirs.size() != 1)
        throw UserError("--gpu-metrics " + g + ": name the result directory it belongs to, as DIR=" + g);
      rc.opts.gpu_metrics[rc.dirs[0]] = g;
    } else {
      rc.opts.gpu_metrics[g.substr(0, eq)] = g.substr(eq + 1);
    }
  }
  const auto data = report::report_data(rc.dirs, rc.opts);
  const std::string html = report::render_report(data);
  for (const auto& w : data["warnings"]) std::fprintf(stderr, "report: %s\n", w.get<std::string>().c_str());
  write_file_atomically(rc.output, html);
  const std::string md_path = rc.markdown.empty() ? markdown_path(rc.output) : rc.markdown;
  write_file_atomically(md_path, report::render_markdown(data));
  std::printf("report: %s (%zu runs in %zu groups, %.1f kB), summary %s\n", rc.output.c_str(), data["runs"].size(),
              data["groups"].size(), static_cast<double>(html.size()) / 1024, md_path.c_str());
  return 0;
}

}  // namespace agentperf::cli
