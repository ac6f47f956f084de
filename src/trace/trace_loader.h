// Reads Weka traces from a .jsonl file (one trace per line), a .json file
// (one trace), either optionally zstd-compressed (.zst), or a directory of
// such files (sorted by name), and applies the dataset filters InferenceX
// uses.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "metrics/progress.h"
#include "trace/weka_trace.h"

namespace agentperf::trace {

// Bounds on what reading a trace file may cost (docs/input-limits-files.md).
// Files are streamed record by record, so memory is bounded by the largest
// record, not the file; a .zst file may not decompress to more than the cap
// (a 60 KB zstd bomb expands to gigabytes).
inline constexpr std::uint64_t kDefaultMaxDecompressedBytes = 64ull << 30;  // 64 GiB per .zst file
inline constexpr std::uint64_t kDefaultMaxRecordBytes = 1ull << 30;         // 1 GiB per trace (.jsonl line, .json file)

struct LoadOptions {
  std::optional<std::int64_t> max_context_length;  // drop whole traces whose peak in+out exceeds it
  bool variant_256k = false;                       // drop requests with in+out > 256,000 (the _256k corpus rule)
  std::optional<std::int64_t> num_dataset_entries;  // keep the first N traces after the filters
  std::uint64_t max_decompressed_bytes = kDefaultMaxDecompressedBytes;  // per .zst file
  std::uint64_t max_record_bytes = kDefaultMaxRecordBytes;              // per trace (Mooncake: per row)
  // Progress of load_traces / load_weka_traces: MB of the files read of
  // their sizes on disk (synth:PRESET: traces made), then a final line with
  // the traces and requests kept. Not owned; null: none.
  CountProgress* progress = nullptr;
};

struct LoadStats {
  std::int64_t files = 0, traces_read = 0, traces_kept = 0;
  std::int64_t requests_read = 0, requests_kept = 0, dropped_by_context = 0, dropped_256k_requests = 0;
};

// Mooncake JSONL (one request per line: timestamp ms, input_length,
// output_length, hash_ids, session_id, delay ms), grouped into one trace per
// session_id (rows without one are single-call traces). Turn k > 0 starts at
// its own timestamp, or `delay` ms after the previous turn (api_time 0, so
// the end-to-start gap is the delay). Default block size 512.
// Rows are bounded like Weka calls (input_length 1..kMaxCallTokens,
// output_length 0..kMaxCallTokens, hash_ids at most input_length /
// block_size + 1).
std::vector<WekaTrace> load_mooncake_traces(const std::string& path, int block_size = 512,
                                            const LoadOptions& opts = {});

// Trace ids must be unique over everything read (hash_ids are per-trace
// namespaces): a repeated id is an error naming both places.
std::vector<WekaTrace> load_weka_traces(const std::string& path, const LoadOptions& opts, LoadStats* stats = nullptr);

// format "weka", "mooncake" or "auto" (mooncake when the first record of a
// file has "input_length"); the filters apply to both. A path
// "synth:PRESET" is a synthetic corpus made in memory (trace/synth.h, e.g.
// synth:cc-weka-256k), --num-dataset-entries N making only N traces.
std::vector<WekaTrace> load_traces(const std::string& path, const std::string& format, const LoadOptions& opts,
                                   LoadStats* stats = nullptr);

// The same traces, handed to `visit` one at a time as they are read, so a
// caller that needs one trace at a time (`traces inspect`) holds one trace,
// not the corpus: memory stays bounded by the largest record. Weka files
// are streamed; Mooncake rows and synth: presets are built whole first
// (their sessions span the file or are made in memory).
void for_each_trace(const std::string& path, const std::string& format, const LoadOptions& opts, LoadStats* stats,
                    const std::function<void(WekaTrace&&)>& visit);

// Reads a whole file, decompressing .zst (streamed, at most
// max_decompressed_bytes). Throws UserError naming the file (and the cap).
std::string read_maybe_zstd(const std::string& path,
                            std::uint64_t max_decompressed_bytes = kDefaultMaxDecompressedBytes);

// Streams a file (decompressing .zst, at most max_decompressed_bytes) to
// `line` one line at a time, without its '\n'; numbers start at 1. A line
// longer than max_line_bytes is an error naming the file, line and cap.
void for_each_line(const std::string& path, std::uint64_t max_decompressed_bytes, std::uint64_t max_line_bytes,
                   const std::function<void(std::string_view text, std::size_t line)>& line);

}  // namespace agentperf::trace
