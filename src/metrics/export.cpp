#include "metrics/export.h"

#include <unordered_map>

#include "metrics/confidence.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <tuple>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/run_control.h"
#include "common/version.h"
#include "metrics/metric_summary.h"
#include "metrics/metric_table.h"
#include "metrics/record_json.h"
#include "metrics/slo.h"
#include "metrics/record_metrics.h"
#include "metrics/stats.h"

namespace agentperf {

using json = nlohmann::ordered_json;

std::vector<MetricRow> metric_rows(const RequestRecord& r, const RecordMetrics& m) {
  std::vector<MetricRow> rows;
  for (const auto& def : metric_table())
    if (def.value)
      if (auto v = def.value(r, m)) rows.push_back({&def, *v});
  return rows;
}


json summary_json(std::vector<double>& values, const char* unit) {
  Summary s = summarize(values);
  json j = {{"unit", unit}, {"avg", s.avg}, {"min", s.min}, {"max", s.max}};
  // (A key built as std::string("p") += ..., not "p" + std::string: GCC 12
  // warns -Wrestrict on the latter, a false positive, GCC bug 105329.)
  for (std::size_t i = 0; i < kPercentiles.size(); ++i) j[std::string("p") += std::to_string(kPercentiles[i])] = s.p[i];
  j["std"] = s.std;
  j["count"] = s.count;
  j["sum"] = s.sum;
  return j;
}

std::string iso_local(std::int64_t wall_ns) {
  const std::time_t secs = static_cast<std::time_t>(wall_ns / 1'000'000'000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%06lld", static_cast<long long>((wall_ns % 1'000'000'000) / 1000));
  return std::string(buf) + frac;
}

bool is_context_overflow_error(const ErrorInfo& e) {
  auto has = [](std::string m) {
    std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const char* needle : {"context length", "maximum context", "context_length_exceeded", "prompt is too long"})
      if (m.find(needle) != std::string::npos) return true;
    return false;
  };
  return has(e.message) || has(e.type);
}

json record_to_json(const RequestRecord& r) {
  std::string line;
  append_record_json_line(line, r);
  return json::parse(line);
}

RunVerdict judge_run(const std::vector<RequestRecord>& records, const RunResult& run, double max_error_rate) {
  RunVerdict v;
  std::int64_t ok = 0, failed = 0;
  for (const auto& r : records) {
    if (r.phase != Phase::profiling) continue;
    if (r.ok()) ++ok;
    else if (!(r.was_cancelled && !run.interrupted && run.abort_reason.empty())) ++failed;
  }
  if (run.interrupted || !run.abort_reason.empty()) {
    v.complete = false;
    v.stop_reason = run.abort_reason.empty() ? std::string("interrupted") : run.abort_reason;
    v.invalid_reasons.push_back("run stopped early: " + v.stop_reason);
  }
  if (ok == 0) {
    v.invalid_reasons.push_back(failed > 0 ? "every profiling request failed (" + std::to_string(failed) + ")"
                                           : std::string("no profiling request completed"));
  } else if (failed > 0) {
    const double rate = static_cast<double>(failed) / static_cast<double>(ok + failed);
    if (rate > max_error_rate) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "%lld of %lld profiling requests failed (%.2f%%), above the allowed %.2f%% (--max-error-rate)",
                    static_cast<long long>(failed), static_cast<long long>(ok + failed), 100 * rate, 100 * max_error_rate);
      v.invalid_reasons.push_back(buf);
    }
  }
  v.valid = v.invalid_reasons.empty();
  if (run.interrupted && run.stop_signal != 0) {
    v.exit_code = run.stop_signal == SIGTERM ? exit_code::sigterm
                  : run.stop_signal == SIGINT ? exit_code::sigint
                                              : exit_code::invalid;
  } else {
    v.exit_code = v.valid ? exit_code::valid : exit_code::invalid;
  }
  return v;
}

