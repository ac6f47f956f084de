#include "trace/trace_loader.h"

#include <simdjson.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <unordered_map>

#include "common/error.h"
#include "trace/synth.h"

namespace agentperf::trace {
namespace fs = std::filesystem;

namespace {

bool is_zst(const std::string& path) { return path.size() >= 4 && path.compare(path.size() - 4, 4, ".zst") == 0; }

// "64 GiB", "1 MiB" or "1000 bytes": limits as the docs write them.
std::string describe_bytes(std::uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return std::to_string(b >> 30) + " GiB";
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return std::to_string(b >> 20) + " MiB";
  return std::to_string(b) + " bytes";
}

// Streams the file's bytes, decompressed when it is .zst, to `sink` a chunk
// at a time (sink returns false to stop early). Nothing holds the whole
// file, and decompression stops at the cap instead of filling memory.
// `on_read` (optional) hears how many bytes of the file were read.
void stream_bytes(const std::string& path, std::uint64_t max_decompressed,
                  const std::function<bool(std::string_view)>& sink,
                  const std::function<void(std::uint64_t)>& on_read = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read trace file '" + path + "'");
  if (!is_zst(path)) {
    std::vector<char> buf(1 << 20);
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      const auto n = static_cast<std::size_t>(in.gcount());
      if (on_read) on_read(n);
      if (n > 0 && !sink(std::string_view(buf.data(), n))) return;
    }
    if (in.bad()) throw UserError(path + ": read error");
    return;
  }
  std::unique_ptr<ZSTD_DCtx, std::size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::vector<char> ibuf(ZSTD_DStreamInSize()), obuf(ZSTD_DStreamOutSize());
  std::uint64_t total = 0;
  std::size_t ret = 1;  // an empty file is a truncated stream
  while (in) {
    in.read(ibuf.data(), static_cast<std::streamsize>(ibuf.size()));
    ZSTD_inBuffer input{ibuf.data(), static_cast<std::size_t>(in.gcount()), 0};
    if (on_read) on_read(input.size);
    while (input.pos < input.size) {
      ZSTD_outBuffer output{obuf.data(), obuf.size(), 0};
      ret = ZSTD_decompressStream(dctx.get(), &output, &input);
      if (ZSTD_isError(ret)) throw UserError(path + ": not a valid zstd stream (" + ZSTD_getErrorName(ret) + ")");
      total += output.pos;
      if (total > max_decompressed)
        throw UserError(path + ": decompresses to more than " + describe_bytes(max_decompressed) +
                        " (the limit on a .zst trace file's decompressed size)");
      if (output.pos > 0 && !sink(std::string_view(obuf.data(), output.pos))) return;
    }
  }
  if (in.bad()) throw UserError(path + ": read error");
  if (ret != 0) throw UserError(path + ": truncated zstd stream");
}

// At most the first n bytes of the (decompressed) file.
std::string read_head(const std::string& path, std::size_t n, std::uint64_t max_decompressed) {
  std::string head;
  stream_bytes(path, max_decompressed, [&](std::string_view chunk) {
    head.append(chunk.substr(0, n - head.size()));
    return head.size() < n;
  });
  return head;
}

}  // namespace

std::string read_maybe_zstd(const std::string& path, std::uint64_t max_decompressed_bytes) {
  std::string out;
  stream_bytes(path, max_decompressed_bytes, [&](std::string_view chunk) {
    out.append(chunk);
    return true;
  });
  return out;
}

