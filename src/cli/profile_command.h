// `agentperf profile`: benchmark an OpenAI-compatible endpoint with
// synthetic prompts in closed-loop (--concurrency) or open-loop
// (--request-rate) mode, and write AIPerf-compatible results.
#pragma once
#include "common/output_folder.h"
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "load/profile_config.h"
#include "common/defaults.h"
#include "metrics/export.h"
#include "load/metrics_scraper.h"

namespace agentperf::cli {

// Text forms of options that need parsing after CLI11 has read them.
struct ProfileCliText {
  std::vector<std::string> headers;
  std::vector<std::string> extra_inputs;
  std::string endpoint_type = defaults::kEndpoint;
  std::string arrival = "poisson";
  std::string prompt_format = "auto";
  std::string token_id_range;
  std::vector<std::string> describe;  // --describe KEY=VALUE (run_descriptions.h)
};

// Registers every profile option on `cmd` (shared with `agentperf run`).
void add_profile_options(CLI::App& cmd, ProfileConfig& cfg, ProfileCliText& text);
// The option groups one by one (`sim predict` takes load, prompts, output).
void add_target_options(CLI::App& cmd, ClientConfig& cfg, ProfileCliText& text);
void add_load_options(CLI::App& cmd, LoadConfig& cfg, ProfileCliText& text);
void add_prompt_length_options(CLI::App& cmd, LoadConfig& cfg);
void add_prompt_encoding_options(CLI::App& cmd, ClientConfig& cfg, ProfileCliText& text);
void add_client_options(CLI::App& cmd, ClientConfig& cfg);
void add_output_options(CLI::App& cmd, RunOutputConfig& cfg);

// Turns the text forms into cfg fields; throws UserError naming the option.
void finish_client_options(ClientConfig& cfg, const ProfileCliText& text);
void finish_profile_options(ProfileConfig& cfg, const ProfileCliText& text);

// Server-metrics scraping around a run (null when not asked for).
std::unique_ptr<MetricsScraper> start_server_metrics(const ClientConfig& client, const RunOutputConfig& out);
void stop_server_metrics(std::unique_ptr<MetricsScraper>& s, const RunOutputConfig& out);

// The run's result folder, locked for the run (common/output_folder.h): -o
// as given, or a new folder under it named for the model, endpoint and load
// (`out.artifact_dir` is set to it). Throws UserError (exit 2) when the
// folder is in use or holds results without --overwrite.
std::unique_ptr<OutputFolder> open_run_folder(RunOutputConfig& out, const std::string& model,
                                              EndpointType endpoint, const std::string& load,
                                              const std::string& cli_command);
// After a run into a default folder: artifacts/latest points at it.
void mark_latest_run(const RunOutputConfig& out);

// Runs the benchmark described by cfg; returns the process exit code
// (common/run_control.h). `description`: what the caller knows of the
// server (`run`: the embedded simulator); the served model, load and
// workload are filled here.
int run_profile(ProfileConfig cfg, const std::string& cli_command, RunDescription description = {});

// --repeat N: run_profile N times (each its own folder -o/run-i and fresh
// prompts) and the spread across runs (-o/repeat_summary.json, console);
// returns the first failing run's exit code, else 0. N <= 1: run_profile.
int run_profile_repeated(ProfileConfig cfg, const std::string& cli_command, RunDescription description = {});

// The end of every measured run (profile, replay, run): writes the aggregate,
// prints the summary even when a file cannot be written, and returns the
// exit code: write_failed if any result file failed, else the verdict's.
// `print_more` adds the command's own lines after the metric table;
// print_table false leaves out the table and the Results line.
int finish_measured_run(const nlohmann::ordered_json& agg, const RunVerdict& verdict, const std::filesystem::path& dir,
                        const std::optional<std::string>& records_error, bool quiet,
                        const std::function<void()>& print_more = {}, bool print_table = true);

}  // namespace agentperf::cli
