#include "cli/calibrate_command.h"

#include <cstdio>
#include <filesystem>
#include <random>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_numbers.h"
#include "cli/profile_command.h"
#include "common/defaults.h"
#include "cli/sim_options.h"
#include "calibrate/engine_probe.h"
#include "calibrate/profile_builder.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "sim/hardware_profile.h"
#include "sim/specs.h"
#ifdef AGENTPERF_HAVE_CUDA
#include "calibrate/gpu/measure_gpu.h"
#endif

namespace agentperf::cli {

struct CalibrateCommand {
  CLI::App* cmd = nullptr;
  CLI::App *measure = nullptr, *profile = nullptr, *check = nullptr, *engine = nullptr;
  std::string measurements, output, profile_out, hardware = "h200", profile_path;
  calibrate::ProfileBuildOptions build;
  int device = 0;
  bool quick = false;
  // calibrate engine
  ClientConfig client;
  ProfileCliText client_text;
  SimEngineOptions sim;
  calibrate::EngineProbePlanOptions plan;
  calibrate::EngineFitSettings fit;
  std::vector<int> batches, input_lengths;
  std::vector<std::string> fit_coefficients;
  int repeats = 1;
  std::uint64_t seed = 0;
  double time_scale = 1;
  bool no_prefix_probes = false;
};

namespace {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read '" + path + "'");
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw UserError(path + ": not valid JSON");
  return j;
}

void write_profile(const CalibrateCommand& cc, const nlohmann::json& measurements, const std::string& source,
                   const std::string& out_path) {
  calibrate::ProfileBuildOptions opts = cc.build;
  opts.hardware = cc.hardware;
  const auto spec = sim::load_hardware_spec(cc.hardware);
  const auto profile = calibrate::build_hardware_profile(measurements, source, spec, opts);
  write_file_atomically(out_path, profile.dump(2) + "\n");
  // Load what was written, as the simulator will: a profile that fails its
  // own validation is never left looking finished.
  auto hw = spec;
  sim::attach_hardware_profile(hw, sim::load_hardware_profile(out_path));
  std::printf("%s", calibrate::format_profile_figures(profile).c_str());
  std::printf("wrote %s (use it with --hardware %s --hardware-profile %s)\n", out_path.c_str(), cc.hardware.c_str(),
              out_path.c_str());
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

void add_engine_subcommand(CalibrateCommand& cc) {
  auto* e = cc.cmd->add_subcommand(
      "engine",
      "Probe a live endpoint (decode at batch 1..256, prefill at 1k..64k tokens with and without a cached prefix), fit "
      "the simulator's engine costs to it and write an engine profile for --engine-profile (docs/calibrate.md)");
  cc.engine = e;
  // Token-id prompts on the completions endpoint: exact input lengths.
  cc.client_text.endpoint_type = defaults::kTokenIdEndpoint;
  add_target_options(*e, cc.client, cc.client_text);
  add_prompt_encoding_options(*e, cc.client, cc.client_text);
  add_client_options(*e, cc.client);
  add_sim_engine_options(*e, cc.sim);
  auto* g = "Calibration";
  e->add_option("-o,--output", cc.output, "Engine profile to write (JSON)")->required()->group(g);
  cc.batches = cc.plan.batches;
  cc.input_lengths = cc.plan.input_lengths;
  e->add_option("--batches", cc.batches, "Decode probes: closed-loop batch sizes, comma-separated")
      ->delimiter(',')->default_str(join_ints(cc.plan.batches))->group(g);
  e->add_option("--input-lengths", cc.input_lengths,
                "Prefill probes: input lengths in tokens, comma-separated (those beyond the model spec's max_context "
                "are left out)")
      ->delimiter(',')->default_str(join_ints(cc.plan.input_lengths))->group(g);
  e->add_option("--output-tokens", cc.plan.decode_output_tokens, "Decode probes: output tokens per request (ignore_eos)")
      ->transform(int_in(2, 100000))->capture_default_str()->group(g);
  e->add_option("--decode-input-tokens", cc.plan.decode_input_tokens, "Decode probes: input tokens per request")
      ->transform(int_in(1, 10000000))->capture_default_str()->group(g);
  e->add_option("--decode-metric", cc.plan.decode_metric,
                "Decode probes' metric: itl_ms_median (the decode step), itl_ms_mean, tpot_ms_mean, tpot_ms_median")
      ->check(CLI::IsMember({"itl_ms_median", "itl_ms_mean", "tpot_ms_mean", "tpot_ms_median"}))
      ->capture_default_str()->group(g);
  e->add_option("--decode-waves", cc.plan.decode_waves, "Decode probes: requests sent = waves x batch")
      ->transform(int_in(1, 1000))->capture_default_str()->group(g);
  e->add_flag("!--no-decode-warmup", cc.plan.decode_warmup,
              "Decode probes: no unscored first wave (it opens the client's connections and warms the engine)")
      ->group(g);
  e->add_option("--prefill-output-tokens", cc.plan.prefill_output_tokens, "Prefill probes: output tokens per request")
      ->transform(int_in(1, 4))->capture_default_str()->group(g);
  e->add_option("--prefill-requests", cc.plan.prefill_requests, "Prefill probes: requests scored per probe")
      ->transform(int_in(1, 1000))->capture_default_str()->group(g);
  e->add_option("--prefix-new-tokens", cc.plan.prefix_new_tokens,
                "Cached-prefix probes: the uncached tail (the rest of the input is a prefix a warm request cached)")
      ->transform(int_in(1, 10000000))->capture_default_str()->group(g);
  e->add_flag("--no-prefix-probes", cc.no_prefix_probes, "Leave out the cached-prefix probes")->group(g);
  cc.fit_coefficients = cc.fit.free;
  std::string free_default;
  for (const auto& f : cc.fit.free) {
    if (!free_default.empty()) free_default += ',';
    free_default += f;
  }
  e->add_option("--fit-coefficients", cc.fit_coefficients,
                "Engine cost coefficients to fit, comma-separated (the rest stay as in --engine-profile, or neutral)")
      ->delimiter(',')->default_str(free_default)->group(g);
  e->add_option("--repeats", cc.repeats, "Measure each probe this many times; the median is fitted")
      ->transform(int_in(1, 100))->capture_default_str()->group(g);
  e->add_option("--hold-out", cc.plan.hold_out,
                "Probes measured and predicted but not fitted: labels (decode-b8, prefill-4096, prefix-4096), kinds "
                "(decode, prefill, prefix), or batch sizes / input lengths; comma-separated")
      ->delimiter(',')->group(g);
  e->add_option("--time-scale", cc.time_scale,
                "The endpoint's speed against the model (`sim serve --time-scale`): measured times are multiplied by it")
      ->check(real_in(1e-3, 1e6))->capture_default_str()->group(g);
  e->add_option("--max-evaluations", cc.fit.max_evaluations, "Fit: simulator evaluations per restart")
      ->transform(int_in(10, 100000))->capture_default_str()->group(g);
  e->add_option("--random-seed", cc.seed,
                "Seed of the probes' prompts (default: a fresh one, so a server's prefix cache never holds a probe's "
                "prompt from an earlier calibration)")
      ->check(uint64_any())->group(g);
}

int run_calibrate_engine(CalibrateCommand& cc) {
  finish_client_options(cc.client, cc.client_text);
  finish_sim_engine_options(cc.sim);
  // Without --engine-profile the fit starts from the pure roofline (neutral
  // costs): a GPU engine's shipped profile would pin the coefficients that
  // are not fitted to another engine's values.
  if (cc.sim.engine_profile.empty()) cc.sim.cfg.costs = sim::EngineCosts{};
  const sim::ModelSpec model = sim::load_model_spec(cc.sim.model);
  const sim::HardwareSpec hw = load_engine_hardware(cc.sim);
  cc.client.validate();

  auto plan_opts = cc.plan;
  plan_opts.batches = cc.batches;
  plan_opts.input_lengths = cc.input_lengths;
  plan_opts.prefix_probes = !cc.no_prefix_probes;
  plan_opts.max_context = model.max_context;
  const auto plan = calibrate::plan_engine_probes(plan_opts);
  const auto progress = [](const std::string& s) { std::fprintf(stderr, "calibrate: %s\n", s.c_str()); };

  calibrate::EngineProbeRunOptions run;
  run.client = cc.client;
  run.repeats = cc.repeats;
  run.time_scale = cc.time_scale;
  run.seed = cc.engine->count("--random-seed") ? cc.seed : std::random_device{}();
  run.progress = progress;
  std::string served_model;
  run.served_model = &served_model;
  const auto measured = calibrate::measure_engine_probes(plan, run);

  auto fit = cc.fit;
  fit.free = cc.fit_coefficients;
  fit.progress = progress;
  progress("fitting " + std::to_string(fit.free.size()) + " coefficients on the simulator (" + model.name + " on " +
           hw.name + ", scheduler " + cc.sim.scheduler + ", TP " + std::to_string(cc.sim.cfg.tp) + ")");
  const auto result = calibrate::fit_engine_calibration(model, hw, cc.sim.cfg, measured, fit);
  std::printf("%s", calibrate::format_residuals(result).c_str());

  calibrate::CalibrationContext ctx;
  ctx.url = cc.client.url;
  ctx.served_model = served_model;
  ctx.model_spec = cc.sim.model;
  ctx.hardware = cc.sim.hardware;
  ctx.scheduler = cc.sim.scheduler;
  ctx.tp = cc.sim.cfg.tp;
  ctx.repeats = cc.repeats;
  const std::string name = "calibrated-" + std::filesystem::path(cc.output).stem().string();
  calibrate::write_engine_profile(cc.output, calibrate::engine_profile_json(result, ctx, name));
  std::printf("wrote %s (use it with --engine-profile %s)\n", cc.output.c_str(), cc.output.c_str());
  return 0;
}

}  // namespace

std::shared_ptr<CalibrateCommand> add_calibrate_command(CLI::App& app) {
  auto cc = std::make_shared<CalibrateCommand>();
  cc->cmd = app.add_subcommand("calibrate", "Measure a GPU and write a hardware profile for the simulator and planner");
  cc->cmd->require_subcommand(1);

  cc->measure = cc->cmd->add_subcommand(
      "measure",
      "Measure this machine's GPU: copy and host-link bandwidth (32 KiB..8 MiB pages), BF16/FP8 GEMM at decode and "
      "prefill shapes, a paged KV read, launch and graph overheads (needs a build with -DAGENTPERF_CUDA=ON)");
  cc->measure->add_option("-o,--output", cc->output, "Measurements file (JSON)")->required();
  cc->measure->add_option("--profile-out", cc->profile_out, "Also write the hardware profile here");
  cc->measure->add_option("--hardware", cc->hardware, "Spec whose peaks the profile's fractions are relative to")
      ->capture_default_str();
  cc->measure->add_option("--device", cc->device, "CUDA device index")->transform(int_in(0, 1023))->capture_default_str();
  cc->measure->add_flag("--quick", cc->quick, "Fewer repeats and smaller buffers (a smoke run, not for profiles)");

  cc->profile = cc->cmd->add_subcommand("profile", "Turn GPU measurements into a hardware profile (fractions of the spec's peaks)");
  cc->profile->add_option("--measurements", cc->measurements, "Output of `calibrate measure` or agentperf-calibrate-gpu")
      ->required()->check(CLI::ExistingFile);
  cc->profile->add_option("--hardware", cc->hardware, "Hardware spec (shipped name or JSON file) the fractions are relative to")
      ->capture_default_str();
  cc->profile->add_option("-o,--output", cc->output, "Profile file to write")->required();
  cc->profile->add_option("--kernels-per-layer", cc->build.kernels_per_layer,
                          "Kernels one decoder layer launches, for the launch-overhead term")
      ->transform(int_in(1, 1000))->capture_default_str();

  cc->check = cc->cmd->add_subcommand("check", "Validate a hardware profile against a spec and print its figures");
  cc->check->add_option("profile", cc->profile_path, "Profile file")->required();
  cc->check->add_option("--hardware", cc->hardware, "Hardware spec it must match")->capture_default_str();
  add_engine_subcommand(*cc);
  return cc;
}

int execute_calibrate_command(CalibrateCommand& cc) {
  if (!cc.cmd->parsed()) return -1;
  if (cc.engine->parsed()) return run_calibrate_engine(cc);
  if (cc.profile->parsed()) {
    write_profile(cc, read_json_file(cc.measurements), cc.measurements, cc.output);
    return 0;
  }
  if (cc.check->parsed()) {
    auto hw = sim::load_hardware_spec(cc.hardware);
    sim::attach_hardware_profile(hw, sim::load_hardware_profile(cc.profile_path));
    const auto j = nlohmann::ordered_json::parse(std::ifstream(cc.profile_path), nullptr, false);
    if (j.contains("figures")) std::printf("%s", calibrate::format_profile_figures(j).c_str());
    std::printf("%s: valid profile of %s (%s)\n", cc.profile_path.c_str(), hw.name.c_str(), hw.profile->device_name.c_str());
    return 0;
  }
#ifdef AGENTPERF_HAVE_CUDA
  calibrate::gpu::MeasureOptions opts;
  opts.device = cc.device;
  opts.quick = cc.quick;
  opts.progress = [](const std::string& s) { std::fprintf(stderr, "calibrate: %s\n", s.c_str()); };
  std::string doc;
  try {
    doc = calibrate::gpu::measure_gpu(opts);
  } catch (const std::runtime_error& e) {
    throw UserError(std::string("GPU measurement failed: ") + e.what(), 1);
  }
  write_file_atomically(cc.output, doc);
  std::fprintf(stderr, "calibrate: wrote %s\n", cc.output.c_str());
  if (!cc.profile_out.empty()) write_profile(cc, nlohmann::json::parse(doc), cc.output, cc.profile_out);
  return 0;
#else
  throw UserError(
      "this agentperf was built without CUDA: configure with -DAGENTPERF_CUDA=ON (needs the CUDA toolkit with "
      "cuBLASLt), or build the standalone measurer with scripts/build-calibrate-gpu.sh and run `agentperf calibrate "
      "profile` on its output");
#endif
}

}  // namespace agentperf::cli