json build_aggregate(const std::vector<RequestRecord>& records, const AggregateInputs& in) {
  std::map<std::string, std::pair<const char*, std::vector<double>>> series;
  std::vector<double> inter_chunk;
  std::int64_t ok = 0, errors = 0, warmup = 0, cancelled = 0, retried = 0, good = 0;
  std::int64_t retry_added_ns = 0;  // time from first sends to their retries, in the requests' latencies
  std::map<std::string, std::int64_t> warnings;
  std::int64_t first_start = std::numeric_limits<std::int64_t>::max(), last_end = 0;
  std::int64_t first_start_wall = 0, last_end_wall = 0;
  double sum_isl = 0, sum_osl = 0, sum_usage_prompt = 0, sum_cached = 0;
  bool any_usage_prompt = false, any_cached = false;
  std::map<std::tuple<std::optional<int>, std::string, std::string>, std::int64_t> error_groups;
  std::map<std::string, std::int64_t> isl_sources, osl_sources;
  std::int64_t overflows = 0;
  // AIPerf's e2e_normalized_interactivity_{p75,p90}: the ratio
  // request_latency_s / OSL per request; TTFT and ISL gate a request only
  // when the run produced them at all.
  struct Ratio {
    std::int64_t latency_ns;
    std::optional<double> osl, ttft, isl;
  };
  std::vector<Ratio> ratios;
  bool any_ttft = false, any_isl = false;
  std::vector<CiObservation> ci_obs;
  std::unordered_map<std::string, std::size_t> ci_units;
  bool ci_trees = false;

  for (const auto& r : records) {
    if (r.phase != Phase::profiling) {
      ++warmup;
      continue;
    }
    if (r.was_cancelled) ++cancelled;
    if (r.retries > 0) ++retried;
    if (r.retry_start_ns > r.start_ns) retry_added_ns += r.retry_start_ns - r.start_ns;
    if (!r.warning.empty()) ++warnings[r.warning];
    if (!r.ok()) {
      ++errors;
      if (is_context_overflow_error(*r.error)) ++overflows;
      ++error_groups[{r.error->code, r.error->type, r.error->message}];
      continue;
    }
    ++ok;
    const RecordMetrics m = compute_metrics(r);
    if (!in.slos.empty() && request_meets_slos(in.slos, r, m)) ++good;
    {
      // The resampling unit of the intervals: a replay's session tree, else the request.
      std::size_t unit;
      if (!r.root_correlation_id.empty()) {
        auto [it, fresh] = ci_units.emplace(r.root_correlation_id, ci_units.size());
        unit = it->second;
        ci_trees = true;
      } else {
        unit = ci_units.size();
        ci_units.emplace(std::string("#") += std::to_string(ok), unit);
      }
      ci_obs.push_back({unit, r.start_ns, m.ttft_ms, m.itl_ms, m.request_latency_ms,
                        static_cast<double>(m.isl.value_or(0)), static_cast<double>(m.osl.value_or(0))});
    }
    if (m.request_latency_ms) {
      auto as_d = [](const std::optional<std::int64_t>& x) {
        return x ? std::optional<double>(static_cast<double>(*x)) : std::nullopt;
      };
      const std::int64_t last_byte = r.streamed && !r.content_ns.empty() ? r.content_ns.back() : r.end_ns;
      ratios.push_back({last_byte - r.start_ns, as_d(m.osl), m.ttft_ms, as_d(m.isl)});
      any_ttft = any_ttft || m.ttft_ms.has_value();
      any_isl = any_isl || m.isl.has_value();
    }
    for (const auto& row : metric_rows(r, m)) {
      auto& s = series[row.def->tag];
      s.first = row.def->unit;
      s.second.push_back(row.value);
    }
    inter_chunk.insert(inter_chunk.end(), m.inter_chunk_ms.begin(), m.inter_chunk_ms.end());
    // AIPerf's benchmark_duration = max_response_timestamp -
    // min_request_timestamp: a response ends at its request's start plus its
    // request latency (MaxResponseTimestampMetric), wall clock.
    if (r.start_wall_ns < first_start) {
      first_start = r.start_wall_ns;
      first_start_wall = r.start_wall_ns;
    }
    {
      const std::int64_t last_byte = r.streamed && !r.content_ns.empty() ? r.content_ns.back() : r.end_ns;
      const std::int64_t response_wall = r.start_wall_ns + (last_byte - r.start_ns);
      if (last_byte > 0 && response_wall > last_end) {
        last_end = response_wall;
        last_end_wall = response_wall;
      }
    }
    sum_isl += static_cast<double>(m.isl.value_or(0));
    sum_osl += static_cast<double>(m.osl.value_or(0));
    if (r.usage_prompt_tokens) { sum_usage_prompt += static_cast<double>(*r.usage_prompt_tokens); any_usage_prompt = true; }
    if (r.usage_cached_tokens) { sum_cached += static_cast<double>(*r.usage_cached_tokens); any_cached = true; }
    ++isl_sources[token_source_name(m.isl_source)];
    ++osl_sources[token_source_name(m.osl_source)];
  }

  json agg = json::object();
  agg["schema_version"] = "1.0";
  agg["agentperf_version"] = std::string(version());
  agg["benchmark_id"] = in.benchmark_id;
  for (auto& [tag, s] : series) agg[tag] = summary_json(s.second, s.first);
  if (!inter_chunk.empty())
    agg[std::string(kInterChunkLatency)] = summary_json(inter_chunk, find_metric(kInterChunkLatency)->unit);

  const double duration_s = ok > 0 ? static_cast<double>(last_end - first_start) / 1e9 : 0.0;
  auto derived = [&](const char* tag, const char* unit, double v) { agg[tag] = {{"unit", unit}, {"avg", v}}; };
  derived("request_count", "requests", static_cast<double>(ok));
  derived("error_request_count", "requests", static_cast<double>(errors));
  // Read by InferenceX's validate_agentic_result (errors / completed).
  derived("completed_request_count", "requests", static_cast<double>(ok + errors));
  derived("context_overflow_count", "requests", static_cast<double>(overflows));
  derived("cancelled_request_count", "requests", static_cast<double>(cancelled));
  derived("warmup_request_count", "requests", static_cast<double>(warmup));
  derived("benchmark_duration", "sec", duration_s);
  // A rate needs two requests: with one, "throughput" would be the inverse
  // of its latency (a run of one request at 0.3 req/s once printed 423.74
  // req/s). Below two the keys are absent and the summary prints n/a.
  if (duration_s > 0 && ok >= 2) {
    derived("request_throughput", "requests/sec", static_cast<double>(ok) / duration_s);
    derived("output_token_throughput", "tokens/sec", sum_osl / duration_s);
    derived("input_token_throughput", "tokens/sec", sum_isl / duration_s);
    derived("total_token_throughput", "tokens/sec", (sum_isl + sum_osl) / duration_s);
    if (!in.slos.empty()) derived("goodput", "requests/sec", static_cast<double>(good) / duration_s);
  }
  if (!in.slos.empty()) {
    // metrics/slo.h: requests meeting every SLO's threshold, over all
    // profiling requests that were answered or failed.
    derived("slo_attainment", "ratio", ok + errors > 0 ? static_cast<double>(good) / static_cast<double>(ok + errors) : 0.0);
    auto& s = agg["slos"] = nlohmann::ordered_json::array();
    for (const auto& slo : in.slos) s.push_back(slo.text);
  }
  derived("total_output_tokens", "tokens", sum_osl);
  derived("total_input_tokens", "tokens", sum_isl);
  if (any_usage_prompt) derived("total_usage_prompt_tokens", "tokens", sum_usage_prompt);
  if (any_cached) derived("total_usage_prompt_cache_read_tokens", "tokens", sum_cached);
  if (ok + errors > 0) derived("request_error_rate", "ratio", static_cast<double>(errors) / static_cast<double>(ok + errors));
  {
    std::vector<double> v;
    for (const auto& x : ratios) {
      auto pos = [](const std::optional<double>& y) { return y && std::isfinite(*y) && *y > 0; };
      if (!(x.latency_ns > 0 && pos(x.osl))) continue;
      if ((any_ttft && !pos(x.ttft)) || (any_isl && !pos(x.isl))) continue;
      const double ratio = static_cast<double>(x.latency_ns) / 1e9 / *x.osl;  // (latency_ns / NANOS_PER_SECOND) / osl
      if (std::isfinite(ratio)) v.push_back(ratio);
    }
    if (!v.empty()) {
      std::sort(v.begin(), v.end());
      for (int p : {75, 90}) {
        // np.percentile, "linear": index (n-1) * (q/100), numpy's _lerp
        const double vi = static_cast<double>(v.size() - 1) * (p / 100.0);
        const auto lo = static_cast<std::size_t>(std::floor(vi));
        const std::size_t hi = std::min(lo + 1, v.size() - 1);
        const double t = vi - static_cast<double>(lo), d = v[hi] - v[lo];
        const double rp = t >= 0.5 ? v[hi] - d * (1 - t) : v[lo] + d * t;
        if (rp <= 0 || !std::isfinite(1.0 / rp)) continue;
        agg["e2e_normalized_interactivity_p" + std::to_string(p)] = {
            {"unit", "tokens/sec/user"}, {"avg", 1.0 / rp}, {"count", v.size()}};
      }
    }
  }

  json summary = json::array();
  for (const auto& [key, count] : error_groups) {
    const auto& [code, type, message] = key;
    summary.push_back({{"error_details", {{"code", code ? json(*code) : json(nullptr)}, {"type", type}, {"message", message}}},
                       {"count", count}});
  }
  agg["error_summary"] = summary;
  agg["token_sources"] = {{"input_sequence_length", isl_sources}, {"output_sequence_length", osl_sources}};

  agg["warning_summary"] = warnings;
  // More than 5 % of prompt tokens served from a prefix cache that this run
  // did not warm: the numbers are those of a cache hit, not of the load asked.
  if (in.expect_no_cached_prompts && any_cached && sum_usage_prompt > 0 && sum_cached > 0.05 * sum_usage_prompt) {
    const double share = sum_cached / sum_usage_prompt;
    agg["unexpected_prefix_cache"] = {
        {"cached_prompt_share", share},
        {"message", "the server reported " + std::to_string(static_cast<int>(std::lround(100 * share))) +
                        " % of prompt tokens as cached although this run sends no shared prefix: its prompts were "
                        "already in the server's prefix cache (an earlier run with the same --random-seed?), so TTFT "
                        "and throughput are those of cache hits"}};
  }
  const RunResult* run = in.run;
  if (ok > 0) {
    agg["start_time"] = iso_local(first_start_wall);
    agg["end_time"] = iso_local(last_end_wall);
    agg["start_time_ns"] = first_start_wall;
    agg["end_time_ns"] = last_end_wall;
  }
  const bool stopped = run && (run->interrupted || !run->abort_reason.empty());
  agg["was_cancelled"] = stopped;
  agg["complete"] = !stopped;
  if (run && !run->abort_reason.empty()) agg["abort_reason"] = run->abort_reason;
  if (in.verdict) {
    agg["complete"] = in.verdict->complete;
    if (!in.verdict->stop_reason.empty()) agg["stop_reason"] = in.verdict->stop_reason;
    agg["valid"] = in.verdict->valid;
    agg["invalid_reasons"] = in.verdict->invalid_reasons;
    agg["exit_code"] = in.verdict->exit_code;
  }
  if (in.records_error) agg["records_file_error"] = *in.records_error;
  if (run)
    agg["client"] = {{"connections_opened", run->client.connects},
                     {"connect_failures", run->client.connect_failures},
                     {"connections_reused", run->client.reused},
                     {"stale_connections_dropped", run->client.stale_dropped},
                     {"requests_retried", run->client.retries},
                     {"records_with_retry", retried},
                     {"retry_time_added_ms", static_cast<double>(retry_added_ns) / 1e6}};
  {
    CiOptions co;
    co.trees = ci_trees;
    // A synthetic closed loop: requests at a fixed concurrency, no rate.
    if (!ci_trees && in.input_config.is_object() && in.input_config.contains("load") &&
        in.input_config["load"].is_object()) {
      const auto& load = in.input_config["load"];
      co.closed_loop = load.contains("concurrency") && load["concurrency"].is_number() &&
                       !(load.contains("request_rate") && load["request_rate"].is_number());
    }
    co.duration_s = ok >= 2 ? duration_s : 0.0;
    co.seed = std::hash<std::string>{}(in.benchmark_id);
    nlohmann::json ci = confidence_intervals(ci_obs, ci_units.size(), co);
    if (!ci.is_null()) {
      // Headline intervals wider than 20 % of their value are named.
      nlohmann::json wide = nlohmann::json::array();
      auto check = [&](const std::string& name, const nlohmann::json& iv, double value) {
        if (iv.is_array() && value != 0 && (iv[1].get<double>() - iv[0].get<double>()) > co.wide_ratio * std::fabs(value))
          wide.push_back(name);
      };
      for (const char* metric : {"time_to_first_token", "inter_token_latency", "request_latency"})
        for (const char* key : {"avg", "p50", "p90"})
          if (ci["metrics"].contains(metric) && ci["metrics"][metric].contains(key) && agg.contains(metric))
            check(std::string(metric) + "." + key, ci["metrics"][metric][key], agg[metric].value(key, 0.0));
      for (const char* tput : {"output_token_throughput", "total_token_throughput"})
        if (ci["metrics"].contains(tput) && agg.contains(tput)) check(tput, ci["metrics"][tput], agg[tput].value("avg", 0.0));
      ci["wide"] = wide;
      agg["confidence_intervals"] = ci;
    }
  }
  agg["input_config"] = in.input_config;
  agg["run_info"] = {{"cli_command", in.cli_command}};
  RunDescription description = in.description;
  if (description.command_line.empty()) description.command_line = in.cli_command;
  agg["run_description"] = description.to_json();
  return agg;
}