namespace {

void for_each_line_counted(const std::string& path, std::uint64_t max_decompressed_bytes, std::uint64_t max_line_bytes,
                           const std::function<void(std::string_view text, std::size_t line)>& on_line,
                           const std::function<void(std::uint64_t)>& on_read) {
  std::string pending;  // the start of a line that spans chunks
  std::size_t line = 1;
  stream_bytes(path, max_decompressed_bytes, [&](std::string_view chunk) {
    while (!chunk.empty()) {
      const auto nl = chunk.find('\n');
      const std::string_view part = chunk.substr(0, nl);
      if (pending.size() + part.size() > max_line_bytes)
        throw UserError(path + ":" + std::to_string(line) + ": line longer than " + describe_bytes(max_line_bytes) +
                        " (the limit on one trace record)");
      if (nl == std::string_view::npos) {
        pending.append(part);
        break;
      }
      if (pending.empty()) {
        on_line(part, line);
      } else {
        pending.append(part);
        on_line(pending, line);
        pending.clear();
      }
      ++line;
      chunk.remove_prefix(nl + 1);
    }
    return true;
  }, on_read);
  if (!pending.empty()) on_line(pending, line);
}

// Progress over trace files: bytes of the files read, of their sizes on
// disk (LoadOptions::progress).
class ReadProgress {
 public:
  ReadProgress(CountProgress* p, const std::vector<std::string>& files) : p_(p) {
    if (!p_) return;
    std::int64_t total = 0;
    std::error_code ec;
    for (const auto& f : files) {
      const auto n = fs::file_size(f, ec);
      if (!ec) total += static_cast<std::int64_t>(n);
    }
    p_->start(total, "MB", /*bytes=*/true);
  }
  std::function<void(std::uint64_t)> counter() {
    if (!p_) return {};
    return [this](std::uint64_t n) {
      read_ += static_cast<std::int64_t>(n);
      p_->update(read_);
    };
  }
  void finish(const LoadStats& st) {
    if (p_) p_->finish(kept_note(st));
  }
  // "393 traces (67456 requests)", "... kept of 400 (68000)" after the filters.
  static std::string kept_note(const LoadStats& st) {
    std::string s = std::to_string(st.traces_kept) + " traces (" + std::to_string(st.requests_kept) + " requests)";
    if (st.traces_kept != st.traces_read || st.requests_kept != st.requests_read)
      s += " kept of " + std::to_string(st.traces_read) + " (" + std::to_string(st.requests_read) + ")";
    return s;
  }

 private:
  CountProgress* p_;
  std::int64_t read_ = 0;
};

}  // namespace

void for_each_line(const std::string& path, std::uint64_t max_decompressed_bytes, std::uint64_t max_line_bytes,
                   const std::function<void(std::string_view text, std::size_t line)>& on_line) {
  for_each_line_counted(path, max_decompressed_bytes, max_line_bytes, on_line, {});
}

namespace {

// Weka traces of `path` one at a time, filtered, to `keep` (the first
// num_dataset_entries that pass the filters; later ones are still read and
// checked, so the statistics and the duplicate-id check cover the corpus).
// Nothing but the current record and the ids seen so far is held.
void stream_weka_traces(const std::string& path, const LoadOptions& opts, LoadStats& stats,
                        const std::function<void(WekaTrace&&)>& keep) {
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

  std::unordered_map<std::string, std::string> seen;  // trace id -> where it was first read
  ReadProgress progress(opts.progress, files);
  const auto on_read = progress.counter();
  for (const auto& file : files) {
    ++stats.files;
    std::string base = file;
    if (is_zst(base)) base.resize(base.size() - 4);
    const bool jsonl = base.size() > 6 && base.substr(base.size() - 6) == ".jsonl";
    auto take = [&](std::string_view text, const std::string& where) {
      WekaTrace t = parse_weka_trace(text, where);
      // Ids name the hash_ids namespace and the session: two traces with one
      // id would share prefix-cache blocks they never shared.
      if (auto [it, fresh] = seen.emplace(t.id, where); !fresh)
        throw UserError(where + ": trace " + t.id + ": duplicate trace id (first at " + it->second + ")");
      ++stats.traces_read;
      stats.requests_read += t.request_count();
      if (opts.variant_256k) stats.dropped_256k_requests += apply_256k_rule(t);
      if (opts.max_context_length && t.peak_context() > *opts.max_context_length) {
        ++stats.dropped_by_context;
        return;
      }
      if (t.request_count() == 0) return;
      if (opts.num_dataset_entries && stats.traces_kept >= *opts.num_dataset_entries) return;
      ++stats.traces_kept;
      stats.requests_kept += t.request_count();
      keep(std::move(t));
    };
    if (jsonl) {
      for_each_line_counted(file, opts.max_decompressed_bytes, opts.max_record_bytes,
                            [&](std::string_view text, std::size_t line) {
                              if (text.find_first_not_of(" \t\r") != std::string_view::npos)
                                take(text, file + ":" + std::to_string(line));
                            },
                            on_read);
    } else {
      std::string data;
      stream_bytes(file, opts.max_decompressed_bytes, [&](std::string_view chunk) {
        if (data.size() + chunk.size() > opts.max_record_bytes)
          throw UserError(file + ": larger than " + describe_bytes(opts.max_record_bytes) +
                          " (the limit on one trace record)");
        data.append(chunk);
        return true;
      }, on_read);
      take(data, file);
    }
  }
  progress.finish(stats);
}

}  // namespace

