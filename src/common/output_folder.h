// A run's result folder, guarded.
//
// Two runs that share one `-o` folder corrupt it: both append to
// profile_export.jsonl, records interleave and break mid-line, and both then
// write an aggregate that describes the other's requests too (tried: of 60
// records 36-38 survived, 2-3 lines were broken JSON, and both runs said
// VALID). A later run into a folder that holds an earlier run's results
// used to replace them without a word. So a measuring command opens its
// folder through OutputFolder, which
//
//   - takes an exclusive, non-blocking flock(2) on `<folder>/.agentperf.lock`
//     for the whole run; a second run fails at once (exit 2) naming the
//     holder (pid, start time, command line) that the lock file records.
//     flock is released by the kernel when the holder exits, however it
//     exits (SIGKILL included), so a stale lock file never blocks anyone;
//   - refuses a folder that already holds results (profile_export.jsonl or
//     profile_export_aiperf.json) unless `overwrite` is set; with it, the
//     earlier run's result files are removed before anything is written, so
//     no stale file from the earlier run sits beside the new ones.
//
// The default folder is unique per run (default_run_folder): AIPerf's name,
// `artifacts/<model>-<service kind>-<endpoint>-<load>` (ai-dynamo/aiperf
// src/aiperf/common/config/user_config.py, _compute_artifact_directory, at
// 90153c8), plus the run's start time, so that
// back-to-back default runs never meet; `artifacts/latest` links to the
// newest.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace agentperf {

class OutputFolder {
 public:
  // Creates `dir` (and parents), locks it and checks it for earlier results.
  // Throws UserError (exit 2) when it cannot be created, is in use by another
  // run, or holds results and !overwrite. `command` is recorded for a second
  // run's message.
  OutputFolder(const std::filesystem::path& dir, bool overwrite, const std::string& command);
  ~OutputFolder();
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  const std::filesystem::path& path() const { return dir_; }

  // The files whose presence means "this folder holds a run's results".
  static const std::vector<std::string>& result_files();

 private:
  std::filesystem::path dir_;
  int fd_ = -1;
};

// `base/<model>-openai-<endpoint>-<load>-<YYYYMMDD-HHMMSS>`: AIPerf's default
// name (model's '/' as '_', load as "concurrency8" or "request_rate2.5") with
// the start time, a suffix "-2", "-3", ... when that folder exists already.
std::filesystem::path default_run_folder(const std::filesystem::path& base, const std::string& model,
                                         const std::string& endpoint, const std::string& load);

// Points `base/latest` at `folder` (a relative symlink); best effort: a
// filesystem without symlinks is not an error.
void link_latest_run(const std::filesystem::path& base, const std::filesystem::path& folder);

}  // namespace agentperf
