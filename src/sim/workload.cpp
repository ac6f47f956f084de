#include "sim/workload.h"

#include "load/distribution.h"

#include <algorithm>
#include <cmath>

namespace agentperf::sim {

std::shared_ptr<const std::vector<Token>> make_tokens(Rng& rng, int n, std::vector<Token> prefix) {
  auto v = std::make_shared<std::vector<Token>>(std::move(prefix));
  v->reserve(v->size() + static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v->push_back(static_cast<Token>(1000 + rng.below(29000)));
  return v;
}

AgenticLane::AgenticLane(const AgenticConfig& cfg, int lane, std::uint64_t seed,
                         std::shared_ptr<const std::vector<Token>> system_prompt)
    : cfg_(cfg), lane_(lane), seed_(seed), system_(std::move(system_prompt)),
      rng_(mix_seed(seed, 0xA6E, static_cast<std::uint64_t>(lane))) {}

void AgenticLane::start_session() {
  ++session_;
  turn_ = 0;
  last_output_ = 0;
  context_ = std::make_shared<std::vector<Token>>(*system_);
}

WorkItem AgenticLane::next(std::uint64_t id) {
  const int input = sample_length(cfg_.turn_input, rng_);
  const int output = sample_length(cfg_.turn_output, rng_);
  if (session_ < 0 || turn_ >= cfg_.max_turns ||
      static_cast<int>(context_->size()) + last_output_ + input + output > cfg_.max_context)
    start_session();
  // The previous answer as recorded in the trace, then the new user/tool
  // tokens, appended in place: earlier turns' prompts are prefixes of it.
  for (int i = 0; i < last_output_ + input; ++i) context_->push_back(static_cast<Token>(1000 + rng_.below(29000)));
  WorkItem w;
  w.id = id;
  w.prompt = context_;
  w.prompt_len = static_cast<std::int64_t>(context_->size());
  w.max_tokens = output;
  w.lane = lane_;
  w.session = session_ * 100000 + lane_;
  w.turn = turn_++;
  last_output_ = output;
  return w;
}

double AgenticLane::think_time(Rng& rng) const {
  return cfg_.think_time_s > 0 ? rng.exponential(1.0 / cfg_.think_time_s) : 0.0;
}

}  // namespace agentperf::sim
