#include "trace/weka_trace.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/error.h"

namespace agentperf::trace {
namespace {

class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}
  [[noreturn]] void fail(const std::string& what) const {
    std::string ctx = where_;
    if (!trace_id_.empty()) ctx += ": trace " + trace_id_;
    if (!request_.empty()) ctx += ", " + request_;
    throw UserError(ctx + ": " + what);
  }
  void set_trace(std::string id) { trace_id_ = std::move(id); }
  void set_request(std::string r) { request_ = std::move(r); }

  double number(simdjson::dom::object o, std::string_view key, bool required, double fallback = 0) const {
    simdjson::dom::element e;
    if (o[key].get(e)) {
      if (required) fail("missing field '" + std::string(key) + "'");
      return fallback;
    }
    if (e.is_null() && !required) return fallback;
    double v;
    std::int64_t i;
    if (e.get_int64().get(i) == simdjson::SUCCESS) return static_cast<double>(i);
    if (e.get_double().get(v) == simdjson::SUCCESS) return v;
    fail("field '" + std::string(key) + "' must be a number, got " + simdjson::minify(e));
  }
  // An integer in [lo, hi]; a JSON number with no fraction (1e6) counts.
  // Checked before any conversion, so 1e30 is an error, not an overflow.
  std::int64_t integer(simdjson::dom::object o, std::string_view key, bool required, std::int64_t fallback,
                       std::int64_t lo, std::int64_t hi) const {
    simdjson::dom::element e;
    if (o[key].get(e) || (e.is_null() && !required)) {
      if (required) fail("missing field '" + std::string(key) + "'");
      return fallback;
    }
    const std::string expected = "field '" + std::string(key) + "' must be an integer in [" + std::to_string(lo) +
                                 ", " + std::to_string(hi) + "], got ";
    std::int64_t i;
    double d;
    if (e.get_int64().get(i) == simdjson::SUCCESS) {
      if (i < lo || i > hi) fail(expected + simdjson::minify(e));
      return i;
    }
    if (e.get_double().get(d) != simdjson::SUCCESS || d != std::floor(d) || d < static_cast<double>(lo) ||
        d > static_cast<double>(hi))
      fail(expected + simdjson::minify(e));
    return static_cast<std::int64_t>(d);
  }
  std::string text(simdjson::dom::object o, std::string_view key, bool required) const {
    std::string_view s;
    simdjson::dom::element e;
    if (o[key].get(e) || e.is_null()) {
      if (required) fail("missing field '" + std::string(key) + "'");
      return {};
    }
    if (e.get_string().get(s)) fail("field '" + std::string(key) + "' must be a string");
    return std::string(s);
  }

 private:
  std::string where_, trace_id_, request_;
};

TraceCall parse_call(Reader& r, simdjson::dom::object o, int block_size) {
  TraceCall c;
  c.t = r.number(o, "t", true);
  c.in = r.integer(o, "in", true, 0, 1, kMaxCallTokens);
  c.out = r.integer(o, "out", true, 0, 0, kMaxCallTokens);
  c.api_time = r.number(o, "api_time", false, 0.0);
  simdjson::dom::element tt;
  if (o["think_time"].get(tt) == simdjson::SUCCESS && !tt.is_null()) c.think_time = r.number(o, "think_time", true);
  c.model = r.text(o, "model", false);
  c.streaming = r.text(o, "type", false) == "s";
  if (c.t < 0) r.fail("field 't' must be >= 0");
  if (c.api_time < 0) r.fail("field 'api_time' must be >= 0");
  simdjson::dom::array ids;
  if (o["hash_ids"].get_array().get(ids)) r.fail("missing field 'hash_ids' (an array of block ids)");
  // One id per block of the prompt: more ids than blocks is a broken trace
  // (and would size block tables past what the prompt needs).
  const std::int64_t most = max_hash_ids(c.in, block_size);
  if (static_cast<std::int64_t>(ids.size()) > most)
    r.fail("field 'hash_ids' holds " + std::to_string(ids.size()) + " ids, but in = " + std::to_string(c.in) +
           " tokens in blocks of " + std::to_string(block_size) + " allow at most " + std::to_string(most));
  c.hash_ids.reserve(ids.size());
  for (auto v : ids) {
    std::int64_t id;
    if (v.get_int64().get(id)) r.fail("'hash_ids' must hold integers, got " + simdjson::minify(v));
    c.hash_ids.push_back(id);
  }
  return c;
}

}  // namespace

std::int64_t WekaTrace::request_count() const {
  std::int64_t n = 0;
  for (const auto& e : entries) n += e.is_subagent ? static_cast<std::int64_t>(e.subagent.calls.size()) : 1;
  return n;
}

std::int64_t WekaTrace::peak_context() const {
  std::int64_t peak = 0;
  for (const auto& e : entries) {
    if (!e.is_subagent) peak = std::max(peak, e.call.in + e.call.out);
    else
      for (const auto& c : e.subagent.calls) peak = std::max(peak, c.in + c.out);
  }
  return peak;
}

