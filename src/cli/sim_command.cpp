#include "cli/sim_command.h"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_numbers.h"
#include "cli/profile_command.h"
#include "cli/replay_options.h"
#include "cli/run_descriptions.h"
#include "cli/sim_options.h"
#include "cli/sim_validate_command.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "metrics/progress.h"
#include "metrics/export.h"
#include "sim/engine.h"
#include "sim/published_pools.h"
#include "sim/predictor.h"
#include "replay/virtual_replay.h"
#include "route/routing_policy.h"
#include "sim/sim_server.h"

#include <csignal>
#include <thread>

namespace agentperf::cli {

struct SimCommand {
  CLI::App* sim = nullptr;
  CLI::App* predict = nullptr;
  CLI::App* memory = nullptr;
  CLI::App* serve = nullptr;
  std::shared_ptr<SimValidateCommand> validate;
  SimEngineOptions predict_engine, memory_engine, serve_engine;
  sim::SimServerOptions serve_opts;
  ProfileConfig load;
  ProfileCliText load_text;
  sim::AgenticConfig agentic;
  replay::ReplayConfig replay;  // with --traces: the replay schedule
  ReplayTraceOptions traces;
  int dp = 1;                   // with --traces: engines behind a router
  bool dp_attention = false;    // the --dp engines are one engine's DP-attention ranks, stepping together
  std::string route_policy = "round_robin";
  int decode_engines = 0;              // with --traces: disaggregated decode engines behind the --dp prefill engines
  double kv_transfer_bandwidth = 0;    // their KV link, bytes/s (0: the hardware spec's)
  std::string published_pools;         // sim memory --published [FILE]: stated pools against the plan
  std::string memory_markdown;         // sim memory --published --markdown FILE
  bool write_results = false;
};

namespace {

std::atomic<bool> g_stop_serving{false};
extern "C" void on_stop_signal(int) { g_stop_serving = true; }

int run_serve(SimCommand& sc) {
  finish_sim_engine_options(sc.serve_engine);
  auto engine = std::make_unique<sim::Engine>(sim::load_model_spec(sc.serve_engine.model),
                                              load_engine_hardware(sc.serve_engine), sc.serve_engine.cfg);
  const auto& plan = engine->plan();
  std::fprintf(stderr, "agentperf sim: %s on %s TP%d: KV pool %lld tokens, %lld state slots, max running %lld\n",
               engine->model().name.c_str(), sc.serve_engine.hardware.c_str(), sc.serve_engine.cfg.tp,
               static_cast<long long>(plan.kv_tokens), static_cast<long long>(plan.mamba_slots),
               static_cast<long long>(plan.max_running_requests));
  sim::SimServer server(std::move(engine), sc.serve_opts);
  server.start();
  std::fprintf(stderr, "agentperf sim: serving on %s (time scale %.3g); Ctrl-C stops\n", server.url().c_str(),
               sc.serve_opts.time_scale);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  while (!g_stop_serving) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.stop();
  std::fprintf(stderr, "agentperf sim: stopped\n");
  return 0;
}

void print_engine_summary(const sim::EngineStats& s, const sim::MemoryPlan& plan, std::FILE* out) {
  const double hit = s.cache_hit_rate();
  std::fprintf(out, "Engine: KV pool %lld tokens, %lld state slots, max running %lld | cache hit %.1f%% (device %lld, host %lld tokens) | "
               "%lld retractions, %lld rejected | %lld steps (%lld prefill)\n",
               static_cast<long long>(plan.kv_tokens), static_cast<long long>(plan.mamba_slots),
               static_cast<long long>(plan.max_running_requests), 100 * hit,
               static_cast<long long>(s.cached_tokens_device), static_cast<long long>(s.cached_tokens_host),
               static_cast<long long>(s.retractions), static_cast<long long>(s.rejected),
               static_cast<long long>(s.steps), static_cast<long long>(s.prefill_steps));
  std::fprintf(out, "Pools: prefill rounds stopped by the KV pool %lld (and %lld retractions), by state slots %lld, "
               "by the running cap %lld; binding pool: %s | %lld tokens evicted from the device\n",
               static_cast<long long>(s.admission_blocked_kv), static_cast<long long>(s.retractions),
               static_cast<long long>(s.admission_blocked_state),
               static_cast<long long>(s.admission_blocked_running_cap), sim::binding_pool(s),
               static_cast<long long>(s.device_evicted_tokens));
  if (plan.swa_prefix_tails >= 0)
    std::fprintf(out, "SWA tails: %lld kept (cap-sized sliding-window pool), %lld evicted; %lld prompt tokens recomputed "
                 "although cached, for want of their window\n",
                 static_cast<long long>(plan.swa_prefix_tails), static_cast<long long>(s.swa_tails_evicted),
                 static_cast<long long>(s.swa_tail_lost_tokens));
  if (const double walk = s.serial_walk_share(); walk > 0)
    std::fprintf(out, "Serial KV walk: %.1f %% of the busy time (vLLM's Triton attention walking the longest context "
                 "in one workgroup: docs/sim.md)\n",
                 100 * walk);
  if (s.spec_verify_steps)
    std::fprintf(out, "MTP: mean accept length %.3f over %lld verify steps\n",
                 s.spec_accept_length_sum / static_cast<double>(s.spec_verify_steps),
                 static_cast<long long>(s.spec_verify_steps));
}

// A prediction's run description: the simulated engine (DP engines behind
// the router with --traces), in virtual time, which stands for real time.
RunDescription describe_prediction(const SimCommand& sc) {
  RunDescription d = describe_sim_engine(sc.predict_engine);
  d.kind = "predicted";
  d.time_scale = 1.0;
  if (sc.dp > 1) {
    d.dp = sc.dp;
    d.gpus = sc.dp * sc.predict_engine.cfg.tp;
    d.gpus_source = "the simulated deployment (TP x --dp)";
  }
  return d;
}

// `sim predict --traces`: the replay schedule of `agentperf replay`, played
// on the engine in virtual time (replay/virtual_replay.h). The load flags
// map onto it: --concurrency is the lane count, --duration, --grace-period,
// --random-seed and --failed-request-threshold keep their meaning.
int run_predict_traces(SimCommand& sc, const std::string& cli_command) {
  auto& load = sc.load;
  auto& cfg = sc.replay;
  if (!load.concurrency) throw UserError("sim predict --traces needs --concurrency N (the lanes)");
  if (load.request_rate) throw UserError("sim predict --traces: --request-rate does not apply (lanes are closed loops)");
  cfg.lanes = *load.concurrency;
  if (load.duration_s) cfg.duration_s = *load.duration_s;
  cfg.grace_s = load.grace_period_s;
  cfg.seed = load.seed;
  cfg.failed_request_threshold = load.failed_request_threshold;
  cfg.output.quiet = true;
  cfg.benchmark_id = "sim-predict";
  if (load.token_id_range_given) {
    try {
      cfg.token_ids = trace::TokenIdRange::from_bounds(load.token_id_min, load.token_id_max);
    } catch (const std::invalid_argument& e) {
      throw UserError("--token-id-range '" + sc.load_text.token_id_range + "': " + e.what());
    }
  }
  trace::LoadStats stats;
  auto traces = load_replay_traces(sc.traces, cfg, load.quiet, stats);
  std::vector<std::unique_ptr<sim::Engine>> engines;
  std::vector<sim::Engine*> ranks;
  const sim::ModelSpec model = sim::load_model_spec(sc.predict_engine.model);
  const sim::HardwareSpec hw = load_engine_hardware(sc.predict_engine);
  for (int i = 0; i < sc.dp; ++i) {
    engines.push_back(std::make_unique<sim::Engine>(model, hw, sc.predict_engine.cfg));
    ranks.push_back(engines.back().get());
  }
  replay::VirtualReplayOptions vo;
  vo.policy = route::parse_policy(sc.route_policy);
  if (sc.dp_attention && sc.dp < 2) throw UserError("--dp-attention needs --dp N (N >= 2 ranks)");
  if (sc.dp_attention) vo.lockstep_ranks = sc.dp;
  // Disaggregated: the --dp engines prefill, these decode (with the same
  // flags; no host tier, as the decode side keeps no cache).
  const bool kv_bandwidth_given = sc.predict->get_option("--kv-transfer-bandwidth")->count() > 0;
  if (kv_bandwidth_given && sc.decode_engines == 0)
    throw UserError("--kv-transfer-bandwidth needs --decode-engines N (disaggregated serving)");
  if (sc.decode_engines > 0) {
    sim::EngineConfig decode_cfg = sc.predict_engine.cfg;
    decode_cfg.hicache = sim::HiCacheConfig{};
    replay::VirtualReplayOptions::DecodePool pool;
    for (int i = 0; i < sc.decode_engines; ++i) {
      engines.push_back(std::make_unique<sim::Engine>(model, hw, decode_cfg));
      pool.engines.push_back(engines.back().get());
    }
    pool.transfer_bytes_per_s = kv_bandwidth_given ? sc.kv_transfer_bandwidth : hw.kv_transfer_bandwidth * hw.eff_nvlink;
    if (!(pool.transfer_bytes_per_s > 0))
      throw UserError("--decode-engines: hardware spec '" + hw.name +
                      "' gives no kv_transfer_bandwidth_one_way; give --kv-transfer-bandwidth BYTES_PER_S");
    vo.decode = std::move(pool);
  }
  CountProgress predicting("agentperf: predicting", load.quiet);  // virtual s of --duration played
  vo.progress = &predicting;
  auto res = replay::predict_replay(ranks, cfg, traces, vo);
  const sim::Engine& engine = *engines.front();

  replay::ReplayRunInfo info = replay_run_info(sc.traces, stats, cli_command);
  info.traces = &traces;
  info.description = describe_prediction(sc);
  // Throughput per GPU is over the simulated deployment's GPUs (DP engines x
  // TP) unless --gpus says otherwise, the same on the console, in the files
  // and in the report's run description.
  const bool gpus_given = sc.predict->get_option("--gpus")->count() > 0;
  if (!gpus_given) info.gpus = (sc.dp + sc.decode_engines) * sc.predict_engine.cfg.tp;
  info.description.gpus = info.gpus;
  info.description.gpus_source = gpus_given            ? "--gpus"
                                 : sc.decode_engines ? "the simulated deployment (TP x (--dp + --decode-engines))"
                                                     : "the simulated deployment (TP x --dp)";
  const RunVerdict verdict = replay::judge_replay(res.replay, 0.10);
  auto agg = replay::build_replay_aggregate(res.replay, cfg, info, verdict);
  agg.json["input_config"]["engine"] = {{"model", sc.predict_engine.model}, {"hardware", sc.predict_engine.hardware},
                                        {"tp", sc.predict_engine.cfg.tp}, {"dp", sc.dp},
                                        {"dp_attention", sc.dp_attention},
                                        {"route_policy", sc.dp > 1 ? nlohmann::json(sc.route_policy) : nlohmann::json(nullptr)},
                                        {"virtual_time", true}};
  if (vo.decode) {
    agg.json["input_config"]["engine"]["decode_engines"] = sc.decode_engines;
    agg.json["input_config"]["engine"]["kv_transfer_bytes_per_s"] = vo.decode->transfer_bytes_per_s;
  }
  agg.json["sim"] = sim::prediction_json(res.engine, engine.plan(), res.virtual_seconds, res.cpu_seconds);
  if (res.per_engine.size() > 1) agg.json["sim"]["per_engine"] = sim::per_engine_json(res.per_engine);
  if (auto h = replay::handoff_json(res); !h.is_null()) agg.json["sim"]["handoff"] = h;
  print_summary(agg.json);
  print_replay_lines(agg.inferencex, res.replay);
  print_engine_summary(res.engine, engine.plan(), stdout);
  if (vo.decode) {
    const auto n = static_cast<double>(std::max<long long>(1, res.handoffs));
    std::printf("Disaggregated: %d prefill + %d decode engines; KV at %.3g GB/s: mean handoff %.1f ms (transfer %.1f ms) "
                "from the prefill's first token to the decode's, over %lld requests\n",
                sc.dp, sc.decode_engines, vo.decode->transfer_bytes_per_s / 1e9, 1000 * res.handoff_s / n,
                1000 * res.transfer_s / n, res.handoffs);
  }
  if (res.per_engine.size() > 1) {
    std::printf("%s %d (%s): per engine requests / cache hit / prefill tokens computed:", vo.decode ? "Prefill, decode" : "DP",
                static_cast<int>(res.per_engine.size()), sc.route_policy.c_str());
    for (const auto& e : res.per_engine)
      std::printf(" %lld / %.1f%% / %.3gM;", static_cast<long long>(e.requests_total),
                  100.0 * e.cache_hit_rate(),
                  static_cast<double>(e.computed_prefill_tokens_total) / 1e6);
    std::printf("\nPrefill computed: %.0f tokens/s over the run\n",
                res.virtual_seconds > 0 ? static_cast<double>(res.engine.computed_prefill_tokens_total) / res.virtual_seconds : 0.0);
  }
  std::printf("Simulated %.1f s of engine time in %.2f s of CPU (%.0fx real time)\n", res.virtual_seconds,
              res.cpu_seconds, res.cpu_seconds > 0 ? res.virtual_seconds / res.cpu_seconds : 0.0);
  if (sc.write_results) {
    write_run_results(load.artifact_dir, res.replay.run.records, agg.json, false);
    std::printf("Results: %s\n", (std::filesystem::path(load.artifact_dir) / "profile_export_aiperf.json").c_str());
  }
  return verdict.exit_code;
}

int run_predict(SimCommand& sc, const std::string& cli_command) {
  finish_sim_engine_options(sc.predict_engine);
  finish_profile_options(sc.load, sc.load_text);
  auto& load = sc.load;
  if (!sc.traces.traces.empty()) {
    if (sc.agentic.sessions > 0) throw UserError("give --traces or --agentic-sessions, not both");
    return run_predict_traces(sc, cli_command);
  }
  if (sc.agentic.sessions > 0) {
    if (!load.duration_s && !load.request_count)
      throw UserError("an agentic prediction needs --duration S (or --request-count N)");
    load.concurrency = sc.agentic.sessions;
  } else if (!load.concurrency && !load.request_rate) {
    throw UserError("give --concurrency N, --request-rate R or --agentic-sessions N");
  }
  if (!load.request_count && !load.duration_s)
    load.request_count = std::max<std::int64_t>(100, 10 * load.concurrency.value_or(10));
  load.validate();

  sim::Engine engine(sim::load_model_spec(sc.predict_engine.model), load_engine_hardware(sc.predict_engine),
                     sc.predict_engine.cfg);
  sim::PredictConfig pc{load, sc.agentic};
  CountProgress predicting("agentperf: predicting", load.quiet);
  pc.progress = &predicting;
  auto res = sim::predict(engine, pc);

  nlohmann::json input = load;
  input["engine"] = {{"model", sc.predict_engine.model}, {"hardware", sc.predict_engine.hardware},
                     {"tp", sc.predict_engine.cfg.tp}, {"virtual_time", true}};
  if (sc.agentic.sessions > 0)
    input["agentic"] = {{"sessions", sc.agentic.sessions}, {"system_tokens", sc.agentic.system_tokens},
                        {"turn_input_mean", sc.agentic.turn_input.mean}, {"turn_output_mean", sc.agentic.turn_output.mean},
                        {"think_time_s", sc.agentic.think_time_s}, {"max_context", sc.agentic.max_context}};
  AggregateInputs in;
  in.run = &res.run;
  in.input_config = input;
  in.cli_command = cli_command;
  in.benchmark_id = "sim-predict";
  in.description = describe_prediction(sc);
  in.description.workload = sc.agentic.sessions > 0
                                ? "agentic " + std::to_string(sc.agentic.sessions) + " sessions"
                                : synthetic_workload(load);
  if (load.concurrency && sc.agentic.sessions == 0) in.description.concurrency = *load.concurrency;
  if (load.request_rate) in.description.request_rate = *load.request_rate;
  auto agg = build_aggregate(res.run.records, in);
  agg["sim"] = sim::prediction_json(res.engine, engine.plan(), res.virtual_seconds, res.cpu_seconds);
  print_summary(agg);
  print_engine_summary(res.engine, engine.plan(), stdout);
  std::printf("Simulated %.1f s of engine time in %.2f s of CPU (%.0fx real time)\n", res.virtual_seconds,
              res.cpu_seconds, res.cpu_seconds > 0 ? res.virtual_seconds / res.cpu_seconds : 0.0);
  if (sc.write_results) {
    write_run_results(load.artifact_dir, res.run.records, agg, false);
    std::printf("Results: %s\n", (std::filesystem::path(load.artifact_dir) / "profile_export_aiperf.json").c_str());
  }
  return 0;
}

// Every published pool of the set, planned as its engine was launched.
int run_published_pools(SimCommand& sc) {
  const auto rows = sim::compare_published_pools(sim::load_published_pools(sc.published_pools));
  const std::string table = sim::published_pools_markdown(rows);
  std::fputs(table.c_str(), stdout);
  if (!sc.memory_markdown.empty()) write_file_atomically(sc.memory_markdown, table);
  return 0;
}

int run_memory(SimCommand& sc) {
  if (!sc.published_pools.empty()) return run_published_pools(sc);
  if (!sc.memory_markdown.empty()) throw UserError("--markdown: only with --published");
  finish_sim_engine_options(sc.memory_engine);
  auto model = sim::load_model_spec(sc.memory_engine.model);
  auto hw = load_engine_hardware(sc.memory_engine);
  auto plan = sim::plan_memory(model, hw, sc.memory_engine.cfg);
  std::printf("%s on %s, TP%d\n", model.name.c_str(), hw.name.c_str(), sc.memory_engine.cfg.tp);
  for (const auto& line : plan.derivation) std::printf("  %s\n", line.c_str());
  std::printf("  => KV pool %lld tokens, %lld state slots, max running requests %lld\n",
              static_cast<long long>(plan.kv_tokens), static_cast<long long>(plan.mamba_slots),
              static_cast<long long>(plan.max_running_requests));
  return 0;
}

}  // namespace

std::shared_ptr<SimCommand> add_sim_command(CLI::App& app) {
  auto sc = std::make_shared<SimCommand>();
  sc->sim = app.add_subcommand("sim", "The embedded engine simulator");
  sc->sim->require_subcommand(1);

  sc->predict = sc->sim->add_subcommand(
      "predict", "Run the simulated engine in virtual time on a workload and print the benchmark's metrics");
  add_sim_engine_options(*sc->predict, sc->predict_engine);
  sc->load_text.endpoint_type = defaults::kTokenIdEndpoint;
  add_load_options(*sc->predict, sc->load, sc->load_text);
  add_prompt_length_options(*sc->predict, sc->load);
  add_prompt_encoding_options(*sc->predict, sc->load, sc->load_text);
  sc->predict->add_option("-o,--artifact-dir", sc->load.artifact_dir, "Also write profile_export files here")
      ->each([&w = sc->write_results](const std::string&) { w = true; })
      ->group("Output");
  sc->predict->add_flag("-q,--quiet", sc->load.quiet, "No progress lines")->group("Output");
  add_replay_schedule_options(*sc->predict, sc->replay, sc->traces, /*with_run_flags=*/false,
                              /*traces_required=*/false);
  sc->predict->add_option("--dp", sc->dp, "With --traces: N engines (replicas or DP ranks, each with its own KV pool "
                                          "and radix cache) behind a router")
      ->transform(int_in(1, 1024))->capture_default_str()->group("Replay");
  sc->predict->add_flag("--dp-attention", sc->dp_attention,
                        "With --dp N: the N engines are the DP-attention ranks of one engine: every step starts on "
                        "all ranks at once and lasts as long as the slowest rank's (the MoE layers' all-to-all), "
                        "instead of N independent replicas")
      ->group("Replay");
  sc->predict->add_option("--route-policy", sc->route_policy,
                          "With --dp: round_robin, least_outstanding, session_sticky, cache_aware (the router's own "
                          "policies; session_sticky keys on the session tree with --routing-headers) or "
                          "consistent_hash (SGLang Model Gateway's and vllm-router's: the key alone picks the rank, "
                          "no load bound)")
      ->check(CLI::IsMember({"round_robin", "least_outstanding", "session_sticky", "cache_aware", "consistent_hash"}))
      ->capture_default_str()->group("Replay");
  sc->predict->add_option("--decode-engines", sc->decode_engines,
                          "With --traces: disaggregated serving: the --dp engines prefill each request and sample its "
                          "first token, then its KV crosses to the one of N decode engines (same flags, no cache) "
                          "with the fewest requests, which decodes the rest")
      ->transform(int_in(0, 1024))->capture_default_str()->group("Replay");
  sc->predict->add_option("--kv-transfer-bandwidth", sc->kv_transfer_bandwidth,
                          "With --decode-engines: bytes/s of one GPU's link a prompt's KV crosses (default: the "
                          "hardware spec's kv_transfer_bandwidth_one_way at its NVLink efficiency)")
      ->check(real_in(1e6, 1e13, false, "bytes per second"))->group("Replay");
  auto* a = "Agentic workload";
  sc->predict->add_option("--agentic-sessions", sc->agentic.sessions,
                          "Lanes of coding-agent sessions (replaces the synthetic single-turn stream)")
      ->transform(int_in(0, limits::max_concurrency))->group(a);
  sc->predict->add_option("--system-tokens", sc->agentic.system_tokens, "System prompt shared by every session")
      ->transform(tokens_in(0, limits::max_tokens))->group(a)->capture_default_str();
  sc->predict->add_option("--turn-input-tokens", sc->agentic.turn_input.mean, "New user/tool tokens per turn (mean)")
      ->check(real_in(0, limits::max_tokens, true, "a number of tokens"))->group(a)->capture_default_str();
  sc->predict->add_option("--turn-output-tokens", sc->agentic.turn_output.mean, "Output tokens per turn (mean)")
      ->check(real_in(0, limits::max_tokens, true, "a number of tokens"))->group(a)->capture_default_str();
  sc->predict->add_option("--think-time", sc->agentic.think_time_s, "Mean idle seconds between turns (exponential)")
      ->check(seconds_in(0, limits::max_seconds))->group(a)->capture_default_str();
  sc->predict->add_option("--session-max-context", sc->agentic.max_context, "A session restarts past this context")
      ->transform(tokens_in(1, limits::max_tokens))->group(a)->capture_default_str();

  sc->serve = sc->sim->add_subcommand("serve", "Serve the simulated engine over OpenAI-compatible HTTP");
  add_sim_engine_options(*sc->serve, sc->serve_engine);
  sc->serve_opts.port = defaults::kServerPort;  // where profile and replay look (common/defaults.h)
  sc->serve->add_option("--host", sc->serve_opts.host, "Address to bind")->capture_default_str()->group("Server");
  sc->serve->add_option("--port", sc->serve_opts.port, "Port (0 = any free port)")
      ->transform(int_in(0, 65535))->capture_default_str()->group("Server");
  sc->serve->add_option("--time-scale", sc->serve_opts.time_scale,
                        "Run the engine this many times faster than real time (tests)")
      ->check(real_in(0, 1e6, true))->capture_default_str()->group("Server");
  sc->serve->add_option_function<double>(
               "--idle-timeout",
               [&o = sc->serve_opts](double s) { o.idle_timeout = std::chrono::milliseconds(static_cast<long long>(s * 1000)); },
               "Close keep-alive connections idle this many seconds (SGLang's default: 5)")
      ->default_str("5")->check(seconds_in(0, limits::max_interval_s, true))->group("Server");
  sc->serve->add_option("--max-body-bytes", sc->serve_opts.max_body_bytes,
                        "Largest request body accepted; larger ones get 413")
      ->transform(int_in(1024, std::int64_t(16) << 30))->capture_default_str()->group("Server");
  sc->serve->add_option("--served-model-name", sc->serve_opts.served_model_name,
                        "Model id reported by /v1/models (default: the spec's)")
      ->group("Server");

  sc->memory = sc->sim->add_subcommand("memory", "Print the engine's memory pools (HBM weights, KV, state, host) and how they were derived");
  sc->memory->alias("plan");  // its former name, kept so scripts keep working
  add_sim_engine_options(*sc->memory, sc->memory_engine);
  sc->memory->add_option("--published", sc->published_pools,
                         "Instead of one plan: every KV pool a published deployment states (builtin: "
                         "data/validation/kv_pools.json, or a JSON file of that shape), planned with its launch flags; "
                         "the engine options above are not used")
      ->expected(0, 1)->default_str("builtin")->group("Published pools");
  sc->memory->add_option("--markdown", sc->memory_markdown, "With --published: also write the table to FILE")
      ->group("Published pools");
  sc->validate = add_sim_validate_command(*sc->sim);
  return sc;
}

int execute_sim_command(SimCommand& sc, const std::string& cli_command) {
  if (sc.serve->parsed()) return run_serve(sc);
  if (sc.predict->parsed()) return run_predict(sc, cli_command);
  if (sc.memory->parsed()) return run_memory(sc);
  return execute_sim_validate_command(*sc.validate);
}

}  // namespace agentperf::cli
