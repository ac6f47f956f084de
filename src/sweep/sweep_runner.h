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
  // Engine costs of the dry run (shipped name or calibrate engine file);
  // empty: each point's engine's shipped profile (vllm for a point that
  // runs vLLM's scheduler, sglang otherwise).
  std::string engine_profile;
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

// How the points of a sweep (or of one row) ended in this run, each point
// counted once, in exactly one of these.
struct PointCounts {
  int measured = 0;         // measured by this run and done (valid)
  int short_circuited = 0;  // measured by this run, stopped early as clearly bad
  int failed = 0;           // this run: the server did not start, the replay aborted, or the run was invalid
  int interrupted = 0;      // stopped by SIGINT/SIGTERM mid-point; a resumed sweep measures it again
  int pending = 0;          // list points not reached because the sweep was stopped
  int pruned = 0;           // not measured: the adaptive search decided they need not be
  int reused = 0;           // finished points taken from the store (resume)
  int reused_failed = 0;    // ... of them failed or short-circuited

  PointCounts& operator+=(const PointCounts& o);
  // "2 measured, 1 failed, 0 short-circuited, 3 pruned, 1 interrupted, 2 pending, 4 reused from the store (1 failed)"
  std::string describe() const;
};

struct RowOutcome {
  int row = 0;
  std::string label;       // "tp4 mtp none" ...
  int list_points = 0;     // the recipe's conc-list size
  PointCounts counts;      // the row's points (added refinement points included)
  std::optional<std::pair<int, int>> cliff;  // the limit's bracket (last good, first bad)
  LimitVerdict limit;                         // cache cliff or compute saturation, and why
  std::vector<int> pruned;
};

struct SweepOutcome {
  std::vector<PointRow> rows;           // every point of this sweep in the store
  std::vector<RowOutcome> searches;
  std::vector<std::string> frontier;    // exp_names on the (interactivity, tput/GPU) frontier
  PointCounts counts;                   // over all rows
  int list_points = 0;                  // points in the recipe's conc-lists (or 1 with point_index)
  bool interrupted = false;             // stopped by SIGINT/SIGTERM (common/run_control.h)
};

// The exit code of a sweep (common/run_control.h): 130 / 143 when SIGINT /
// SIGTERM stopped it; otherwise 1 when any of its points failed or was
// short-circuited (in this run or reused from the store); else 0.
int sweep_exit_code(const SweepOutcome& outcome);

SweepOutcome run_sweep(const SweepOptions& opts);

// Writes a Slurm job array (one task per expanded point, full conc-lists) to
// <out_dir>/sweep.sbatch and returns its path.
std::string emit_slurm(const SweepOptions& opts);

// The frontier of done points: (intvty p50, total tput/GPU), larger is better.
std::vector<std::string> frontier_of(const std::vector<PointRow>& rows);

}  // namespace agentperf::sweep
