// The sweep's results store: one SQLite row per (sweep, point), written when
// a point starts (status running) and again when it ends, so an interrupted
// sweep resumes where it stopped: done, failed and short-circuited points are
// kept; interrupted ones (SIGINT/SIGTERM mid-point) and running ones (a crash
// mid-point: the sweep was killed) are run again.
//
// `agentperf capacity` writes into the same kind of store: each measured
// point as a row of `points` (sweep = the search's name, mode "capacity",
// the diagnosis saying whether it met the SLOs), and the answer as a row of
// `capacity_searches`, so `results list` shows a search beside sweeps.
#pragma once
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace agentperf::sweep {

struct PointRow {
  std::string sweep;     // recipe name
  std::string exp_name;  // the point's name (recipe expand)
  int row = 0;           // search-space row index (across scenario blocks)
  int tp = 1, conc = 0;
  std::string kv_offloading, spec_decoding;
  std::string status;    // running | done | failed | short_circuited | interrupted | pruned
  std::string mode;      // server | predict
  bool adaptive_added = false;  // measured to refine a cliff, not in the recipe's conc-list
  double total_tput_per_gpu = 0, output_tput_per_gpu = 0;
  double intvty_p50 = 0, e2e_norm_intvty_p50 = 0, ttft_p50_ms = 0, e2el_p50_s = 0, cache_hit = 0;
  long long requests = 0, errors = 0;
  bool valid = false;
  // The point's 95 % intervals (metrics/confidence.h) of total tokens/s per
  // GPU and TTFT p50 (0, 0: none), and whether it rests on a small sample.
  double tput_ci_lo = 0, tput_ci_hi = 0, ttft_p50_ci_lo_ms = 0, ttft_p50_ci_hi_ms = 0;
  bool small_sample = false;
  // A measured point served by the simulator N times faster than real time
  // (`sim serve --time-scale N`): its throughput is N x, its latencies 1/N
  // of the engine it models. 0: real time (or not known).
  double time_scale = 0;
  // A predicted point's pool that stopped admission most (sim::binding_pool:
  // kv, state, running_cap, none); empty for a measured point.
  std::string binding_pool;
  std::string diagnosis;       // why failed / short-circuited / pruned
  std::string result_dir;      // profile_export.jsonl etc.
  std::string server_command, server_log;
  std::string server_metrics;  // JSON summary: gauges as stats, counters as deltas
  std::string agentperf_version, started_at, finished_at;
};

// One capacity search's answer (sweep/capacity_search.h).
struct CapacityRow {
  std::string search;         // its name: the points' `sweep` column
  std::string slos;           // the --slo texts, "; "-separated
  int capacity = 0;           // highest concurrency measured to meet every SLO (0: none)
  int lowest_missing = 0;     // lowest measured concurrency missing one (0: none measured)
  std::string limiting_slo;   // what that point missed first
  bool at_max = false;        // --max-concurrency met every SLO
  int predicted_edge = 0;     // the simulator's proposed edge (-1: no prediction)
  int measured_points = 0;
  bool complete = true;       // false: stopped by a signal
  std::string result_dir;     // the folder with capacity.json
  std::string agentperf_version, finished_at;
};

class ResultsStore {
 public:
  explicit ResultsStore(const std::string& path);  // creates the file and schema; throws UserError
  ~ResultsStore();
  ResultsStore(const ResultsStore&) = delete;
  ResultsStore& operator=(const ResultsStore&) = delete;

  void put(const PointRow& row);  // insert or replace (sweep, exp_name); UserError with exit code 3 on failure
  std::optional<PointRow> get(const std::string& sweep, const std::string& exp_name) const;
  std::vector<PointRow> list(const std::string& sweep = "") const;  // ordered by sweep, row, conc
  void put_capacity(const CapacityRow& row);  // insert or replace (search)
  std::vector<CapacityRow> list_capacity(const std::string& search = "") const;
  const std::string& path() const { return path_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

std::string utc_now_iso();

}  // namespace agentperf::sweep
