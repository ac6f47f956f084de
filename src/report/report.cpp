#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "metrics/confidence.h"
#include "common/error.h"
#include "common/version.h"
#include "metrics/export.h"
#include "metrics/metric_table.h"
#include "metrics/run_description.h"
#include "metrics/stats.h"
#include "report/gpu_telemetry.h"
#include "report/web_assets.h"

namespace agentperf::report {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

double metric(const json& rec, const char* tag) {
  // contains() before every operator[]: on a const json a missing key is
  // undefined behaviour, not null.
  if (!rec.contains("metrics") || !rec["metrics"].is_object()) return -1;
  const auto& m = rec["metrics"];
  if (!m.contains(tag) || !m[tag].is_object() || !m[tag].contains("value") || !m[tag]["value"].is_number()) return -1;
  return m[tag]["value"].get<double>();
}

json pct_block(std::vector<double> v, bool invert) {
  json j = json::object();
  if (v.empty()) return j;
  Summary s = summarize(v);
  // Interactivity inverts the percentile, never the reverse (metric_table.h).
  auto f = [&](double x) { return invert ? interactivity(x) : x; };
  j["p50"] = f(s.percentile(50));
  j["p90"] = f(s.percentile(90));
  j["p99"] = f(s.percentile(99));
  j["mean"] = f(s.avg);
  return j;
}

std::vector<double> downsample(std::vector<double> v, std::size_t n) {
  std::sort(v.begin(), v.end());
  if (v.size() <= n) return v;
  std::vector<double> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(v[i * (v.size() - 1) / (n - 1)]);
  return out;
}

// Equal-width bins over [min, max] of the values: AIPerf's ISL/OSL plots.
// "edges" are the bins' left edges and "width" their width, so the last bin
// ends at edges.back() + width. All values equal (a fixed ISL): one bin 2 %
// of the value wide (at least 1 token) centred on it.
json histogram(const std::vector<double>& v, int bins) {
  json h = {{"edges", json::array()}, {"counts", json::array()}, {"width", 0}};
  if (v.empty()) return h;
  const auto [lo_it, hi_it] = std::minmax_element(v.begin(), v.end());
  const double lo = *lo_it, hi = *hi_it;
  if (hi <= lo) {
    const double width = std::max(1.0, 0.02 * std::fabs(lo));
    h["edges"].push_back(lo - width / 2);
    h["counts"].push_back(static_cast<double>(v.size()));
    h["width"] = width;
    return h;
  }
  const double width = (hi - lo) / bins;
  std::vector<double> counts(static_cast<std::size_t>(bins), 0);
  for (double x : v) counts[static_cast<std::size_t>(std::min(bins - 1, static_cast<int>((x - lo) / width)))] += 1;
  for (int i = 0; i < bins; ++i) h["edges"].push_back(lo + width * i);
  h["counts"] = counts;
  h["width"] = width;
  return h;
}

// The run description of an aggregate; results written before there was
// one (or by another tool) get what their input_config says.
json description_of(const json& agg) {
  if (agg.contains("run_description") && agg["run_description"].is_object()) return agg["run_description"];
  RunDescription d;
  d.date = agg.value("start_time", std::string("unknown"));
  if (agg.contains("input_config") && agg["input_config"].is_object()) {
    const auto& ic = agg["input_config"];
    if (ic.contains("engine") && ic["engine"].is_object()) {
      const auto& e = ic["engine"];
      if (e.value("virtual_time", false)) {
        d.kind = "predicted";
        d.engine = "agentperf-sim";
        d.time_scale = 1.0;
      }
      if (e.contains("model") && e["model"].is_string()) d.model = e["model"].get<std::string>();
      if (e.contains("hardware") && e["hardware"].is_string()) d.hardware = e["hardware"].get<std::string>();
      if (e.contains("tp") && e["tp"].is_number()) d.tp = e["tp"].get<int>();
    }
    if (ic.contains("load") && ic["load"].is_object() && ic["load"]["concurrency"].is_number())
      d.concurrency = ic["load"]["concurrency"].get<int>();
  }
  if (agg.contains("run_info") && agg["run_info"].contains("cli_command") && agg["run_info"]["cli_command"].is_string())
    d.command_line = agg["run_info"]["cli_command"].get<std::string>();
  json j = d.to_json();
  j["agentperf_version"] = agg.value("agentperf_version", std::string("unknown"));  // the producer's, not ours
  return j;
}

// Scraped server metrics (server_metrics_timeline.jsonl), seconds from t0.
json server_timeline(const fs::path& file, std::int64_t t0) {
  std::ifstream sm(file);
  json st = json::array(), running = json::array(), queue = json::array(), kv = json::array(), hit = json::array(),
       host = json::array();
  auto pick = [](const json& m, std::initializer_list<const char*> names) -> json {
    for (const char* n : names)
      if (m.contains(n)) return m[n];
    return nullptr;
  };
  double prev_cached = -1, prev_prompt = -1;
  std::string line;
  while (std::getline(sm, line)) {
    auto s = json::parse(line, nullptr, false);
    if (s.is_discarded() || !s.contains("metrics") || !s["t_ns"].is_number()) continue;
    const auto& m = s["metrics"];
    st.push_back(static_cast<double>(s["t_ns"].get<std::int64_t>() - t0) / 1e9);
    running.push_back(pick(m, {"sglang:num_running_reqs", "sglang:num_requests_running", "vllm:num_requests_running"}));
    queue.push_back(pick(m, {"sglang:num_queue_reqs", "sglang:num_requests_waiting", "vllm:num_requests_waiting"}));
    json usage = pick(m, {"sglang:token_usage", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"});
    kv.push_back(usage.is_number() ? json(100 * usage.get<double>()) : json(nullptr));
    // Hit rate over each interval from the counters, else the gauge.
    const json cached = pick(m, {"sglang:cached_tokens_total", "vllm:prefix_cache_hits_total"});
    const json prompt = pick(m, {"sglang:prompt_tokens_total", "vllm:prefix_cache_queries_total"});
    json h = nullptr;
    if (cached.is_number() && prompt.is_number()) {
      const double c = cached.get<double>(), p = prompt.get<double>();
      if (prev_prompt >= 0 && p > prev_prompt) h = 100 * (c - prev_cached) / (p - prev_prompt);
      prev_cached = c;
      prev_prompt = p;
    } else if (m.contains("sglang:cache_hit_rate")) {
      h = 100 * m["sglang:cache_hit_rate"].get<double>();
    }
    hit.push_back(h);
    // Host-memory KV cache (SGLang HiCache, vLLM CPU offload) in use.
    const json hu = pick(m, {"sglang:hicache_host_used_tokens"}), ht = pick(m, {"sglang:hicache_host_total_tokens"});
    const json cpu = pick(m, {"vllm:cpu_kv_cache_usage_perc"});
    if (hu.is_number() && ht.is_number() && ht.get<double>() > 0)
      host.push_back(100 * hu.get<double>() / ht.get<double>());
    else
      host.push_back(cpu.is_number() ? json(100 * cpu.get<double>()) : json(nullptr));
  }
  if (st.empty()) return nullptr;
  const bool any_host = std::any_of(host.begin(), host.end(), [](const json& v) { return !v.is_null(); });
  return {{"t", st},   {"running", running}, {"queue", queue}, {"kv_usage_pct", kv}, {"cache_hit_pct", hit},
          {"host_cache_pct", any_host ? host : json(nullptr)}};
}

// The same directory however it was written (results/c8, ./results/c8/).
bool same_dir(const std::string& a, const std::string& b) {
  if (a == b) return true;
  std::error_code ea, eb;
  const auto ca = fs::weakly_canonical(a, ea), cb = fs::weakly_canonical(b, eb);
  return !ea && !eb && ca == cb;
}

// A result directory's GPU telemetry: --gpu-metrics, else its own file.
std::string telemetry_file(const std::string& dir, const ReportOptions& opts) {
  for (const auto& [d, file] : opts.gpu_metrics)
    if (same_dir(d, dir)) return file;
  for (const char* name : {"gpu_metrics.csv", "gpu_telemetry_export.jsonl"})
    if (fs::exists(fs::path(dir) / name)) return (fs::path(dir) / name).string();
  return "";
}

}  // namespace

json report_data(const std::vector<std::string>& dirs, const ReportOptions& opts) {
  for (const auto& [d, file] : opts.gpu_metrics) {
    if (std::none_of(dirs.begin(), dirs.end(), [&](const std::string& x) { return same_dir(x, d); }))
      throw UserError("--gpu-metrics " + d + "=" + file + ": '" + d + "' is not one of the result directories");
    if (!fs::exists(file)) throw UserError("--gpu-metrics " + d + "=" + file + ": no such file");
  }
  json data = {{"version", std::string(version())}, {"points", json::array()}, {"runs", json::array()},
               {"warnings", json::array()}};
  data["options"] = {{"gpu_price_per_hour", opts.gpu_price_per_hour ? json(*opts.gpu_price_per_hour) : json(nullptr)},
                     {"gpu_power_watts", opts.gpu_power_watts ? json(*opts.gpu_power_watts) : json(nullptr)}};
  // A capacity search's folder (capacity.json) stands for its measured
  // points: each point's run folder is read as a result directory, and the
  // search's answer goes to data["capacity"] with each point's index.
  std::vector<std::string> result_dirs;
  std::vector<std::pair<std::string, json>> searches;  // folder, capacity.json
  for (const auto& dir : dirs) {
    const fs::path d(dir);
    if (fs::exists(d / "capacity.json") && !fs::exists(d / "profile_export.jsonl")) {
      std::ifstream in(d / "capacity.json");
      json cap = json::parse(in, nullptr, false);
      if (cap.is_discarded() || !cap.is_object() || !cap.contains("measured") || !cap["measured"].is_array())
        throw UserError((d / "capacity.json").string() + ": not a capacity search (expected JSON with \"measured\")");
      for (auto& m : cap["measured"]) {
        if (!m.is_object() || !m.contains("concurrency") || !m["concurrency"].is_number_integer())
          throw UserError((d / "capacity.json").string() + ": a measured point without an integer \"concurrency\"");
        // The point's folder beside capacity.json (the file's own path is
        // relative to where the search ran).
        const fs::path point = d / ("c" + std::to_string(m["concurrency"].get<int>()));
        if (fs::exists(point / "profile_export.jsonl")) {
          m["point"] = result_dirs.size();
          result_dirs.push_back(point.string());
        } else {
          m["point"] = nullptr;
        }
      }
      searches.emplace_back(dir, std::move(cap));
      continue;
    }
    result_dirs.push_back(dir);
  }
  for (const auto& dir : result_dirs) {
    const fs::path d(dir);
    const auto jsonl = d / "profile_export.jsonl";
    const auto aggp = d / "profile_export_aiperf.json";
    if (!fs::exists(jsonl)) throw UserError("'" + dir + "' has no profile_export.jsonl (expected a result directory)");
    json agg = json::object();
    if (fs::exists(aggp)) {
      std::ifstream in(aggp);
      agg = json::parse(in, nullptr, false);
      if (agg.is_discarded()) throw UserError(aggp.string() + ": not valid JSON");
    }
    json desc = description_of(agg);
    if (agg.contains("unexpected_prefix_cache") && agg["unexpected_prefix_cache"].contains("message"))
      data["warnings"].push_back(dir + ": " + agg["unexpected_prefix_cache"]["message"].get<std::string>());
    if (agg.contains("confidence_intervals") && agg["confidence_intervals"].is_object()) {
      // A point that rests on few units, or whose intervals are wide, is said
      // to be so next to the charts that draw it (metrics/confidence.h).
      const auto& ci = agg["confidence_intervals"];
      if (ci.value("small_sample", false))
        data["warnings"].push_back(dir + ": small sample: " + std::to_string(ci.value("units", 0)) + " " +
                                   ci.value("unit", std::string("unit")) + "s (fewer than " +
                                   std::to_string(ci.value("min_units", 0)) + "); its numbers are not firm");
      if (ci.contains("wide") && ci["wide"].is_array() && !ci["wide"].empty()) {
        std::string w;
        for (const auto& x : ci["wide"]) w += (w.empty() ? "" : ", ") + x.get<std::string>();
        data["warnings"].push_back(dir + ": 95 % intervals wider than 20 % of the value: " + w);
      }
    }
    if (!desc.contains("kind") || !desc["kind"].is_string()) desc["kind"] = "measured";
    if (desc.contains("concurrency") && !desc["concurrency"].is_number_integer()) desc.erase("concurrency");
    // GPUs per run: --gpus, else what the run says (its description, then
    // the InferenceX section of a replay), else 1.
    int gpus = opts.gpus;
    if (gpus <= 0 && desc.contains("gpus") && desc["gpus"].is_number_integer()) gpus = desc["gpus"].get<int>();
    if (gpus <= 0 && agg.contains("inferencex")) gpus = agg["inferencex"]["throughput"].value("num_gpus", 1);
    if (gpus <= 0) gpus = 1;

    std::vector<json> recs;
    std::ifstream in(jsonl);
    std::string line;
    std::size_t n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.empty()) continue;
      auto r = json::parse(line, nullptr, false);
      if (r.is_discarded() || !r.contains("metadata") || !r["metadata"].is_object() ||
          !r["metadata"].contains("request_start_ns") || !r["metadata"]["request_start_ns"].is_number_integer() ||
          !r["metadata"].contains("request_end_ns") || !r["metadata"]["request_end_ns"].is_number_integer())
        throw UserError(jsonl.string() + ":" + std::to_string(n) +
                        ": not a profile_export record (expected metadata.request_start_ns and request_end_ns)");
      recs.push_back(std::move(r));
    }
    // The run's clock starts at its first request, warmup included.
    std::int64_t t0 = INT64_MAX, t1 = 0;
    for (const auto& r : recs) {
      t0 = std::min(t0, r["metadata"]["request_start_ns"].get<std::int64_t>());
      t1 = std::max(t1, r["metadata"]["request_end_ns"].get<std::int64_t>());
    }
    std::vector<double> ttft, itl, e2el, e2el_tok, e2el_s, isls, osls;
    json per_request = {{"t", json::array()}, {"ttft", json::array()}, {"itl", json::array()}};
    double isl = 0, osl = 0, cached = 0;
    std::int64_t first = INT64_MAX, last = 0, ok = 0, errors = 0;
    for (const auto& r : recs) {
      const auto& md = r["metadata"];
      if (md.value("benchmark_phase", "profiling") != "profiling") continue;
      if (r.contains("error") && !r["error"].is_null()) {
        ++errors;
        continue;
      }
      ++ok;
      first = std::min(first, md["request_start_ns"].get<std::int64_t>());
      last = std::max(last, md["request_end_ns"].get<std::int64_t>());
      const double t = metric(r, "time_to_first_token"), i = metric(r, "inter_token_latency"),
                   e = metric(r, "request_latency"), in_t = metric(r, "input_sequence_length"),
                   out_t = metric(r, "output_sequence_length"), c = metric(r, "usage_prompt_cache_read_tokens");
      if (t > 0) ttft.push_back(t);
      if (i > 0) itl.push_back(i);
      if (e > 0) e2el.push_back(e);
      if (e > 0) e2el_s.push_back(e / 1000);
      if (e > 0 && out_t > 0) e2el_tok.push_back(e / 1000 / out_t);
      if (in_t > 0) { isl += in_t; isls.push_back(in_t); }
      if (out_t > 0) { osl += out_t; osls.push_back(out_t); }
      if (c > 0) cached += c;
      per_request["t"].push_back(static_cast<double>(md["request_start_ns"].get<std::int64_t>() - t0) / 1e9);
      per_request["ttft"].push_back(t > 0 ? json(t) : json(nullptr));
      per_request["itl"].push_back(i > 0 ? json(i) : json(nullptr));
    }
    // At most ~3000 requests per run on the page: every k-th, in start order.
    if (per_request["t"].size() > 3000) {
      const std::size_t k = (per_request["t"].size() + 2999) / 3000;
      json thin = {{"t", json::array()}, {"ttft", json::array()}, {"itl", json::array()}};
      for (std::size_t j = 0; j < per_request["t"].size(); j += k)
        for (const char* key : {"t", "ttft", "itl"}) thin[key].push_back(per_request[key][j]);
      per_request = std::move(thin);
    }
    {
      // Start order, for a line through time.
      std::vector<std::size_t> idx(per_request["t"].size());
      for (std::size_t j = 0; j < idx.size(); ++j) idx[j] = j;
      std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return per_request["t"][a] < per_request["t"][b]; });
      json sorted = {{"t", json::array()}, {"ttft", json::array()}, {"itl", json::array()}};
      for (auto j : idx)
        for (const char* key : {"t", "ttft", "itl"}) sorted[key].push_back(per_request[key][j]);
      per_request = std::move(sorted);
    }
    const double dur = ok > 0 ? static_cast<double>(last - first) / 1e9 : 0;
    std::string name = d.filename().string();
    if (name.empty()) name = d.parent_path().filename().string();
    if (desc.contains("concurrency")) name += " (c=" + std::to_string(desc["concurrency"].get<int>()) + ")";
    std::vector<double> itl_s;
    for (double v : itl) itl_s.push_back(v / 1000);
    const double tput = dur > 0 ? (isl + osl) / dur / gpus : 0.0;
    json point = {{"name", name},
                  {"dir", dir},
                  {"kind", desc["kind"]},
                  {"description", desc},
                  {"concurrency", desc.contains("concurrency") ? desc["concurrency"] : json(nullptr)},
                  {"requests", ok},
                  {"errors", errors},
                  {"gpus", gpus},
                  {"tput_per_gpu", tput},
                  {"output_per_gpu", dur > 0 ? osl / dur / gpus : 0.0},
                  {"intvty", pct_block(itl_s, true)},
                  {"e2e_intvty", pct_block(e2el_tok, true)},
                  {"e2el_s", pct_block(e2el_s, false)},
                  {"ttft", pct_block(ttft, false)},
                  {"itl", pct_block(itl, false)},
                  {"ttft_p50", ttft.empty() ? 0.0 : pct_block(ttft, false)["p50"].get<double>()},
                  {"itl_p50", itl.empty() ? 0.0 : pct_block(itl, false)["p50"].get<double>()},
                  {"cache_hit", isl > 0 ? cached / isl : 0.0}};
    // The run's 95 % intervals of the paired statistics (metrics/confidence.h),
    // on the page's scales: the throughput interval as a share of the
    // aggregate's throughput, applied to this page's per-GPU figure.
    {
      json iv = json::object();
      if (const auto t = throughput_interval_on(agg, tput)) iv["tput_per_gpu"] = {t->first, t->second};
      if (const auto t = aggregate_interval(agg, "time_to_first_token", "p50")) iv["ttft_p50"] = {t->first, t->second};
      if (const auto t = aggregate_interval(agg, "inter_token_latency", "p50")) iv["itl_p50"] = {t->first, t->second};
      if (!iv.empty()) point["interval"] = std::move(iv);
    }
    // GPU telemetry: its mean power over the profiling window, and its
    // series on the run's time axis.
    json gpu = nullptr;
    std::optional<MeanPower> measured_power;
    if (const std::string tf = telemetry_file(dir, opts); !tf.empty()) {
      const GpuTelemetry tel = read_gpu_telemetry(tf);
      std::string why;
      if (ok > 0) measured_power = mean_power(tel, first, last, &why);
      else why = "no profiling request";
      gpu = {{"file", tf}, {"gpus", telemetry_series(tel, t0, static_cast<double>(t1 - t0) / 1e9)}};
      if (gpu["gpus"].empty()) why = "no sample of " + tf + " falls within the run (another clock or time zone? nvidia-smi writes local time: set TZ)";
      if (measured_power) {
        gpu["mean_power_w"] = measured_power->total_w;
        gpu["power_gpus"] = measured_power->gpus;
      } else {
        gpu["note"] = why;
        data["warnings"].push_back(name + ": GPU telemetry " + tf + ": " + why);
      }
    }
    // Dollars per million (input + output) tokens: a GPU-hour serves
    // tput x 3600 tokens. Price: the flag, else the run description's.
    std::optional<double> price = opts.gpu_price_per_hour;
    std::string price_source = "--gpu-price-per-hour";
    if (!price && desc.contains("gpu_price_per_hour") && desc["gpu_price_per_hour"].is_number()) {
      price = desc["gpu_price_per_hour"].get<double>();
      price_source = "recipe";
    }
    if (price && tput > 0) {
      point["cost_per_mtok"] = cost_per_million_tokens(*price, tput);
      point["gpu_price_per_hour"] = *price;
      point["price_source"] = price_source;
    }
    // Tokens per joule: tokens/s over watts, all GPUs. Power: the flag (W per
    // GPU), else the telemetry's measured mean (all its GPUs), else the run
    // description's (W per GPU).
    std::optional<double> watts;
    std::string power_source;
    if (opts.gpu_power_watts && *opts.gpu_power_watts > 0) {
      watts = *opts.gpu_power_watts * gpus;
      power_source = "--gpu-power-watts";
    } else if (measured_power && measured_power->total_w > 0) {
      watts = measured_power->total_w;
      power_source = "telemetry";
    } else if (desc.contains("gpu_power_watts") && desc["gpu_power_watts"].is_number() &&
               desc["gpu_power_watts"].get<double>() > 0) {
      watts = desc["gpu_power_watts"].get<double>() * gpus;
      power_source = "recipe";
    }
    if (watts && tput > 0) {
      point["tokens_per_joule"] = tokens_per_joule(tput * gpus, *watts);
      point["power_w"] = *watts;
      point["power_source"] = power_source;
    }
    data["points"].push_back(point);

    // Timeline (1 s bins) and lanes, over all phases, from the run's start.
    const auto bins = static_cast<std::size_t>(std::max<std::int64_t>(1, (t1 - t0) / 1'000'000'000 + 1));
    std::vector<double> t(bins), rps(bins, 0), otps(bins, 0), inflight(bins, 0);
    for (std::size_t b = 0; b < bins; ++b) t[b] = static_cast<double>(b);
    std::map<std::string, json> lanes;
    std::map<std::string, int> trees;
    for (const auto& r : recs) {
      const auto& md = r["metadata"];
      const auto s = md["request_start_ns"].get<std::int64_t>() - t0;
      const auto e = md["request_end_ns"].get<std::int64_t>() - t0;
      const auto be = std::min<std::size_t>(bins - 1, static_cast<std::size_t>(e / 1'000'000'000));
      rps[be] += 1;
      const double out_t = metric(r, "output_sequence_length");
      if (out_t > 0) otps[be] += out_t;
      // Requests in flight, time-averaged over each bin: a request adds the
      // share of the bin it spans. (Counting every request that touched a
      // bin drew about 3x the real concurrency: at c1, a bin that saw three
      // short requests one after another showed 3.)
      for (auto b = static_cast<std::size_t>(std::max<std::int64_t>(0, s) / 1'000'000'000); b <= be && b < bins; ++b) {
        const std::int64_t lo = std::max<std::int64_t>(s, static_cast<std::int64_t>(b) * 1'000'000'000);
        const std::int64_t hi = std::min<std::int64_t>(e, static_cast<std::int64_t>(b + 1) * 1'000'000'000);
        if (hi > lo) inflight[b] += static_cast<double>(hi - lo) / 1e9;
      }
      const std::string lane = md.value("worker_id", "lane");
      // (contains() first: operator[] of a const json on a missing key is
      // undefined behaviour, and records without a session tree have none;
      // it crashed the report about once in 15 runs.)
      const std::string tree = md.contains("root_correlation_id") && md["root_correlation_id"].is_string()
                                   ? md["root_correlation_id"].get<std::string>()
                                   : std::to_string(md.value("session_num", 0));
      if (!trees.count(tree)) trees[tree] = static_cast<int>(trees.size());
      auto& l = lanes[lane];
      if (l.is_null()) l = {{"lane", lane}, {"spans", json::array()}};
      if (l["spans"].size() < 4000)
        l["spans"].push_back({static_cast<double>(s) / 1e9, static_cast<double>(e) / 1e9,
                              md.value("benchmark_phase", "profiling") == "warmup", trees[tree]});
    }
    const json server =
        fs::exists(d / "server_metrics_timeline.jsonl") ? server_timeline(d / "server_metrics_timeline.jsonl", t0) : json(nullptr);

    json lane_list = json::array();
    for (auto& [k, v] : lanes)
      if (lane_list.size() < 128) lane_list.push_back(v);
    data["runs"].push_back({{"name", name},
                            {"kind", desc["kind"]},
                            {"duration", static_cast<double>(t1 - t0) / 1e9},
                            // seconds of warmup before the first profiling request
                            {"profiling_start_s", ok > 0 ? static_cast<double>(first - t0) / 1e9 : 0.0},
                            {"cdf", {{"TTFT", downsample(ttft, 400)}, {"ITL", downsample(itl, 400)}, {"E2EL", downsample(e2el, 400)}}},
                            {"pct", {{"TTFT", point["ttft"]}, {"ITL", point["itl"]}, {"E2EL", pct_block(e2el, false)}}},
                            {"requests", per_request},
                            {"hist", {{"ISL", histogram(isls, 20)}, {"OSL", histogram(osls, 20)}}},
                            {"timeline", {{"t", t}, {"rps", rps}, {"otps", otps}, {"in_flight", inflight}}},
                            {"lanes", lane_list},
                            {"server", server},
                            {"gpu", gpu}});
  }
  data["capacity"] = json::array();
  for (auto& [dir, cap] : searches) data["capacity"].push_back(capacity_section(dir, cap));
  group_points(data);
  return data;
}

std::string render_report(const json& data) {
  std::string html = report_template();
  auto replace = [&](const std::string& marker, const std::string& with) {
    const auto at = html.find(marker);
    if (at == std::string::npos) throw std::logic_error("report template lacks " + marker);
    html.replace(at, marker.size(), with);
  };
  std::string payload = data.dump(-1, ' ', false, json::error_handler_t::replace);
  // Keep "</script>" in strings from closing the script element.
  for (std::size_t at = 0; (at = payload.find("</", at)) != std::string::npos; at += 3) payload.replace(at, 2, "<\\/");
  replace("/*UPLOT_CSS*/", uplot_css());
  replace("/*UPLOT_JS*/", uplot_js());
  replace("/*REPORT_DATA*/", payload);
  return html;
}

}  // namespace agentperf::report
