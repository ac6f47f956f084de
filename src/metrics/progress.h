// The live progress line on stderr: requests done / in flight / errors,
// current throughput and ETA. Rewritten in place on a terminal; one line per
// interval (at most every 10 s) when stderr is a file or pipe.
#pragma once
#include <cstdint>
#include <optional>

#include "common/record.h"

namespace agentperf {

struct LiveCounters;

class ProgressPrinter {
 public:
  ProgressPrinter(bool quiet, double interval_s);
  void maybe_print(const LiveCounters& c, Phase phase, std::optional<std::int64_t> total, std::int64_t start_ns,
                   std::int64_t deadline_ns);
  void finish(const LiveCounters& c, Phase phase);

 private:
  void print(const LiveCounters& c, Phase phase, std::optional<std::int64_t> total, std::int64_t start_ns,
             std::int64_t deadline_ns, bool final_line);
  bool quiet_;
  bool tty_;
  std::int64_t interval_ns_;
  std::int64_t last_print_ns_ = 0;
  std::int64_t last_done_ = 0;
  std::int64_t last_tokens_ = 0;
  std::int64_t last_sample_ns_ = 0;
  bool printed_ = false;
};

}  // namespace agentperf
