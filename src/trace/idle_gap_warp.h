// The replay timeline of one trace: its recorded clock with every long idle
// gap between request starts cut down to a cap.
//
// AIPerf's Weka loader (github.com/ai-dynamo/aiperf and the SemiAnalysisAI
// fork InferenceX pins, src/aiperf/dataset/loader/weka_trace.py
// _IdleGapTimeWarp and _compute_trace_idle_timing @ SemiAnalysisAI/aiperf
// c46dc19f) does this at load time, before any timestamp is used: it sorts
// the starts of every request of a trace (the root's, its flattened agents'
// and its active subagents' calls), and each gap between consecutive starts
// longer than --trace-idle-gap-cap-seconds keeps its first `cap` seconds and
// loses the rest; everything after shifts left by the excess. A point inside
// the lost tail of a gap (a subagent's recorded end, say) lands on the cap
// boundary, so a join never waits past the next shifted request. A gap of
// exactly the cap is kept. Every later use (the t* window of
// --trajectory-start-min/max-ratio, turn delays, subagent offsets and joins,
// the handoff offsets) reads the warped clock, so t* is drawn over the
// session's active time and not over hours in which nothing happened.
#pragma once
#include <vector>

namespace agentperf::trace {

class IdleGapWarp {
 public:
  // `cap_s` <= 0 or not finite: the identity (no gap is compressed).
  IdleGapWarp(std::vector<double> request_starts_s, double cap_s);
  IdleGapWarp() = default;  // the identity

  double map(double t_s) const;
  double compressed_s() const { return compressed_s_; }  // seconds removed in all

 private:
  struct Gap {
    double raw_start, raw_end, shift_before, excess;
  };
  std::vector<Gap> gaps_;
  double cap_s_ = 0;
  double compressed_s_ = 0;
};

}  // namespace agentperf::trace
