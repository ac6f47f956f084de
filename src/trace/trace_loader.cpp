#include "trace/trace_loader.h"

#include <simdjson.h>
#include <zstd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "common/error.h"
#include "trace/synth.h"

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

namespace {

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
    auto kept = filter_traces(synthesize_traces(so), opts, st);
    if (stats) *stats = st;
    return kept;
  }
  bool mooncake = format == "mooncake";
  if (format == "auto" && !fs::is_directory(path)) {
    const std::string head = read_maybe_zstd(path).substr(0, 4096);
    mooncake = head.find("\"input_length\"") != std::string::npos && head.find("\"requests\"") == std::string::npos;
  } else if (format != "auto" && format != "weka" && format != "mooncake") {
    throw UserError("--trace-format '" + format + "': expected weka, mooncake or auto");
  }
  if (!mooncake) return load_weka_traces(path, opts, stats);
  st.files = 1;
  auto kept = filter_traces(load_mooncake_traces(path), opts, st);
  if (stats) *stats = st;
  return kept;
}

std::vector<WekaTrace> load_mooncake_traces(const std::string& path, int block_size) {
  const std::string data = read_maybe_zstd(path);
  simdjson::dom::parser parser;
  std::vector<WekaTrace> traces;
  std::unordered_map<std::string, std::size_t> by_session;
  std::size_t start = 0, line = 1;
  while (start < data.size()) {
    std::size_t end = data.find('\n', start);
    if (end == std::string::npos) end = data.size();
    std::string_view text(data.data() + start, end - start);
    const std::string where = path + ":" + std::to_string(line);
    start = end + 1;
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
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
    TraceCall c;
    c.in = static_cast<std::int64_t>(number("input_length", true, 0));
    c.out = static_cast<std::int64_t>(number("output_length", false, 1));
    if (c.in < 1) throw UserError(where + ": field 'input_length' must be at least 1");
    simdjson::dom::array ids;
    if (doc["hash_ids"].get_array().get(ids) == simdjson::SUCCESS)
      for (auto v : ids) {
        std::int64_t id;
        if (v.get_int64().get(id)) throw UserError(where + ": 'hash_ids' must hold integers");
        c.hash_ids.push_back(id);
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
      t.id = session.empty() ? "row" + std::to_string(line - 1) : session;
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
  }
  // Trace times are relative to each trace's first call.
  for (auto& t : traces) {
    const double t0 = t.entries.front().call.t;
    for (auto& e : t.entries) e.call.t -= t0;
  }
  return traces;
}

}  // namespace agentperf::trace
