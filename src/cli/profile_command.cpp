#include "cli/profile_command.h"

#include <cstdio>
#include <fstream>
#include <cmath>
#include <algorithm>
#include <filesystem>
#include <random>
#include <sstream>
#include <nlohmann/json.hpp>

#include "cli/cli_numbers.h"
#include "cli/run_descriptions.h"
#include "common/atomic_file.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/fd_limit.h"
#include "common/run_control.h"
#include "common/rng.h"
#include "load/load_runner.h"
#include "load/request_builder.h"
#include "metrics/export.h"
#include "load/metrics_scraper.h"
#include "metrics/record_stream.h"
#include "metrics/timeslice_export.h"
#include "net/url.h"

namespace agentperf::cli {
namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

void add_profile_options(CLI::App& cmd, ProfileConfig& cfg, ProfileCliText& text) {
  add_target_options(cmd, cfg, text);
  add_load_options(cmd, cfg, text);
  add_prompt_length_options(cmd, cfg);
  add_prompt_encoding_options(cmd, cfg, text);
  add_client_options(cmd, cfg);
  add_output_options(cmd, cfg);
  add_describe_option(cmd, text.describe);
  cmd.add_option("--repeat", cfg.repeat,
                 "Run the point N times, each with fresh prompts in its own folder (-o/run-1 ...), and report the "
                 "spread of the headline metrics across the runs (repeat_summary.json)")
      ->transform(int_in(1, 1000))->group("Load");
}

void add_target_options(CLI::App& cmd, ClientConfig& cfg, ProfileCliText& text) {
  auto* target = "Target";
  cmd.add_option("-u,--url", cfg.url, "Server base URL (http:// or https://)")->group(target)->capture_default_str();
  cmd.add_option("--endpoint", cfg.endpoint, "Request path; default /v1/chat/completions or /v1/completions")
      ->group(target);
  cmd.add_option("--endpoint-type", text.endpoint_type, "chat or completions")
      ->check(CLI::IsMember({"chat", "completions"}))
      ->group(target)
      ->capture_default_str();
  cmd.add_option("-m,--model", cfg.model, "Model name; default: the first id from GET /v1/models")->group(target);
  cmd.add_flag("!--no-model-check", cfg.model_check,
               "Accept a --model that the server's GET /v1/models does not list (a gateway that routes by name)")
      ->group(target);
  cmd.add_option("--wait-for-server", cfg.wait_for_server_s,
                 "Seconds to keep trying a server that is not up yet (refuses connections, or answers 502/503 "
                 "while loading) before giving up; default 0: fail at once")
      ->check(seconds_in(0, limits::max_seconds))->group(target);
  cmd.add_flag("--streaming,!--no-streaming", cfg.streaming, "Stream responses over SSE (default on)")->group(target);
  cmd.add_option("-H,--header", text.headers, "Extra request header 'Name: value' (repeatable)")->group(target);
  cmd.add_option("--api-key", cfg.api_key, "Sent as 'Authorization: Bearer KEY'")->group(target);
  cmd.add_option("--extra-inputs", text.extra_inputs,
                 "Extra body field key:value, value parsed as JSON when it is JSON (e.g. ignore_eos:true); repeatable")
      ->group(target);
}

void add_load_options(CLI::App& cmd, LoadConfig& cfg, ProfileCliText& text) {
  auto* load = "Load";
  cmd.add_option("-c,--concurrency", cfg.concurrency, "Closed loop: N requests in flight at all times; with "
                 "--request-rate, a cap on requests in flight")
      ->transform(int_in(1, limits::max_concurrency))->group(load);
  cmd.add_option("-r,--request-rate", cfg.request_rate, "Open loop: R requests per second")
      ->check(real_in(0, limits::max_request_rate, true, "a rate in requests/s"))->group(load);
  cmd.add_option("--arrival-pattern", text.arrival, "poisson or constant inter-arrival times (open loop)")
      ->check(CLI::IsMember({"poisson", "constant"}))
      ->group(load)
      ->capture_default_str();
  cmd.add_option("-n,--request-count", cfg.request_count,
                 "Profiling requests to send (default: 10 x concurrency, at least 100, unless --duration is given)")
      ->transform(int_in(1, limits::max_request_count))->group(load);
  cmd.add_option("-d,--duration,--benchmark-duration", cfg.duration_s,
                 "Stop sending after this many seconds of profiling")
      ->check(positive_seconds_up_to(limits::max_seconds))->group(load);
  cmd.add_option("--grace-period,--benchmark-grace-period", cfg.grace_period_s,
                 "After --duration, seconds to wait for in-flight requests before cancelling them")
      ->check(seconds_in(0, limits::max_seconds))->group(load)->capture_default_str();
  cmd.add_option("--warmup-request-count", cfg.warmup_request_count,
                 "Requests sent and drained before profiling; excluded from metrics")
      ->transform(int_in(0, limits::max_request_count))->group(load)->capture_default_str();
  cmd.add_option("--workers", cfg.workers, "Client event loops (threads)")
      ->transform(int_in(1, limits::max_workers))->group(load)->capture_default_str();
  cmd.add_flag("--busy-poll", cfg.busy_poll,
               "Each client worker spins on its event loop instead of sleeping: events are stamped without a "
               "thread wake-up (timestamp error p99 about 3x lower), at the cost of one busy core per worker")
      ->group(load);
  cmd.add_option("--poll-spin-us", cfg.poll_spin_us,
                 "Microseconds a client worker keeps polling after its last event before it sleeps: events inside "
                 "the window are stamped without a thread wake-up, at most this much CPU per burst (0: sleep at once)")
      ->transform(int_in(0, 1'000'000))->group(load)->capture_default_str();
  cmd.add_option("--random-seed", cfg.seed,
                 "Seed for prompts and arrival times (default: a fresh seed per measured run, printed and recorded as "
                 "random_seed, so a run never meets the previous run's prompts in the server's prefix cache; "
                 "`sim predict` uses 0)")
      ->each([&given = cfg.seed_given](const std::string&) { given = true; })
      ->check(uint64_any())->group(load);
  cmd.add_option("--failed-request-threshold", cfg.failed_request_threshold,
                 "Stop the run when the error ratio exceeds this (0..1]; 1 = never")
      ->check(real_in(0, 1, true))->group(load)->capture_default_str();
  cmd.add_option("--max-error-rate", cfg.max_error_rate,
                 "Share of failed profiling requests a valid run may have (0..1); above it the run is INVALID and "
                 "exits 1")
      ->check(real_in(0, 1))->group(load)->capture_default_str();
}

void add_prompt_length_options(CLI::App& cmd, LoadConfig& cfg) {
  auto* prompt = "Prompts";
  cmd.add_option("--isl,--synthetic-input-tokens-mean", cfg.isl.mean,
                 "Input length in tokens (whole prompt, shared prefix included)")
      ->transform(tokens_in(1, limits::max_tokens))->group(prompt)->capture_default_str();
  cmd.add_option("--isl-stddev,--synthetic-input-tokens-stddev", cfg.isl.stddev, "Std-dev of input length")
      ->check(real_in(0, limits::max_tokens, false, "a number of tokens"))->group(prompt)->capture_default_str();
  cmd.add_option("--osl,--output-tokens-mean", cfg.osl.mean, "Output length in tokens (sent as max_tokens)")
      ->transform(tokens_in(1, limits::max_tokens))->group(prompt)->capture_default_str();
  cmd.add_option("--osl-stddev,--output-tokens-stddev", cfg.osl.stddev, "Std-dev of output length")
      ->check(real_in(0, limits::max_tokens, false, "a number of tokens"))->group(prompt)->capture_default_str();
  cmd.add_option("--prefix-length,--prompt-prefix-length", cfg.prefix_length,
                 "Tokens of shared prefix at the start of every prompt")
      ->transform(tokens_in(0, limits::max_tokens))->group(prompt)->capture_default_str();
  cmd.add_option("--num-prefix-groups,--prompt-prefix-pool-size", cfg.num_prefix_groups,
                 "Distinct shared prefixes, assigned round-robin")
      ->transform(int_in(0, limits::max_prefix_groups))->group(prompt)->capture_default_str();
}

void add_prompt_encoding_options(CLI::App& cmd, ClientConfig& cfg, ProfileCliText& text) {
  auto* prompt = "Prompts";
  cmd.add_option("--prompt-format", text.prompt_format,
                 "token-ids (exact length; completions only), text, or auto (token-ids for completions)")
      ->check(CLI::IsMember({"auto", "token-ids", "text"}))
      ->group(prompt)
      ->capture_default_str();
  cmd.add_option("--tokenizer", cfg.tokenizer_path,
                 "HF tokenizer.json of the target model: text prompts of exact token length, and output tokens "
                 "counted on the client when the server sends no usage")
      ->check(CLI::ExistingFile)->group(prompt);
  cmd.add_option("--token-id-range", text.token_id_range, "MIN:MAX range of synthetic token ids (default 1000:30000)")
      ->group(prompt);
}

void add_client_options(CLI::App& cmd, ClientConfig& cfg) {
  auto* client = "Client";
  cmd.add_option("--connect-timeout", cfg.connect_timeout_s, "Seconds to establish a connection")
      ->check(positive_seconds_up_to(limits::max_seconds))->group(client)->capture_default_str();
  cmd.add_option("--request-timeout,--request-timeout-seconds", cfg.request_timeout_s,
                 "Seconds for one whole request")
      ->check(positive_seconds_up_to(limits::max_seconds))->group(client)->capture_default_str();
  cmd.add_option("--keepalive-idle", cfg.keepalive_idle_s,
                 "Reuse a pooled connection only if idle less than this many seconds (keep it below the server's "
                 "keep-alive timeout)")
      ->check(seconds_in(0, limits::max_seconds))->group(client)->capture_default_str();
  cmd.add_option("--connect-attempts", cfg.connect_attempts, "Connection attempts before a request fails")
      ->transform(int_in(1, limits::max_connect_attempts))->group(client)->capture_default_str();
  cmd.add_flag("--tls-verify", cfg.tls_verify, "Verify the server's TLS certificate")->group(client);
}

void add_output_options(CLI::App& cmd, RunOutputConfig& cfg) {
  auto* output = "Output";
  cmd.add_flag("--server-metrics", cfg.server_metrics,
               "Scrape the server's Prometheus /metrics during the run into server_metrics_timeline.jsonl")
      ->group(output);
  cmd.add_option("--server-metrics-url", cfg.server_metrics_url, "Metrics URL (default: <url>/metrics); implies --server-metrics")
      ->group(output);
  cmd.add_option("--server-metrics-interval", cfg.server_metrics_interval_s, "Seconds between scrapes")
      ->check(positive_seconds_up_to(limits::max_interval_s))->group(output)->capture_default_str();
  cmd.add_option("--slo", cfg.slos,
                 "Service-level objective, repeatable: NAME_pNN<=VALUE or >=VALUE (ttft_p90<=2s, itl_p99<=50ms, "
                 "interactivity_p90>=40, e2e_interactivity_p90>=50); the aggregate then has goodput, requests/s meeting "
                 "every one (docs/capacity.md)")
      ->group(output);
  cmd.add_option("--slice-duration", cfg.slice_duration_s,
                 "Time slices of this many seconds, as AIPerf's --slice-duration writes them: every series' "
                 "timeslices in server_metrics_export.json (InferenceX's plot script draws its server panels from "
                 "them) and the client-side profile_export_aiperf_timeslices.json/.csv")
      ->check(positive_seconds_up_to(limits::max_interval_s))->group(output);
  cmd.add_option("-o,--artifact-dir,--output-artifact-dir", cfg.artifact_dir,
                 "Folder for result files (default: a new folder per run under artifacts/, named as AIPerf names it "
                 "plus the start time; artifacts/latest links to it)")
      ->each([&given = cfg.artifact_dir_given](const std::string&) { given = true; })
      ->group(output);
  cmd.add_flag("--overwrite", cfg.overwrite,
               "Replace the results of an earlier run in -o (without it, a folder that holds results is refused)")
      ->group(output);
  cmd.add_flag("-q,--quiet", cfg.quiet, "No progress line")->group(output);
  cmd.add_option("--progress-interval", cfg.progress_interval_s, "Seconds between progress updates")
      ->check(positive_seconds_up_to(limits::max_interval_s))->group(output)->capture_default_str();
}

void finish_client_options(ClientConfig& cfg, const ProfileCliText& text) {
  cfg.endpoint_type = text.endpoint_type == "completions" ? EndpointType::completions : EndpointType::chat;
  cfg.prompt_format = text.prompt_format == "token-ids" ? PromptFormat::token_ids
                      : text.prompt_format == "text"    ? PromptFormat::text
                                                        : PromptFormat::auto_;
  cfg.headers.clear();
  for (const auto& h : text.headers) {
    const auto colon = h.find(':');
    if (colon == std::string::npos || trim(h.substr(0, colon)).empty())
      throw UserError("--header '" + h + "': expected 'Name: value'");
    cfg.headers.emplace_back(trim(h.substr(0, colon)), trim(h.substr(colon + 1)));
  }
  cfg.extra_inputs.clear();
  for (const auto& e : text.extra_inputs) {
    const auto colon = e.find(':');
    if (colon == std::string::npos || colon == 0)
      throw UserError("--extra-inputs '" + e + "': expected key:value (value as JSON, e.g. ignore_eos:true)");
    const std::string key = e.substr(0, colon), value = e.substr(colon + 1);
    auto parsed = nlohmann::json::parse(value, nullptr, false);
    cfg.extra_inputs.emplace_back(key, parsed.is_discarded() ? nlohmann::json(value).dump() : parsed.dump());
  }
  if (!text.token_id_range.empty()) {
    const auto colon = text.token_id_range.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      std::size_t used = 0;
      cfg.token_id_min = std::stoi(text.token_id_range.substr(0, colon), &used);
      cfg.token_id_max = std::stoi(text.token_id_range.substr(colon + 1), &used);
    } catch (const std::exception&) {
      throw UserError("--token-id-range '" + text.token_id_range + "': expected MIN:MAX, e.g. 1000:30000");
    }
    cfg.token_id_range_given = true;
  }
}