std::string dump_json_line(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void write_profile_jsonl(const std::filesystem::path& path, const std::vector<RequestRecord>& records) {
  write_file_atomically(path, [&](std::ostream& out) {
    std::string line;
    for (const auto& r : records) {
      line.clear();
      append_record_json_line(line, r);
      line += '\n';
      out << line;
    }
  });
}

void write_json_file(const std::filesystem::path& path, const json& j) {
  write_file_atomically(path, [&](std::ostream& out) { out << j.dump(2, ' ', false, json::error_handler_t::replace) << '\n'; });
}

void write_run_results(const std::filesystem::path& dir, const std::vector<RequestRecord>& records, const json& aggregate,
                       bool records_streamed) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw UserError("cannot create '" + dir.string() + "': " + ec.message(), exit_code::write_failed);
  if (!records_streamed) write_profile_jsonl(dir / "profile_export.jsonl", records);
  write_json_file(dir / "profile_export_aiperf.json", aggregate);
}

void print_summary(const json& agg, std::FILE* out) {
  std::fprintf(out, "%-26s %11s %11s %11s %11s %11s %11s %11s\n", "Metric", "avg", "min", "max", "p50", "p90",
               "p99", "std");
  // Per-token metrics exist only for streamed answers: without streaming
  // they are shown as n/a rather than left out or shown as 0.
  const bool any_ok = agg.contains("request_count") && agg["request_count"]["avg"].get<double>() > 0;
  for (const auto& def : metric_table()) {
    if (!def.label) continue;
    const char* tag = def.tag;
    const char* label = def.label;
    if (!agg.contains(tag)) {
      if (any_ok && def.streaming_only && !agg.contains("time_to_first_token"))
        std::fprintf(out, "%-26s %11s   (streaming only)\n", label, "n/a");
      continue;
    }
    const auto& m = agg[tag];
    std::fprintf(out, "%-26s %11.2f %11.2f %11.2f %11.2f %11.2f %11.2f %11.2f\n", label, m["avg"].get<double>(),
                 m["min"].get<double>(), m["max"].get<double>(), m["p50"].get<double>(), m["p90"].get<double>(),
                 m["p99"].get<double>(), m["std"].get<double>());
  }
  auto val = [&](const char* tag) { return agg.contains(tag) ? agg[tag]["avg"].get<double>() : 0.0; };
  std::fprintf(out, "Requests: %.0f ok, %.0f errors (%.0f cancelled), %.0f warmup | duration %.3f s\n",
               val("request_count"), val("error_request_count"), val("cancelled_request_count"),
               val("warmup_request_count"), val("benchmark_duration"));
  if (agg.contains("request_throughput"))
    std::fprintf(out, "Throughput: %.2f req/s, %.1f output tok/s, %.1f total tok/s\n", val("request_throughput"),
                 val("output_token_throughput"), val("total_token_throughput"));
  else
    std::fprintf(out, "Throughput: n/a (fewer than two requests completed)\n");
  if (agg.contains("slo_attainment")) {
    std::string slos;
    for (const auto& s : agg["slos"]) slos += (slos.empty() ? "" : ", ") + s.get<std::string>();
    std::fprintf(out, "Goodput: %.2f req/s meeting every SLO (%.1f%% of requests; %s)\n", val("goodput"),
                 100 * val("slo_attainment"), slos.c_str());
  }
  for (const auto& e : agg["error_summary"]) {
    const auto& d = e["error_details"];
    // A request the run itself cancelled (the grace period ran out, a stop
    // signal) is not a server error: it is shown as what it is.
    const bool cancelled = d["type"].is_string() && d["type"].get<std::string>() == "RequestCancelled";
    std::fprintf(out, "  %s x%lld: [%s %s] %s\n", cancelled ? "cancelled" : "error", e["count"].get<long long>(),
                 d["code"].is_null() ? "-" : std::to_string(d["code"].get<int>()).c_str(),
                 d["type"].get<std::string>().c_str(), d["message"].get<std::string>().c_str());
  }
  if (agg.contains("client") && agg["client"]["requests_retried"].get<long long>() > 0)
    std::fprintf(out, "Retried: %lld requests re-sent on a fresh connection after a reused keep-alive socket "
                      "had been closed by the server\n",
                 agg["client"]["requests_retried"].get<long long>());
  if (agg.contains("warning_summary"))
    for (const auto& [w, n] : agg["warning_summary"].items())
      std::fprintf(out, "  warning x%lld: %s%s\n", n.get<long long>(), w.c_str(),
                   w == "zero_output_tokens" ? " (200 answers with no output although max_tokens > 0 and ignore_eos)"
                   : w == kBurstyWarning
                       ? " (most tokens arrived several to a read: something between client and server holds the "
                         "stream and releases it in bursts, so TTFT and ITL are those of the bursts)"
                   : w == kNoDoneWarning
                       ? " (200 streams closed with neither data: [DONE] nor a finish_reason: possibly cut short)"
                   : w == kUsageOverMaxTokensWarning
                       ? " (the server's usage.completion_tokens exceeds the request's max_tokens: OSL and token "
                         "throughputs built on it are wrong)"
                   : w == kUsageOverStreamWarning
                       ? " (the server's usage.completion_tokens is far more than the stream carried: OSL and token "
                         "throughputs built on it are wrong)"
                       : "");
  if (agg.contains("confidence_intervals")) std::fputs(confidence_summary(agg["confidence_intervals"], agg).c_str(), out);
  if (agg.contains("unexpected_prefix_cache"))
    std::fprintf(out, "Warning: %s\n", agg["unexpected_prefix_cache"]["message"].get<std::string>().c_str());
  if (agg.contains("stop_reason"))
    std::fprintf(out, "Run stopped early: %s (results are partial)\n", agg["stop_reason"].get<std::string>().c_str());
  else if (agg.contains("abort_reason"))
    std::fprintf(out, "Run stopped early: %s\n", agg["abort_reason"].get<std::string>().c_str());
  if (agg.contains("valid")) {
    if (agg["valid"].get<bool>()) {
      std::fprintf(out, "Run: VALID\n");
    } else {
      std::string reasons;
      for (const auto& r : agg["invalid_reasons"]) reasons += (reasons.empty() ? "" : "; ") + r.get<std::string>();
      std::fprintf(out, "Run: INVALID (%s)\n", reasons.c_str());
    }
  }
  if (agg.contains("records_file_error"))
    std::fprintf(out, "Records file: NOT WRITTEN COMPLETELY (%s)\n", agg["records_file_error"].get<std::string>().c_str());
}

}  // namespace agentperf
