// A drop-in for AIPerf's command line as InferenceX launches it, so a
// launcher that runs `aiperf profile --scenario inferencex-agentx-mvp ...`
// (SemiAnalysisAI/InferenceX, benchmarks/benchmark_lib.sh build_replay_cmd
// @ 843c6254ff69) runs agentperf's replay unchanged: install agentperf under
// the name `aiperf` (the build makes an `aiperf` link beside the binary) or
// call `agentperf profile --scenario ...`.
//
// The AIPerf flags are rewritten into `agentperf replay` flags. Most have
// the same name and meaning there already (--url, --endpoint,
// --endpoint-type, --model, --concurrency, --benchmark-duration,
// --random-seed, --failed-request-threshold, --trajectory-start-min-ratio /
// -max-ratio, --warmup-requests-per-lane, --trace-idle-gap-cap-seconds,
// --warmup-grace-period, --extra-inputs, --max-context-length,
// --num-dataset-entries, --output-artifact-dir, --streaming). The others:
//   --public-dataset NAME     the local copy of that Hugging Face dataset:
//                             DIR/NAME (a trace directory or file), DIR from
//                             --dataset-dir or AGENTPERF_DATASETS_DIR; an
//                             error naming both when there is none
//   --stats-interval S        --progress-interval S
//   --server-metrics URL...   --server-metrics-url URL (the first; more are
//                             reported as not modelled)
//   --tokenizer NAME          a tokenizer.json, a directory holding one, or
//                             a Hugging Face id found in the local hub cache
//                             (where AIPerf's own download lands); nothing
//                             is downloaded
//   --scenario NAME           only inferencex-agentx-mvp; its rules: a
//                             benchmark duration of at least 900 s unless
//                             --unsafe-override, which then marks the run
//                             submission_valid = false ("unsafe_override")
//   --use-server-token-count  followed always (usage counts are used when
//                             the server sends them)
//   --slice-duration S        replay's --slice-duration (server-metrics time
//                             slices; the client-side timeslices file is
//                             not written)
//   --no-gpu-telemetry, --tokenizer-trust-remote-code,
//   --use-dynamo-conv-aware-routing, --dynamo-session-timeout-seconds:
//                             accepted and listed in the results' metadata
//                             as not modelled, never silently dropped
#pragma once
#include <string>
#include <vector>

namespace agentperf::cli {

inline constexpr const char* kInferenceXScenario = "inferencex-agentx-mvp";

struct AiperfTranslation {
  std::vector<std::string> args;  // agentperf's argv after the program name: "replay", ...
  std::string scenario;
  std::string dataset;            // --public-dataset NAME
  bool unsafe_override = false;
  std::vector<std::string> violations;             // scenario rules the command breaks
  std::vector<std::string> accepted_not_modelled;  // flags taken but without effect here
};

// True for `profile --scenario ...` (or `profile --scenario=...`): AIPerf's
// form, which `agentperf profile` (synthetic prompts) does not have.
bool is_aiperf_scenario_command(const std::vector<std::string>& args);

// args: the command line after the program name ("profile", ...). Throws
// UserError for an unknown scenario, a missing dataset, or a rule broken
// without --unsafe-override.
AiperfTranslation translate_aiperf_profile(const std::vector<std::string>& args);

}  // namespace agentperf::cli
