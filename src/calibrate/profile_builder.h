// Turns GPU measurements (agentperf-calibrate-gpu / `agentperf calibrate
// measure`) into a hardware profile: each measured rate divided by the
// hardware spec's datasheet peak, bucketed by shape.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "sim/specs.h"

namespace agentperf::calibrate {

struct ProfileBuildOptions {
  std::string hardware = "h200";  // spec name or file the fractions are relative to
  int kernels_per_layer = 12;     // kernels one decoder layer launches (EST, see docs/calibrate.md)
};

// Throws UserError naming `source` and the field when the measurements are
// malformed or contradict the spec (a rate far above the spec's peak).
nlohmann::ordered_json build_hardware_profile(const nlohmann::json& measurements, const std::string& source,
                                              const sim::HardwareSpec& spec, const ProfileBuildOptions& opts);

// One line per measured figure: value, datasheet value, ratio.
std::string format_profile_figures(const nlohmann::ordered_json& profile);

}  // namespace agentperf::calibrate