WekaTrace parse_weka_trace(std::string_view json, const std::string& where) {
  thread_local simdjson::dom::parser parser;
  Reader r(where);
  simdjson::dom::element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc))
    r.fail(std::string("not valid JSON (") + simdjson::error_message(err) + ")");
  simdjson::dom::object o;
  if (doc.get_object().get(o)) r.fail("a trace must be a JSON object");
  WekaTrace t;
  t.id = r.text(o, "id", true);
  r.set_trace(t.id);
  t.block_size = static_cast<int>(r.integer(o, "block_size", false, 64, 1, kMaxBlockSize));
  t.tool_tokens = r.integer(o, "tool_tokens", false, 0, 0, kMaxExtraTokens);
  t.system_tokens = r.integer(o, "system_tokens", false, 0, 0, kMaxExtraTokens);
  simdjson::dom::array reqs;
  if (o["requests"].get_array().get(reqs)) r.fail("missing field 'requests' (an array)");
  std::size_t index = 0;
  for (auto e : reqs) {
    r.set_request("request " + std::to_string(index));
    simdjson::dom::object ro;
    if (e.get_object().get(ro)) r.fail("must be an object");
    TraceEntry entry;
    const std::string type = r.text(ro, "type", false);
    if (type == "subagent") {
      entry.is_subagent = true;
      auto& g = entry.subagent;
      g.t = r.number(ro, "t", false, 0.0);
      g.agent_id = r.text(ro, "agent_id", true);
      g.subagent_type = r.text(ro, "subagent_type", false);
      simdjson::dom::element dur;
      if (ro["duration_ms"].get(dur) == simdjson::SUCCESS && !dur.is_null())
        g.duration_ms = r.number(ro, "duration_ms", true);
      g.tool_tokens = r.integer(ro, "tool_tokens", false, 0, 0, kMaxExtraTokens);
      g.system_tokens = r.integer(ro, "system_tokens", false, 0, 0, kMaxExtraTokens);
      simdjson::dom::array inner;
      if (ro["requests"].get_array().get(inner)) r.fail("subagent '" + g.agent_id + "' has no 'requests' array");
      std::size_t k = 0;
      for (auto ie : inner) {
        r.set_request("request " + std::to_string(index) + " (subagent '" + g.agent_id + "') inner request " +
                      std::to_string(k));
        simdjson::dom::object io;
        if (ie.get_object().get(io)) r.fail("must be an object");
        const std::string itype = r.text(io, "type", false);
        if (itype == "subagent") r.fail("nested subagent groups are not supported");
        g.calls.push_back(parse_call(r, io, t.block_size));
        ++k;
      }
      if (!g.calls.empty() && ro["t"].error()) g.t = g.calls.front().t;
    } else if (type.empty() || type == "n" || type == "s") {
      entry.call = parse_call(r, ro, t.block_size);
    } else {
      r.fail("unknown type '" + type + "' (expected n, s or subagent)");
    }
    t.entries.push_back(std::move(entry));
    ++index;
  }
  return t;
}

namespace {
void append_call(std::string& s, const TraceCall& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, R"({"type":"%s","t":%.6f,"model":"%s","in":%lld,"out":%lld,"api_time":%.6f,)",
                c.streaming ? "s" : "n", c.t, c.model.c_str(), static_cast<long long>(c.in),
                static_cast<long long>(c.out), c.api_time);
  s += buf;
  if (c.think_time) {
    std::snprintf(buf, sizeof buf, R"("think_time":%.6f,)", *c.think_time);
    s += buf;
  }
  s += "\"hash_ids\":[";
  for (std::size_t i = 0; i < c.hash_ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(c.hash_ids[i]);
  }
  s += "]}";
}
}  // namespace

std::string to_json_line(const WekaTrace& t) {
  std::string s;
  s.reserve(1 << 16);
  char buf[256];
  std::snprintf(buf, sizeof buf, R"({"id":"%s","block_size":%d,"hash_id_scope":"local","tool_tokens":%lld,"system_tokens":%lld,"requests":[)",
                t.id.c_str(), t.block_size, static_cast<long long>(t.tool_tokens), static_cast<long long>(t.system_tokens));
  s += buf;
  for (std::size_t i = 0; i < t.entries.size(); ++i) {
    if (i) s += ',';
    const auto& e = t.entries[i];
    if (!e.is_subagent) {
      append_call(s, e.call);
      continue;
    }
    std::snprintf(buf, sizeof buf, R"({"type":"subagent","t":%.6f,"agent_id":"%s","subagent_type":"%s","status":"completed",)",
                  e.subagent.t, e.subagent.agent_id.c_str(), e.subagent.subagent_type.c_str());
    s += buf;
    if (e.subagent.duration_ms) {
      std::snprintf(buf, sizeof buf, R"("duration_ms":%.3f,)", *e.subagent.duration_ms);
      s += buf;
    }
    if (e.subagent.tool_tokens || e.subagent.system_tokens) {
      std::snprintf(buf, sizeof buf, R"("tool_tokens":%lld,"system_tokens":%lld,)",
                    static_cast<long long>(e.subagent.tool_tokens), static_cast<long long>(e.subagent.system_tokens));
      s += buf;
    }
    s += "\"requests\":[";
    for (std::size_t k = 0; k < e.subagent.calls.size(); ++k) {
      if (k) s += ',';
      append_call(s, e.subagent.calls[k]);
    }
    s += "]}";
  }
  s += "]}";
  return s;
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

}  // namespace agentperf::trace
