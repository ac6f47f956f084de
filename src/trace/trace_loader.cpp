#include "trace/trace_loader.h"

#include <zstd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace agentperf::trace {
namespace fs = std::filesystem;

std::string read_maybe_zstd(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read trace file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string data = ss.str();
  if (path.size() < 4 || path.substr(path.size() - 4) != ".zst") return data;
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  std::string out;
  std::vector<char> buf(ZSTD_DStreamOutSize());
  ZSTD_inBuffer input{data.data(), data.size(), 0};
  std::size_t ret = 1;
  while (input.pos < input.size) {
    ZSTD_outBuffer output{buf.data(), buf.size(), 0};
    ret = ZSTD_decompressStream(dctx, &output, &input);
    if (ZSTD_isError(ret)) {
      ZSTD_freeDCtx(dctx);
      throw UserError(path + ": not a valid zstd stream (" + ZSTD_getErrorName(ret) + ")");
    }
    out.append(buf.data(), output.pos);
  }
  ZSTD_freeDCtx(dctx);
  if (ret != 0) throw UserError(path + ": truncated zstd stream");
  return out;
}

std::int64_t apply_256k_rule(WekaTrace& t) {
  constexpr std::int64_t kLimit = 256000;
  std::int64_t dropped = 0;
  std::vector<TraceEntry> kept;
  kept.reserve(t.entries.size());
  for (auto& e : t.entries) {
    if (!e.is_subagent) {
      if (e.call.in + e.call.out > kLimit) {
        ++dropped;
        continue;
      }
      kept.push_back(std::move(e));
      continue;
    }
    auto& calls = e.subagent.calls;
    const auto before = calls.size();
    calls.erase(std::remove_if(calls.begin(), calls.end(), [](const TraceCall& c) { return c.in + c.out > kLimit; }),
                calls.end());
    dropped += static_cast<std::int64_t>(before - calls.size());
    if (calls.empty()) continue;  // a group goes only when all its calls went
    e.subagent.t = calls.front().t;
    kept.push_back(std::move(e));
  }
  t.entries = std::move(kept);
  return dropped;
}

std::vector<WekaTrace> load_weka_traces(const std::string& path, const LoadOptions& opts, LoadStats* stats_out) {
  LoadStats stats;
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const auto& entry : fs::directory_iterator(path)) {
      const auto name = entry.path().string();
      const auto ext = entry.path().extension().string();
      const auto stem_ext = entry.path().stem().extension().string();
      if (ext == ".json" || ext == ".jsonl" || (ext == ".zst" && (stem_ext == ".json" || stem_ext == ".jsonl")))
        files.push_back(name);
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw UserError("no .json, .jsonl or .zst trace files in directory '" + path + "'");
  } else if (fs::exists(path, ec)) {
    files.push_back(path);
  } else {
    throw UserError("trace path '" + path + "' does not exist");
  }

  std::vector<WekaTrace> traces;
  for (const auto& file : files) {
    ++stats.files;
    const std::string data = read_maybe_zstd(file);
    std::string base = file;
    if (base.size() > 4 && base.substr(base.size() - 4) == ".zst") base.resize(base.size() - 4);
    const bool jsonl = base.size() > 6 && base.substr(base.size() - 6) == ".jsonl";
    auto take = [&](std::string_view text, const std::string& where) {
      WekaTrace t = parse_weka_trace(text, where);
      ++stats.traces_read;
      stats.requests_read += t.request_count();
      if (opts.variant_256k) stats.dropped_256k_requests += apply_256k_rule(t);
      if (opts.max_context_length && t.peak_context() > *opts.max_context_length) {
        ++stats.dropped_by_context;
        return;
      }
      if (t.request_count() == 0) return;
      traces.push_back(std::move(t));
    };
    if (jsonl) {
      std::size_t start = 0, line = 1;
      while (start < data.size()) {
        std::size_t end = data.find('\n', start);
        if (end == std::string::npos) end = data.size();
        std::string_view text(data.data() + start, end - start);
        if (text.find_first_not_of(" \t\r") != std::string_view::npos) take(text, file + ":" + std::to_string(line));
        start = end + 1;
        ++line;
      }
    } else {
      take(data, file);
    }
  }
  if (opts.num_dataset_entries && static_cast<std::int64_t>(traces.size()) > *opts.num_dataset_entries)
    traces.resize(static_cast<std::size_t>(*opts.num_dataset_entries));
  stats.traces_kept = static_cast<std::int64_t>(traces.size());
  for (const auto& t : traces) stats.requests_kept += t.request_count();
  if (stats_out) *stats_out = stats;
  return traces;
}

}  // namespace agentperf::trace