std::vector<WekaTrace> load_weka_traces(const std::string& path, const LoadOptions& opts, LoadStats* stats_out) {
  LoadStats stats;
  std::vector<WekaTrace> traces;
  stream_weka_traces(path, opts, stats, [&](WekaTrace&& t) { traces.push_back(std::move(t)); });
  if (stats_out) *stats_out = stats;
  return traces;
}

namespace {

std::vector<WekaTrace> load_mooncake_rows(const std::string& path, int block_size, const LoadOptions& opts,
                                          const std::function<void(std::uint64_t)>& on_read);

// The --256k rule, --max-context-length and --num-dataset-entries over
// traces already in memory (Mooncake rows, a synthetic preset).
std::vector<WekaTrace> filter_traces(std::vector<WekaTrace> traces, const LoadOptions& opts, LoadStats& st) {
  std::vector<WekaTrace> kept;
  for (auto& t : traces) {
    ++st.traces_read;
    st.requests_read += t.request_count();
    if (opts.variant_256k) st.dropped_256k_requests += apply_256k_rule(t);
    if (opts.max_context_length && t.peak_context() > *opts.max_context_length) {
      ++st.dropped_by_context;
      continue;
    }
    if (t.request_count() > 0) kept.push_back(std::move(t));
  }
  if (opts.num_dataset_entries && static_cast<std::int64_t>(kept.size()) > *opts.num_dataset_entries)
    kept.resize(static_cast<std::size_t>(*opts.num_dataset_entries));
  st.traces_kept = static_cast<std::int64_t>(kept.size());
  for (const auto& t : kept) st.requests_kept += t.request_count();
  return kept;
}

}  // namespace

namespace {
bool is_mooncake(const std::string& path, const std::string& format, const LoadOptions& opts) {
  if (format == "auto" && !fs::is_directory(path)) {
    const std::string head = read_head(path, 4096, opts.max_decompressed_bytes);
    return head.find("\"input_length\"") != std::string::npos && head.find("\"requests\"") == std::string::npos;
  }
  if (format != "auto" && format != "weka" && format != "mooncake")
    throw UserError("--trace-format '" + format + "': expected weka, mooncake or auto");
  return format == "mooncake";
}
}  // namespace

void for_each_trace(const std::string& path, const std::string& format, const LoadOptions& opts, LoadStats* stats,
                    const std::function<void(WekaTrace&&)>& visit) {
  if (path.rfind("synth:", 0) != 0 && !is_mooncake(path, format, opts)) {
    LoadStats st;
    stream_weka_traces(path, opts, st, visit);
    if (stats) *stats = st;
    return;
  }
  // A synthetic corpus is made in memory, and Mooncake rows join their
  // sessions across the whole file: both are held whole anyway.
  for (auto& t : load_traces(path, format, opts, stats)) visit(std::move(t));
}

std::vector<WekaTrace> load_traces(const std::string& path, const std::string& format, const LoadOptions& opts,
                                   LoadStats* stats) {
  LoadStats st;
  if (path.rfind("synth:", 0) == 0) {
    // A synthetic corpus by preset name, made in memory (traces synth --preset).
    SynthOptions so;
    try {
      so = synth_preset(path.substr(6));
    } catch (const std::invalid_argument& e) {
      throw UserError("traces '" + path + "': " + e.what());
    }
    if (opts.num_dataset_entries) so.traces = static_cast<int>(std::min<std::int64_t>(so.traces, *opts.num_dataset_entries));
    auto kept = filter_traces(synthesize_traces(so, opts.progress), opts, st);
    if (stats) *stats = st;
    if (opts.progress) opts.progress->finish(ReadProgress::kept_note(st));
    return kept;
  }
  if (!is_mooncake(path, format, opts)) return load_weka_traces(path, opts, stats);
  st.files = 1;
  ReadProgress progress(opts.progress, {path});
  auto kept = filter_traces(load_mooncake_rows(path, 512, opts, progress.counter()), opts, st);
  if (stats) *stats = st;
  progress.finish(st);
  return kept;
}

std::vector<WekaTrace> load_mooncake_traces(const std::string& path, int block_size, const LoadOptions& opts) {
  return load_mooncake_rows(path, block_size, opts, {});
}

