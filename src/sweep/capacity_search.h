// The SLO capacity search behind `agentperf capacity`: the largest
// concurrency whose measured run meets every SLO, with few measured points.
//
// GuideLLM's sweep and most users' scripts double the load until an SLO
// breaks, then bisect: a point per doubling before the bracket is even
// found. Here the simulator proposes the bracket first (its predicted edge:
// the largest concurrency it predicts to meet every SLO, found by bisection
// in virtual time, milliseconds of CPU per point), and measured points only
// confirm and narrow it:
//
// 1. The first measured point is the predicted edge (1 without a
//    prediction).
// 2. If it meets the SLOs, the search steps up by `first_step` (x1.25: a
//    prediction is rarely further off than that), then doubles, until a
//    point misses or max_concurrency is met. If it misses, it steps down
//    likewise (÷1.25, then halves) until a point meets or 1 misses (then the
//    capacity is 0).
// 3. Bisection of [highest meeting, lowest missing] until the gap is at
//    most max(1, resolution x the highest meeting) (resolution 0: exact).
//
// The answer is the highest concurrency measured to meet every SLO, with
// the SLO that the lowest missing point missed first (the limiting SLO).
// Meeting is taken as monotone in concurrency (more users never make a
// percentile better); a point whose interval straddles an SLO is marked
// uncertain, not re-measured.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace agentperf::sweep {

struct CapacityPoint {
  int concurrency = 0;
  bool met = false;
  bool uncertain = false;
  std::string limiting;  // the first SLO it missed
};

struct CapacityOptions {
  int max_concurrency = 256;
  double resolution = 0.1;
  double first_step = 1.25;
  std::optional<int> predicted_edge;  // 0: the simulator predicts no concurrency meets them
};

struct CapacityResult {
  int capacity = 0;                  // highest measured concurrency meeting every SLO (0: none)
  std::optional<int> lowest_missing;  // lowest measured concurrency missing one
  std::string limiting;               // what that point missed first
  bool at_max = false;                // max_concurrency met every SLO: the capacity is at least that
  std::vector<CapacityPoint> measured;  // in the order measured
};

// `measure(c)` runs one point; it is called at most once per concurrency.
// A measure that returns nullopt stops the search (a stop signal, a failed
// run that should end it); the result then holds what was measured.
CapacityResult search_capacity(const CapacityOptions& opts,
                               const std::function<std::optional<CapacityPoint>(int concurrency)>& measure);

// The simulator's side: the largest c in [1, max] that `meets(c)` holds
// for, by doubling then bisection (monotone); 0 when 1 does not.
int predicted_edge(int max_concurrency, const std::function<bool(int concurrency)>& meets);

}  // namespace agentperf::sweep
