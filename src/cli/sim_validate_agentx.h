// `agentperf sim validate --agentx`: the simulator against published
// InferenceX AgentX runs (sweep/agentx_validation.h): every point replayed
// in virtual time as its deployment ran, predicted against published per
// metric, MAPE per metric for the fitting and the held-out series, per
// model family and per series, each error beside the run-to-run spread of
// the reruns in the set.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace agentperf::cli {

struct AgentxValidateOptions {
  std::string points = "builtin";
  std::string engine_profile;  // empty: each series' engine's shipped profile
  double duration_s = 3600;
  int jobs = 0;                // threads (0: the machine's cores)
  std::string markdown_out, json_out;
  std::vector<std::string> only;  // non-empty: only series whose id contains one of these
  bool check = false;          // exit 1 when a family's held-out error is over its limit
  double max_total_tput_mape = 10, max_ttft_mape = 25, max_tpot_mape = 15;
  bool quiet = false;
  // > 1: each point is also predicted with the lanes starting K-1 other
  // places in the corpus (replay::ReplayConfig::first_trace, evenly spaced),
  // and the report gives each prediction's range over the K orders: how
  // much of a miss the choice of the few traces a low-concurrency hour
  // replays could explain.
  int sample_orders = 1;
  // Non-empty: every series replays this corpus preset instead of its own
  // (a what-if: e.g. the 256k-capped corpus for the 1M series, to see how
  // much of a miss the corpus explains).
  std::string corpus;
  // --corpus-file PRESET=PATH, as given: the series that replay PRESET
  // replay the traces in PATH instead, rows in file order
  // (sweep::AgentxPredictOptions::corpus_files).
  std::vector<std::string> corpus_files;
};

// "PRESET=PATH" items into a map; UserError naming the item and what was
// expected (a known preset, a path, each preset once).
std::map<std::string, std::string> parse_corpus_files(const std::vector<std::string>& items);

int run_sim_validate_agentx(const AgentxValidateOptions& o);

}  // namespace agentperf::cli