namespace {

std::vector<WekaTrace> load_mooncake_rows(const std::string& path, int block_size, const LoadOptions& opts,
                                          const std::function<void(std::uint64_t)>& on_read) {
  if (block_size < 1 || block_size > kMaxBlockSize)
    throw UserError(path + ": block size " + std::to_string(block_size) + " must be in [1, " +
                    std::to_string(kMaxBlockSize) + "]");
  simdjson::dom::parser parser;
  std::vector<WekaTrace> traces;
  std::unordered_map<std::string, std::size_t> by_session;
  for_each_line_counted(path, opts.max_decompressed_bytes, opts.max_record_bytes, [&](std::string_view text, std::size_t line) {
    const std::string where = path + ":" + std::to_string(line);
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) return;
    simdjson::dom::element doc;
    if (parser.parse(text.data(), text.size()).get(doc)) throw UserError(where + ": not valid JSON");
    auto number = [&](const char* key, bool required, double fallback) {
      simdjson::dom::element e;
      if (doc[key].get(e) || e.is_null()) {
        if (required) throw UserError(where + ": missing field '" + key + "'");
        return fallback;
      }
      double v;
      std::int64_t i;
      if (e.get_int64().get(i) == simdjson::SUCCESS) return static_cast<double>(i);
      if (e.get_double().get(v) == simdjson::SUCCESS) return v;
      throw UserError(where + ": field '" + std::string(key) + "' must be a number");
    };
    // Token counts are checked as doubles before the conversion, so 1e30
    // is an error rather than an overflow.
    auto tokens = [&](const char* key, bool required, double fallback, std::int64_t lo) {
      const double v = number(key, required, fallback);
      if (v != std::floor(v) || v < static_cast<double>(lo) || v > static_cast<double>(kMaxCallTokens)) {
        simdjson::dom::element e;
        throw UserError(where + ": field '" + key + "' must be an integer in [" + std::to_string(lo) + ", " +
                        std::to_string(kMaxCallTokens) + "], got " +
                        (doc[key].get(e) ? "nothing" : simdjson::minify(e)));
      }
      return static_cast<std::int64_t>(v);
    };
    TraceCall c;
    c.in = tokens("input_length", true, 0, 1);
    c.out = tokens("output_length", false, 1, 0);
    simdjson::dom::array ids;
    if (doc["hash_ids"].get_array().get(ids) == simdjson::SUCCESS) {
      const std::int64_t most = max_hash_ids(c.in, block_size);
      if (static_cast<std::int64_t>(ids.size()) > most)
        throw UserError(where + ": field 'hash_ids' holds " + std::to_string(ids.size()) + " ids, but input_length = " +
                        std::to_string(c.in) + " tokens in blocks of " + std::to_string(block_size) +
                        " allow at most " + std::to_string(most));
      for (auto v : ids) {
        std::int64_t id;
        if (v.get_int64().get(id)) throw UserError(where + ": 'hash_ids' must hold integers");
        c.hash_ids.push_back(id);
      }
    }
    std::string session;
    std::string_view sv;
    std::int64_t si;
    if (doc["session_id"].get_string().get(sv) == simdjson::SUCCESS) session = std::string(sv);
    else if (doc["session_id"].get_int64().get(si) == simdjson::SUCCESS) session = std::to_string(si);
    const double ts = number("timestamp", false, -1);
    const double delay = number("delay", false, 0);
    auto it = session.empty() ? by_session.end() : by_session.find(session);
    if (it == by_session.end()) {
      WekaTrace t;
      t.id = session.empty() ? "row" + std::to_string(line) : session;
      t.block_size = block_size;
      c.t = ts >= 0 ? ts / 1000.0 : 0.0;
      TraceEntry e;
      e.call = std::move(c);
      t.entries.push_back(std::move(e));
      if (!session.empty()) by_session[session] = traces.size();
      traces.push_back(std::move(t));
    } else {
      WekaTrace& t = traces[it->second];
      const TraceCall& prev = t.entries.back().call;
      c.t = ts >= 0 ? ts / 1000.0 : prev.t + prev.api_time + delay / 1000.0;
      TraceEntry e;
      e.call = std::move(c);
      t.entries.push_back(std::move(e));
    }
  }, on_read);
  // Trace times are relative to each trace's first call.
  for (auto& t : traces) {
    const double t0 = t.entries.front().call.t;
    for (auto& e : t.entries) e.call.t -= t0;
  }
  return traces;
}

}  // namespace

}  // namespace agentperf::trace
