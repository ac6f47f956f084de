// Streams finished records to profile_export.jsonl while the run goes.
//
// Why: a run that ends badly (SIGKILL, OOM, a crash, a node lost to a Slurm
// time limit) must still leave every finished request on disk, and writing
// 150k records at the end of a run took ~5.5 s (~37 µs and ~1.9 KB each) on
// the thread that should be printing the summary.
//
// How: push() copies the record into a queue under a mutex (the worker's
// whole cost; no JSON here); one writer thread wakes as soon as anything is
// queued, turns everything queued into JSON lines and writes and flushes
// them, so a finished record is in the kernel's page cache (which survives
// the process: SIGKILL loses nothing written) as soon as the writer has
// serialised it, not after a timer; records finishing while a batch is
// written form the next batch. Lines are in completion order (as AIPerf's
// exporter writes them); every line is a whole record.
//
// What SIGKILL can still lose: the records queued or being serialised at
// the instant of the kill (the writer's backlog, microseconds at normal
// rates), and requests in flight (they have no record yet). A lost machine
// (power, kernel panic) can also lose what the page cache had not written
// back; the writer does not fsync per batch.
//
// A write that fails (disk full, quota, I/O error) does not stop the run:
// the writer stops writing, remembers the first error, and close() returns
// it so the command can print the summary anyway and exit with
// exit_code::write_failed. The records stay in memory for the aggregate.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/record.h"

namespace agentperf {

class RecordStreamWriter final : public RecordSink {
 public:
  // Creates (truncates) the file; throws UserError naming it if it cannot.
  explicit RecordStreamWriter(std::filesystem::path path);
  ~RecordStreamWriter() override;
  RecordStreamWriter(const RecordStreamWriter&) = delete;
  RecordStreamWriter& operator=(const RecordStreamWriter&) = delete;

  void on_record(const RequestRecord& r) override;

  // Writes what is queued, flushes, closes the file and stops the thread.
  // Returns the first write error ("<path>: No space left on device"), if any.
  std::optional<std::string> close();

  std::uint64_t lines_written() const;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void loop();

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<RequestRecord> queue_;
  bool closing_ = false;
  std::optional<std::string> error_;
  std::uint64_t written_ = 0;
  std::thread thread_;
};

// Free bytes on the file system holding `dir`, or nullopt if unknown.
std::optional<std::uint64_t> free_disk_bytes(const std::filesystem::path& dir);

// Rough size of the result files of a run: ~2 KB of JSON per record plus
// ~12 bytes per streamed output token (inter-chunk latencies), and the
// aggregate. Used for the up-front disk check.
std::uint64_t estimate_result_bytes(std::uint64_t requests, std::uint64_t output_tokens_per_request);

// Throws UserError (exit 2) when `dir` has less free space than `need` bytes,
// naming both, before anything is sent.
void check_free_disk(const std::filesystem::path& dir, std::uint64_t need, const std::string& what);

}  // namespace agentperf