void finish_profile_options(ProfileConfig& cfg, const ProfileCliText& text) {
  finish_client_options(cfg, text);
  cfg.arrival = text.arrival == "constant" ? ArrivalPattern::constant : ArrivalPattern::poisson;
}

std::unique_ptr<MetricsScraper> start_server_metrics(const ClientConfig& client, const RunOutputConfig& out) {
  if (!out.server_metrics && out.server_metrics_url.empty()) return nullptr;
  std::string url = out.server_metrics_url;
  if (url.empty()) {
    const auto u = net::parse_url(client.url);
    url = u.origin() + net::join_path(u.path, "/metrics");
  }
  auto s = std::make_unique<MetricsScraper>(url, out.server_metrics_interval_s,
                                            (std::filesystem::path(out.artifact_dir) / "server_metrics_timeline.jsonl").string());
  s->set_slice_duration(out.slice_duration_s);
  s->start();
  return s;
}

void stop_server_metrics(std::unique_ptr<MetricsScraper>& s, const RunOutputConfig& out) {
  if (!s) return;
  const auto n = s->stop();
  if (!out.quiet)
    std::fprintf(stderr, "agentperf: %zu server-metrics samples (%zu failed scrapes) in server_metrics_timeline.jsonl\n", n,
                 s->failures());
  s.reset();
}

