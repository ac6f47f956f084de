// Service-level objectives: what `--slo` means, how a run's aggregate meets
// it, and which requests count toward goodput.
//
// An SLO is written NAME_pNN OP VALUE[UNIT], e.g. `ttft_p90<=2s`,
// `itl_p99<=50ms`, `e2e_interactivity_p90>=50`:
//   ttft, itl, latency     time to first token, inter-token latency, request
//                          latency: at most VALUE (ms by default; `s` or
//                          `ms` may follow the number)
//   interactivity          tokens/s per user = 1 / ITL, at least VALUE; its
//                          percentile is the ITL's inverted (p90 is the
//                          speed the slowest 10 % get: metrics/metric_table.h)
//   e2e_interactivity      AIPerf's e2e_normalized_interactivity (OSL over
//                          request latency), at least VALUE; p75 or p90,
//                          the two AIPerf aggregates
// The percentile is one of the aggregate's (1, 5, 10, 25, 50, 75, 90, 95,
// 99); `avg` is accepted in its place for the three latencies.
//
// A run meets an SLO when its aggregate's statistic is on the right side of
// the value. Its 95 % interval (metrics/confidence.h) says whether that is
// firm: `uncertain` when the interval straddles the value.
//
// Goodput (DistServe's term, as vLLM's and SGLang's benchmark scripts use
// it): requests that meet every SLO's threshold on their own values (the
// percentile does not apply to one request) per second of the run, with the
// share of requests that did (`slo_attainment`).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/record.h"
#include "metrics/record_metrics.h"

namespace agentperf {

struct Slo {
  std::string text;      // as given
  std::string quantity;  // ttft, itl, latency, interactivity, e2e_interactivity
  int percentile = 90;   // 0 = avg
  bool at_most = true;   // <=; false: >=
  double threshold = 0;  // ms for latencies, tokens/s for the interactivities
};

// Parses one --slo; throws UserError naming the text and what was expected.
Slo parse_slo(const std::string& text);
std::vector<Slo> parse_slos(const std::vector<std::string>& texts);

// The run's value of the SLO's statistic from an aggregate
// (profile_export_aiperf.json), in the threshold's unit; nullopt when the
// run has none (no streamed answers for ITL, no successful request).
std::optional<double> slo_value(const Slo& slo, const nlohmann::json& aggregate);
bool slo_met(const Slo& slo, double value);

struct SloVerdict {
  bool met = false;        // every SLO met (and a value for each)
  bool uncertain = false;  // some SLO's 95 % interval straddles its threshold
  std::string limiting;    // the first SLO missed (its text), or empty
  nlohmann::ordered_json detail;  // per SLO: {slo, value, met, interval?}
};
SloVerdict judge_slos(const std::vector<Slo>& slos, const nlohmann::json& aggregate);

// One request against every SLO's threshold (goodput).
bool request_meets_slos(const std::vector<Slo>& slos, const RequestRecord& r, const RecordMetrics& m);

}  // namespace agentperf
