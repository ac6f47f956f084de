#include "cli/calibrate_command.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_numbers.h"
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
  CLI::App *measure = nullptr, *profile = nullptr, *check = nullptr;
  std::string measurements, output, profile_out, hardware = "h200", profile_path;
  calibrate::ProfileBuildOptions build;
  int device = 0;
  bool quick = false;
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
  return cc;
}

int execute_calibrate_command(CalibrateCommand& cc) {
  if (!cc.cmd->parsed()) return -1;
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