namespace {
std::string number_text(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}
}  // namespace

std::unique_ptr<OutputFolder> open_run_folder(RunOutputConfig& out, const std::string& model, EndpointType endpoint,
                                              const std::string& load, const std::string& cli_command) {
  if (!out.artifact_dir_given) out.artifact_dir = default_run_folder(out.artifact_dir, model, endpoint_type_name(endpoint), load).string();
  auto folder = std::make_unique<OutputFolder>(out.artifact_dir, out.overwrite, cli_command);
  if (!out.quiet && !out.artifact_dir_given)
    std::fprintf(stderr, "agentperf: results go to %s (a new folder for this run; -o chooses one)\n", out.artifact_dir.c_str());
  return folder;
}

void mark_latest_run(const RunOutputConfig& out) {
  if (out.artifact_dir_given) return;
  const std::filesystem::path dir(out.artifact_dir);
  link_latest_run(dir.parent_path(), dir);
}

int run_profile(ProfileConfig cfg, const std::string& cli_command, RunDescription description) {
  if (!cfg.request_count && !cfg.duration_s) {
    const double base = cfg.concurrency ? 10.0 * *cfg.concurrency : 10.0 * cfg.request_rate.value_or(10);
    cfg.request_count = std::max<std::int64_t>(100, static_cast<std::int64_t>(base));
    if (!cfg.quiet)
      std::fprintf(stderr, "agentperf: no --request-count or --duration given: sending %lld profiling requests\n",
                   static_cast<long long>(*cfg.request_count));
  }
  cfg.validate();
  // A socket per request in flight: raise the soft open-file limit, and
  // refuse a closed loop that cannot fit (common/fd_limit.h).
  if (cfg.concurrency) check_open_file_budget(static_cast<std::uint64_t>(*cfg.concurrency),
                                              "--concurrency " + std::to_string(*cfg.concurrency));
  else raise_open_file_limit();
  if (!cfg.seed_given) {
    // 53 bits: the seed round-trips through JSON readers that hold doubles.
    std::random_device rd;
    cfg.seed = ((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(wall_ns())) & ((1ULL << 53) - 1);
    if (!cfg.quiet)
      std::fprintf(stderr, "agentperf: prompts from seed %llu, new for this run (--random-seed %llu repeats them)\n",
                   static_cast<unsigned long long>(cfg.seed), static_cast<unsigned long long>(cfg.seed));
  }

  const ServedModel served = preflight_served_model(cfg);
  cfg.model = served.id;
  if (cfg.uses_token_ids()) {
    if (!cfg.token_id_range_given && served.vocab_size && cfg.token_id_max > *served.vocab_size) {
      // The default range is wider than this model's vocabulary: fit it.
      cfg.token_id_max = static_cast<int>(*served.vocab_size);
      cfg.token_id_min = std::min(cfg.token_id_min, cfg.token_id_max / 4);
      if (!cfg.quiet)
        std::fprintf(stderr, "agentperf: token ids %d:%d (the model's vocabulary has %lld ids)\n", cfg.token_id_min,
                     cfg.token_id_max, static_cast<long long>(*served.vocab_size));
    }
    check_token_ids_fit(cfg.token_id_min, cfg.token_id_max, served, "--token-id-range");
  }
  const auto folder = open_run_folder(cfg, served.id, cfg.endpoint_type,
                                      cfg.request_rate ? "request_rate" + number_text(*cfg.request_rate)
                                                       : "concurrency" + std::to_string(cfg.concurrency.value_or(1)),
                                      cli_command);
  const std::filesystem::path dir(cfg.artifact_dir);
  {
    // Requests the run may send: the count, or a generous guess for a
    // duration (10 requests/s per concurrent user or the open-loop rate).
    const double per_s = cfg.request_rate ? *cfg.request_rate : 10.0 * cfg.concurrency.value_or(1);
    const auto expected = static_cast<std::uint64_t>(
        cfg.request_count ? static_cast<double>(*cfg.request_count + cfg.warmup_request_count)
                          : std::min(1e9, per_s * cfg.duration_s.value_or(0) + static_cast<double>(cfg.warmup_request_count)));
    check_free_disk(dir, estimate_result_bytes(expected, static_cast<std::uint64_t>(cfg.osl.mean)),
                    "the results of ~" + std::to_string(expected) + " requests");
  }

  const std::string& model = served.id;
  if (!cfg.quiet)
    std::fprintf(stderr, "agentperf: profiling %s%s (model %s, %s)\n", cfg.url.c_str(), cfg.endpoint_path().c_str(),
                 model.c_str(),
                 cfg.request_rate ? ("open loop at " + std::to_string(*cfg.request_rate) + " req/s").c_str()
                                  : ("concurrency " + std::to_string(*cfg.concurrency)).c_str());

  // The run's one identity: the aggregate's benchmark_id, and the salt of
  // every X-Request-ID.
  Rng id_rng(mix_seed(cfg.seed, static_cast<std::uint64_t>(wall_ns())));
  const std::string benchmark_id = make_request_id(id_rng.next_u64(), id_rng.next_u64());
  LoadRunner runner(cfg, model, benchmark_id);
  RecordStreamWriter records(dir / "profile_export.jsonl");
  runner.set_record_sink(&records);
  auto scraper = start_server_metrics(cfg, cfg);
  install_stop_signal_handlers();
  RunResult result = runner.run();
  stop_server_metrics(scraper, cfg);
  const auto records_error = records.close();

  nlohmann::json input_config = cfg;
  const RunVerdict verdict = judge_run(result.records, result, cfg.max_error_rate);
  AggregateInputs in;
  in.run = &result;
  in.input_config = input_config;
  in.cli_command = cli_command;
  in.verdict = &verdict;
  in.records_error = records_error;
  in.benchmark_id = benchmark_id;
  in.expect_no_cached_prompts = cfg.prefix_length == 0 && cfg.num_prefix_groups == 0;
  in.slos = parse_slos(cfg.slos);
  description.served_model = served.id;
  if (cfg.concurrency) description.concurrency = *cfg.concurrency;
  if (cfg.request_rate) description.request_rate = *cfg.request_rate;
  description.workload = synthetic_workload(cfg);
  in.description = description;
  nlohmann::ordered_json agg = build_aggregate(result.records, in);
  // --slice-duration: the client-side time slices beside the aggregate.
  std::optional<std::string> write_error = records_error;
  if (cfg.slice_duration_s > 0) {
    try {
      write_client_timeslices(dir, result.records, cfg.slice_duration_s, input_config);
    } catch (const UserError& e) {
      if (!write_error) write_error = e.what();
    }
  }
  const int code = finish_measured_run(agg, verdict, dir, write_error, cfg.quiet, {}, cfg.summary);
  mark_latest_run(cfg);
  return code;
}

int run_profile_repeated(ProfileConfig cfg, const std::string& cli_command, RunDescription description) {
  if (cfg.repeat <= 1) return run_profile(std::move(cfg), cli_command, std::move(description));
  // Each run in a folder of its own under the base (the -o folder, else a new
  // one under artifacts/), each with fresh prompts (or --random-seed + i).
  const std::filesystem::path base =
      cfg.artifact_dir_given ? std::filesystem::path(cfg.artifact_dir)
                             : default_run_folder(cfg.artifact_dir, "repeat", endpoint_type_name(cfg.endpoint_type),
                                                  cfg.request_rate ? "request_rate" + number_text(*cfg.request_rate)
                                                                   : "concurrency" + std::to_string(cfg.concurrency.value_or(1)));
  std::vector<nlohmann::json> aggs;
  int worst = 0;
  for (int i = 1; i <= cfg.repeat; ++i) {
    ProfileConfig one = cfg;
    one.artifact_dir = (base / ("run-" + std::to_string(i))).string();
    one.artifact_dir_given = true;
    if (cfg.seed_given) one.seed = cfg.seed + static_cast<std::uint64_t>(i - 1);
    if (!cfg.quiet) std::fprintf(stderr, "agentperf: repeat %d of %d into %s\n", i, cfg.repeat, one.artifact_dir.c_str());
    const int code = run_profile(one, cli_command, description);
    if (code != 0 && worst == 0) worst = code;
    if (stop_requested()) break;
    std::ifstream in(std::filesystem::path(one.artifact_dir) / "profile_export_aiperf.json");
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded()) aggs.push_back(std::move(j));
  }
  // The spread across runs of each headline metric: what a single run's
  // bootstrap interval cannot see (the server's own run-to-run variation).
  struct Headline {
    const char* tag;
    const char* stat;
    const char* label;
  };
  const Headline headlines[] = {
      {"time_to_first_token", "avg", "TTFT mean (ms)"},      {"time_to_first_token", "p50", "TTFT p50 (ms)"},
      {"time_to_first_token", "p90", "TTFT p90 (ms)"},       {"inter_token_latency", "avg", "ITL mean (ms)"},
      {"request_latency", "avg", "Request latency mean (ms)"}, {"output_token_throughput", "avg", "Output tok/s"},
      {"total_token_throughput", "avg", "Total tok/s"},
  };
  nlohmann::ordered_json summary = {{"runs", aggs.size()}, {"asked", cfg.repeat}, {"base", base.string()}};
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  std::printf("\nAcross %zu runs:%-18s %10s %10s %10s %10s %8s\n", aggs.size(), "", "mean", "sd", "min", "max", "cv");
  for (const auto& h : headlines) {
    std::vector<double> v;
    for (const auto& a : aggs)
      if (a.contains(h.tag) && a[h.tag].contains(h.stat) && a[h.tag][h.stat].is_number()) v.push_back(a[h.tag][h.stat].get<double>());
    if (v.size() < 2) continue;
    double mean = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    double ss = 0;
    for (double x : v) ss += (x - mean) * (x - mean);
    const double sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
    const double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
    metrics[std::string(h.tag) + "." + h.stat] = {{"mean", mean}, {"sd", sd}, {"min", lo}, {"max", hi},
                                                   {"cv", mean != 0 ? sd / mean : 0.0}, {"values", v}};
    std::printf("  %-32s %10.2f %10.2f %10.2f %10.2f %7.1f%%\n", h.label, mean, sd, lo, hi, mean != 0 ? 100 * sd / mean : 0.0);
  }
  summary["metrics"] = metrics;
  try {
    write_file_atomically(base / "repeat_summary.json", summary.dump(2) + "\n");
    std::printf("Repeat summary: %s\n", (base / "repeat_summary.json").string().c_str());
  } catch (const UserError& e) {
    std::fprintf(stderr, "agentperf: error: %s\n", e.what());
    return exit_code::write_failed;
  }
  return worst;
}

int finish_measured_run(const nlohmann::ordered_json& agg, const RunVerdict& verdict, const std::filesystem::path& dir,
                        const std::optional<std::string>& records_error, bool quiet,
                        const std::function<void()>& print_more, bool print_table) {
  // The summary reaches the console whatever happens to the files.
  std::optional<std::string> write_error = records_error;
  try {
    write_run_results(dir, {}, agg, true);  // the records were streamed during the run
  } catch (const UserError& e) {
    if (!write_error) write_error = e.what();
  }
  if (print_table) print_summary(agg);
  if (print_more) print_more();
  if (write_error) {
    std::fprintf(stderr, "agentperf: error: results could not be written: %s\n", write_error->c_str());
    return exit_code::write_failed;
  }
  if (print_table) std::fprintf(stdout, "Results: %s\n", (dir / "profile_export_aiperf.json").string().c_str());
  if (!verdict.complete)
    std::fprintf(stderr, "agentperf: %s; results are partial (complete: false)\n", verdict.stop_reason.c_str());
  else if (!verdict.valid && !quiet)
    std::fprintf(stderr, "agentperf: the run is not valid; exit code %d\n", verdict.exit_code);
  return verdict.exit_code;
}

}  // namespace agentperf::cli
