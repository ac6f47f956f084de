#include "sim/front_end_queue.h"

#include <algorithm>
#include <cmath>

namespace agentperf::sim {

FrontEndQueue::FrontEndQueue(const EngineCosts& costs, int workers)
    : fixed_s_(costs.front_end_s), per_token_s_(costs.front_end_token_s) {
  for (int i = 0; i < std::max(1, workers); ++i) free_at_.push(0);
}

double FrontEndQueue::service_s(std::int64_t prompt_tokens) const {
  return fixed_s_ + per_token_s_ * static_cast<double>(prompt_tokens);
}

FrontEndQueue::Admission FrontEndQueue::admit(std::int64_t arrival_ns, std::int64_t prompt_tokens) {
  const std::int64_t service = std::llround(service_s(prompt_tokens) * 1e9);
  if (service <= 0) return {arrival_ns, arrival_ns};
  const std::int64_t start = std::max(arrival_ns, free_at_.top());
  free_at_.pop();
  free_at_.push(start + service);
  return {start, start + service};
}

}  // namespace agentperf::sim
