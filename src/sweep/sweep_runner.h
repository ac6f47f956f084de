// `agentperf sweep RECIPE`: every point of a recipe (or, with the adaptive
// search, the points that locate each row's cliff), each measured by
// starting the recipe's server, waiting for readiness, replaying the traces
// while scraping /metrics, and stopping the server; or, with dry_run, by
// the simulator in virtual time. Results go to a SQLite store that makes the
// sweep resumable, and to one result directory per point.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sweep/adaptive_search.h"
#include "sweep/results_store.h"
#include "sweep/short_circuit.h"

namespace agentperf::sweep {

struct SweepOptions {
  std::string recipe_path;
  std::string store_path;  // default <out_dir>/sweep.sqlite
  std::string out_dir = "sweep-results";
  bool dry_run = false;    // sim predict instead of servers
  bool adaptive = true;
  bool resume = true;      // reuse finished points from the store
  std::optional<int> point_index;  // run this one expanded point only (Slurm array task)
  std::optional<double> duration_s;  // overrides the recipe's replay duration
  SearchOptions search;
  bool short_circuit = true;
  ShortCircuitOptions short_circuit_opts;
  double stop_grace_s = 30;        // SIGTERM -> SIGKILL
  double metrics_interval_s = 1.0;
  std::string agentperf_exe;       // replaces a leading "agentperf" in server commands
  bool quiet = false;
  std::function<void(const std::string&)> log;
};

struct RowOutcome {
  int row = 0;
  std::string label;       // "tp4 mtp none" ...
  int list_points = 0;     // the recipe's conc-list size
  int measured = 0;        // points measured (or reused) for this row
  std::optional<std::pair<int, int>> cliff;
  std::vector<int> pruned;
};

struct SweepOutcome {
  std::vector<PointRow> rows;           // every point of this sweep in the store
  std::vector<RowOutcome> searches;
  std::vector<std::string> frontier;    // exp_names on the (interactivity, tput/GPU) frontier
  bool interrupted = false;
  int failed = 0;
};

SweepOutcome run_sweep(const SweepOptions& opts);

// Writes a Slurm job array (one task per expanded point, full conc-lists) to
// <out_dir>/sweep.sbatch and returns its path.
std::string emit_slurm(const SweepOptions& opts);

// The frontier of done points: (intvty p50, total tput/GPU), larger is better.
std::vector<std::string> frontier_of(const std::vector<PointRow>& rows);

}  // namespace agentperf::sweep
