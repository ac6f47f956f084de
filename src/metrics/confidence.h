// 95 % confidence intervals for a run's headline metrics.
//
// A benchmark point rests on a sample: a sweep point on 24-37 requests, a
// replay pair on a handful of session trees, and published reruns of one
// InferenceX AgentX point differ by 2-7 % in throughput and up to ~50 % in
// p90 TTFT. A number without its interval invites reading noise as a cliff.
// So every aggregate carries, for TTFT, ITL and request latency (mean, p50,
// p90, p99) and for the output and total token throughputs, a percentile
// bootstrap interval:
//
//   - units: the independent pieces of the run. Requests are not
//     independent: the turns of one session tree share its context length,
//     its cache state and its lane, so a replay resamples whole session
//     trees (root_correlation_id) with their requests. A synthetic load's
//     requests share the batches they ran in and the machine's state of
//     the moment: resampled one by one, a closed loop's intervals of
//     request latency and throughput came out a third of the run-to-run
//     spread (bench/ci-coverage.sh LOAD=profile). So they are resampled in
//     30 blocks contiguous in start time (a block bootstrap), which keeps
//     what neighbouring requests share (those two then 0.7-0.8 of the
//     spread); a run of fewer than 60 requests is resampled request by
//     request.
//   - resamples: B = 400 draws of the units with replacement; the interval
//     is the 2.5th and 97.5th percentiles of the statistic over the draws.
//     Token throughputs are the run's request rate times the resampled
//     tokens per request. The rate is held fixed where the load sets it (a
//     request rate, a replay's lanes and idle gaps); a closed loop at fixed
//     concurrency sets it through the latency (Little's law), so there it
//     moves with the resample's mean latency.
//   - the draws are seeded from the run's benchmark id, so an aggregate
//     recomputed from the same records is the same.
//
// A run is flagged (`small_sample`) when it has fewer than 30 units of a
// synthetic load or 10 session trees of a replay, and `wide` names each
// metric whose interval is wider than 20 % of its value: the console says
// so instead of presenting the number as firm.
//
// Measured honesty (bench/ci-coverage.sh, docs/profile.md): means and token
// throughputs come out about as wide as the run-to-run spread needs; tail
// percentiles (p90) about half as wide, since runs also differ in how the
// server's batches and cache fall, which one run's trees cannot show.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace agentperf {

// One successful profiling request, as the intervals need it.
struct CiObservation {
  std::size_t unit = 0;  // index of its resampling unit (request or session tree)
  std::int64_t start_ns = 0;  // request start: a synthetic load's time blocks
  std::optional<double> ttft_ms, itl_ms, latency_ms;
  double isl = 0, osl = 0;
};

struct CiOptions {
  int resamples = 400;
  double level = 0.95;
  std::uint64_t seed = 0;
  bool trees = false;         // units are session trees (replay) rather than requests
  double duration_s = 0;      // the run's benchmark_duration (throughputs)
  bool closed_loop = false;   // fixed concurrency, no request rate: rate = concurrency / mean latency
  std::size_t min_units = 0;  // 0: 10 for trees, 30 for requests
  // A synthetic load's requests are resampled in this many blocks,
  // contiguous in start time, once it has at least two requests a block
  // (fewer: one by one); 0: always one by one.
  std::size_t time_blocks = 30;
  double wide_ratio = 0.20;   // flag an interval wider than this share of its value
};

// The "confidence_intervals" section of an aggregate:
//   {"level": 0.95, "method": "...", "resamples": 400, "units": N, "unit": "session tree"|"request",
//    "small_sample": bool, "metrics": {"time_to_first_token": {"avg": [lo, hi], "p50": [...], ...},
//    "output_token_throughput": [lo, hi], ...}, "wide": ["time_to_first_token.p90", ...]}
// null when there are fewer than 2 units.
nlohmann::json confidence_intervals(const std::vector<CiObservation>& obs, std::size_t units, const CiOptions& opts);

// Reading the section back (report pairs, sweep store, SLO verdicts): a
// statistic's interval, e.g. ("time_to_first_token", "p50"); nullopt when
// the aggregate has none. Json: nlohmann::json or ordered_json.
template <class Json>
std::optional<std::pair<double, double>> aggregate_interval(const Json& agg, const std::string& tag,
                                                            const std::string& stat) {
  if (!agg.contains("confidence_intervals") || !agg["confidence_intervals"].is_object()) return std::nullopt;
  const auto& ci = agg["confidence_intervals"];
  if (!ci.contains("metrics") || !ci["metrics"].contains(tag) || !ci["metrics"][tag].contains(stat)) return std::nullopt;
  const auto& iv = ci["metrics"][tag][stat];
  return std::make_pair(iv[0].template get<double>(), iv[1].template get<double>());
}

// The total-token-throughput interval as a share of the aggregate's own
// total throughput, carried onto `value` (the same run's throughput on
// another scale, e.g. per GPU); nullopt when the aggregate has none.
template <class Json>
std::optional<std::pair<double, double>> throughput_interval_on(const Json& agg, double value) {
  if (!agg.contains("confidence_intervals") || !agg["confidence_intervals"].is_object()) return std::nullopt;
  const auto& m = agg["confidence_intervals"]["metrics"];
  if (!m.contains("total_token_throughput") || !agg.contains("total_token_throughput")) return std::nullopt;
  const double total = agg["total_token_throughput"].value("avg", 0.0);
  if (!(total > 0)) return std::nullopt;
  return std::make_pair(m["total_token_throughput"][0].template get<double>() / total * value,
                        m["total_token_throughput"][1].template get<double>() / total * value);
}

// One console line: "95 % CI over 12 session trees: TTFT p50 [a, b] ms, ..."
// (and a second naming a small sample or wide intervals), from the section.
std::string confidence_summary(const nlohmann::json& section, const nlohmann::json& aggregate);

}  // namespace agentperf
