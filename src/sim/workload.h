// Workloads the virtual-time predictor drives the engine with.
//  - synthetic: exactly the request stream `agentperf profile` sends (the
//    same PromptSynth, seed and lengths), closed loop or open loop;
//  - agentic: coding-agent-like sessions held by N lanes: a system prompt
//    shared by every session, each turn appending the previous answer as
//    recorded (not as generated, so it does not match the engine's own
//    output) plus new user/tool tokens, think time between turns, and a new
//    session when the context would pass its cap.
// Real (or realistic) traces are replayed by `sim predict --traces`
// (replay/virtual_replay.h); this generator is the quick synthetic
// alternative, whose lanes all start at t = 0 and send far more often than
// AgentX sessions do.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "common/rng.h"
#include "load/profile_config.h"
#include "sim/radix_cache.h"

namespace agentperf::sim {

struct AgenticConfig {
  int sessions = 0;  // lanes; 0 = synthetic workload
  int system_tokens = 20000;
  LengthDistribution turn_input{2000, 1500, 16};
  LengthDistribution turn_output{400, 300, 8};
  double think_time_s = 2.0;  // mean of an exponential
  int max_context = 200000;
  int max_turns = 200;
};

struct WorkItem {
  std::uint64_t id = 0;
  std::shared_ptr<const std::vector<Token>> prompt;  // the first prompt_len tokens
  std::int64_t prompt_len = 0;
  int max_tokens = 0;
  int lane = 0;
  std::int64_t session = 0;
  int turn = 0;
  bool exact = true;
};

// One lane of the agentic workload: the next turn of its current session.
class AgenticLane {
 public:
  AgenticLane(const AgenticConfig& cfg, int lane, std::uint64_t seed,
              std::shared_ptr<const std::vector<Token>> system_prompt);
  WorkItem next(std::uint64_t id);
  double think_time(Rng& rng) const;

 private:
  void start_session();
  const AgenticConfig& cfg_;
  int lane_;
  std::uint64_t seed_;
  std::shared_ptr<const std::vector<Token>> system_;
  std::shared_ptr<std::vector<Token>> context_;  // grows in place; earlier turns are its prefixes
  std::int64_t session_ = -1;
  int turn_ = 0;
  int last_output_ = 0;
  Rng rng_;
};

std::shared_ptr<const std::vector<Token>> make_tokens(Rng& rng, int n, std::vector<Token> prefix = {});

}  // namespace agentperf::sim
