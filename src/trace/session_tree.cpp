#include "trace/session_tree.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_set>

#include "trace/agent_chains.h"
#include "trace/idle_gap_warp.h"

namespace agentperf::trace {

std::int64_t SessionTree::turn_count() const {
  std::int64_t n = 0;
  for (const auto& s : streams) n += static_cast<std::int64_t>(s.turns.size());
  return n;
}

namespace {
double turn_end_s(const Turn& t) { return t.t_s + t.call->api_time; }

// Weka loader _JOIN_EPSILON_SECONDS.
constexpr double kJoinEpsilon = 1e-6;

void link_turns_in_stream(Stream& s, int block_size) {
  for (std::size_t k = 0; k < s.turns.size(); ++k) {
    Turn& turn = s.turns[k];
    if (k == 0) continue;
    const TraceCall& prev = *s.turns[k - 1].call;
    turn.start_delay_s = std::max(0.0, turn.t_s - turn_end_s(s.turns[k - 1]));
    const auto& a = prev.hash_ids;
    const auto& b = turn.call->hash_ids;
    std::size_t lcp = 0;
    while (lcp < a.size() && lcp < b.size() && a[lcp] == b[lcp]) ++lcp;
    turn.lcp_blocks = static_cast<std::int64_t>(lcp);
    const auto new_blocks = static_cast<std::int64_t>(b.size()) - turn.lcp_blocks;
    const auto answer = static_cast<std::int64_t>(std::ceil(static_cast<double>(prev.out) / block_size));
    turn.assistant_blocks = std::clamp<std::int64_t>(answer, 0, std::max<std::int64_t>(0, new_blocks));
  }
}

// weka_trace.py _sa_end_seconds: t + duration_ms / 1000 (negative or
// non-finite durations count 0), else the latest end of its calls, else t.
double subagent_end(const SubagentGroup& g) {
  if (g.duration_ms) {
    double d = *g.duration_ms / 1000.0;
    if (!std::isfinite(d) || d < 0.0) d = 0.0;
    return g.t + d;
  }
  if (!g.calls.empty()) {
    double e = -std::numeric_limits<double>::infinity();
    for (const auto& c : g.calls) e = std::max(e, c.t + std::max(c.api_time, 0.0));
    return e;
  }
  return g.t;
}

// P of session_tree.h: the whole blocks of a stream's first call that its
// declared tool + system tokens cover (0 when none are declared).
std::int64_t system_blocks(std::int64_t tool, std::int64_t system, const TraceCall& first, int bs) {
  if (tool + system <= 0) return 0;
  const std::int64_t declared = (tool + system + bs - 1) / bs;
  return std::min({declared, first.in / bs, static_cast<std::int64_t>(first.hash_ids.size())});
}

// _chain_init_tokens: a further chain inherits its base's declared prefix
// only when its first call starts with the same blocks as the base's first
// call for the whole declared length.
std::int64_t chain_system_blocks(std::int64_t tool, std::int64_t system, const TraceCall& base_first,
                                 const TraceCall& chain_first, int bs) {
  if (tool + system <= 0) return 0;
  const auto declared = static_cast<std::size_t>((tool + system + bs - 1) / bs);
  const auto& a = chain_first.hash_ids;
  const auto& b = base_first.hash_ids;
  if (a.size() < declared || b.size() < declared || !std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(declared), b.begin()))
    return 0;
  return system_blocks(tool, system, chain_first, bs);
}

std::string chain_suffix(std::size_t n) {
  char name[32];
  std::snprintf(name, sizeof name, "fa:%03zu", n);
  return name;
}

// One SPAWN branch of the root: the children that share a (spawning,
// joining) root-turn pair, and its recorded start (seconds).
struct Branch {
  int preceding = 0;
  int join = -1;
  double start_s = std::numeric_limits<double>::infinity();
  std::vector<int> children;
};

// The root turns with the outer (entry) index each came from.
struct RootIndex {
  std::vector<std::size_t> outer;  // per root turn
  // Last root turn before outer index `oi` (the largest turn position among
  // those with a smaller outer index); -1 if none.
  int preceding(std::size_t oi) const {
    int best = -1;
    for (std::size_t k = 0; k < outer.size(); ++k)
      if (outer[k] < oi) best = std::max(best, static_cast<int>(k));
    return best;
  }
  // The first root turn, in outer order, after outer index `oi` that starts
  // at or after `end` (within the join epsilon); -1 if none.
  int join(const Stream& root, std::size_t oi, double end) const {
    std::vector<std::size_t> order(outer.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return outer[a] < outer[b]; });
    for (std::size_t k : order) {
      if (outer[k] <= oi) continue;
      if (root.turns[k].t_s + kJoinEpsilon >= end) return static_cast<int>(k);
    }
    return -1;
  }
};

// Groups by (preceding, join) in order of first appearance.
Branch& branch_for(std::vector<Branch>& branches, int preceding, int join) {
  for (auto& b : branches)
    if (b.preceding == preceding && b.join == join) return b;
  branches.push_back({preceding, join, std::numeric_limits<double>::infinity(), {}});
  return branches.back();
}

// branch_orchestrator.py: children of a branch whose recorded start lies
// before the spawning call's recorded end go when that call is sent
// (on_credit_issued, origin = the call's start); the others when it
// completes (intercept, origin = the branch start). Either way a child's
// first call waits max(0, its timestamp - origin) (_child_dispatch_offset_ms).
// All in ms as AIPerf keeps them (Turn.timestamp = t * 1000.0,
// api_time_ms = max(0, api_time) * 1000.0).
void wire_branch(SessionTree& tree, const Branch& br) {
  Stream& root = tree.streams[0];
  Turn& spawn = root.turns[static_cast<std::size_t>(br.preceding)];
  const double parent_start_ms = spawn.t_s * 1000.0;
  const double parent_api_ms = std::max(0.0, spawn.call->api_time) * 1000.0;
  const double branch_start_ms = br.start_s * 1000.0;
  const bool on_send = parent_api_ms > 0 && branch_start_ms < parent_start_ms + parent_api_ms;
  const double origin_ms = on_send ? parent_start_ms : branch_start_ms;
  for (int c : br.children) {
    Stream& child = tree.streams[static_cast<std::size_t>(c)];
    child.spawned_by = {0, br.preceding};
    child.spawn_on_send = on_send;
    child.background = br.join < 0;
    child.turns[0].start_delay_s = std::max(0.0, child.turns[0].t_s * 1000.0 - origin_ms) / 1000.0;
    (on_send ? spawn.spawns_on_send : spawn.spawns).push_back(c);
    if (br.join >= 0) root.turns[static_cast<std::size_t>(br.join)].joins.push_back(c);
  }
}

int add_child(SessionTree& tree, std::string id, std::string scope, std::vector<const TraceCall*> calls,
              const IdleGapWarp& warp) {
  Stream s;
  s.conversation_id = std::move(id);
  s.replay_scope = std::move(scope);
  s.parent = 0;
  s.depth = 1;
  for (const auto* c : calls) {
    Turn turn;
    turn.call = c;
    turn.t_s = warp.map(c->t);
    s.turns.push_back(std::move(turn));
  }
  tree.streams.push_back(std::move(s));
  return static_cast<int>(tree.streams.size()) - 1;
}

// replay_dependencies.py infer_cross_stream_predecessors over the turns of
// one scope: interval [t, t + max(0, api_time)] in ms; for every other
// stream the latest turn (by end, start, key) with start < target start and
// end <= target start; then the frontier turns some other frontier turn
// follows (start < its start, end <= its start) are dropped. Keys order as
// (conversation_id, turn_index).
void scope_barriers(SessionTree& tree, const std::vector<int>& streams) {
  if (streams.size() < 2) return;
  struct Iv {
    double start, end;
    TurnRef ref;
  };
  std::vector<std::vector<Iv>> by_stream;
  for (int s : streams) {
    auto& v = by_stream.emplace_back();
    const auto& turns = tree.streams[static_cast<std::size_t>(s)].turns;
    for (std::size_t k = 0; k < turns.size(); ++k) {
      const double start = turns[k].t_s * 1000.0;
      v.push_back({start, start + std::max(0.0, turns[k].call->api_time) * 1000.0, {s, static_cast<int>(k)}});
    }
  }
  auto key_less = [&](const TurnRef& a, const TurnRef& b) {
    const auto& ca = tree.streams[static_cast<std::size_t>(a.stream)].conversation_id;
    const auto& cb = tree.streams[static_cast<std::size_t>(b.stream)].conversation_id;
    if (ca != cb) return ca < cb;
    return a.turn < b.turn;
  };
  for (std::size_t i = 0; i < by_stream.size(); ++i) {
    for (const auto& target : by_stream[i]) {
      const double ts = target.start;
      std::vector<const Iv*> frontier;
      for (std::size_t o = 0; o < by_stream.size(); ++o) {
        if (o == i) continue;
        const Iv* latest = nullptr;
        for (const auto& c : by_stream[o]) {
          if (!(c.start < ts && c.end <= ts)) continue;
          if (!latest || c.end > latest->end || (c.end == latest->end && c.start > latest->start) ||
              (c.end == latest->end && c.start == latest->start && key_less(latest->ref, c.ref)))
            latest = &c;
        }
        if (latest) frontier.push_back(latest);
      }
      std::vector<TurnRef> preds;
      for (const Iv* c : frontier) {
        bool dominated = false;
        for (const Iv* later : frontier)
          if (later != c && c->start < later->start && c->end <= later->start) dominated = true;
        if (!dominated) preds.push_back(c->ref);
      }
      std::sort(preds.begin(), preds.end(), key_less);
      tree.streams[static_cast<std::size_t>(target.ref.stream)].turns[static_cast<std::size_t>(target.ref.turn)].barriers =
          std::move(preds);
    }
  }
}

}  // namespace

SessionTree build_session_tree(const WekaTrace& trace, bool split_flattened_agents, double idle_gap_cap_s) {
  SessionTree tree;
  tree.trace = &trace;
  tree.streams.emplace_back();
  tree.streams[0].conversation_id = trace.id;
  tree.streams[0].replay_scope = trace.id;

  // Top-level calls and their outer (entry) indices; which belong to the
  // main agent (the root stream) and which to flattened agents.
  std::vector<const TraceCall*> top;
  std::vector<std::size_t> top_outer;
  for (std::size_t i = 0; i < trace.entries.size(); ++i)
    if (!trace.entries[i].is_subagent) {
      top.push_back(&trace.entries[i].call);
      top_outer.push_back(i);
    }
  ChainResult chains;
  if (split_flattened_agents && top.size() > 1) chains = detect_agent_chains(top);
  tree.seams += chains.seams;
  RootIndex root_index;
  {
    std::vector<std::size_t> main;
    if (chains.chains.empty()) {
      for (std::size_t i = 0; i < top.size(); ++i) main.push_back(i);
    } else {
      main = chains.chains[0].calls;
    }
    for (std::size_t i : main) {
      Turn turn;
      turn.call = top[i];
      tree.streams[0].turns.push_back(std::move(turn));
      root_index.outer.push_back(top_outer[i]);
    }
    if (!tree.streams[0].turns.empty())
      tree.streams[0].system_blocks =
          system_blocks(trace.tool_tokens, trace.system_tokens, *tree.streams[0].turns.front().call, trace.block_size);
  }

  // Each subagent entry's spawning root turn (-1: none, the entry is
  // dropped), found once for the timeline and the wiring below.
  std::vector<int> spawner(trace.entries.size(), -1);
  for (std::size_t oi = 0; oi < trace.entries.size(); ++oi)
    if (trace.entries[oi].is_subagent) spawner[oi] = root_index.preceding(oi);

  // The replay timeline (_compute_trace_idle_timing): the starts of every
  // top-level call and of the calls of every subagent that has a parent
  // call to spawn it.
  std::vector<double> starts;
  for (const auto* c : top) starts.push_back(c->t);
  for (std::size_t oi = 0; oi < trace.entries.size(); ++oi)
    if (spawner[oi] >= 0)
      for (const auto& c : trace.entries[oi].subagent.calls) starts.push_back(c.t);
  const IdleGapWarp warp(std::move(starts), idle_gap_cap_s);
  tree.idle_compressed_s = warp.compressed_s();
  for (auto& turn : tree.streams[0].turns) turn.t_s = warp.map(turn.call->t);

  // Subagents (_reconstruct_serial): spawned by the preceding root turn,
  // joined by the first later root turn at or after the recorded end.
  std::vector<Branch> sa_branches;
  for (std::size_t oi = 0; oi < trace.entries.size(); ++oi) {
    const auto& entry = trace.entries[oi];
    if (!entry.is_subagent) continue;
    const int preceding = spawner[oi];
    if (preceding < 0) {
      ++tree.dropped_subagents;  // no preceding parent call to spawn it
      continue;
    }
    const int join = root_index.join(tree.streams[0], oi, warp.map(subagent_end(entry.subagent)));
    Branch& br = branch_for(sa_branches, preceding, join);
    br.start_s = std::min(br.start_s, warp.map(entry.subagent.t));
    if (entry.subagent.calls.empty()) continue;
    // _expand_subagent_to_child_plans: chain detection nested on the inner
    // calls; chain 0 keeps "::sa:<id>", the others "::sa:<id>:fa:NNN" (NNN
    // from 000), all children of this branch in the subagent's scope.
    const std::string sid = trace.id + "::sa:" + entry.subagent.agent_id;
    std::vector<const TraceCall*> inner;
    for (const auto& c : entry.subagent.calls) inner.push_back(&c);
    ChainResult inner_chains;
    if (split_flattened_agents) inner_chains = detect_agent_chains(inner);
    tree.seams += inner_chains.seams;
    const auto& sa = entry.subagent;
    if (inner_chains.chains.empty()) {
      const int s = add_child(tree, sid, sid, inner, warp);
      tree.streams[static_cast<std::size_t>(s)].system_blocks =
          system_blocks(sa.tool_tokens, sa.system_tokens, *inner.front(), trace.block_size);
      br.children.push_back(s);
      continue;
    }
    const TraceCall* base_first = nullptr;  // the subagent main chain's first call
    for (std::size_t c = 0; c < inner_chains.chains.size(); ++c) {
      std::vector<const TraceCall*> calls;
      for (std::size_t i : inner_chains.chains[c].calls) calls.push_back(inner[i]);
      const TraceCall& first = *calls.front();
      const int s = add_child(tree, c == 0 ? sid : sid + ":" + chain_suffix(c - 1), sid, std::move(calls), warp);
      if (c == 0) base_first = &first;
      tree.streams[static_cast<std::size_t>(s)].system_blocks =
          c == 0 ? system_blocks(sa.tool_tokens, sa.system_tokens, first, trace.block_size)
                 : chain_system_blocks(sa.tool_tokens, sa.system_tokens, *base_first, first, trace.block_size);
      br.children.push_back(s);
      if (c > 0) ++tree.flattened_agents;
    }
  }
  // Flattened top-level agents: spawned by the last root turn before the
  // chain's first call (turn 0 when none), joined by the first later root
  // turn at or after the chain's last end; in the root's scope.
  std::vector<Branch> flat_branches;
  for (std::size_t c = 1; c < chains.chains.size(); ++c) {
    std::vector<const TraceCall*> calls;
    double chain_end = -std::numeric_limits<double>::infinity();
    for (std::size_t i : chains.chains[c].calls) {
      calls.push_back(top[i]);
      chain_end = std::max(chain_end, top[i]->t + std::max(top[i]->api_time, 0.0));
    }
    const std::size_t first_outer = top_outer[chains.chains[c].calls.front()];
    const int preceding = std::max(0, root_index.preceding(first_outer));
    const int join = root_index.join(tree.streams[0], first_outer, warp.map(chain_end));
    Branch& br = branch_for(flat_branches, preceding, join);
    br.start_s = std::min(br.start_s, warp.map(calls.front()->t));
    const TraceCall& first = *calls.front();
    const int s = add_child(tree, trace.id + "::" + chain_suffix(c - 1), trace.id, std::move(calls), warp);
    tree.streams[static_cast<std::size_t>(s)].system_blocks =
        chain_system_blocks(trace.tool_tokens, trace.system_tokens, *tree.streams[0].turns.front().call, first,
                            trace.block_size);
    br.children.push_back(s);
    ++tree.flattened_agents;
  }
  for (const auto& br : sa_branches)
    if (!br.children.empty()) wire_branch(tree, br);
  for (const auto& br : flat_branches) wire_branch(tree, br);

  for (auto& s : tree.streams) link_turns_in_stream(s, trace.block_size);

  // Span and theoretical hits need every turn in recorded time order.
  struct Item {
    double t;
    TurnRef ref;
  };
  std::vector<Item> order;
  tree.t_begin = std::numeric_limits<double>::max();
  tree.t_end = 0;
  for (std::size_t s = 0; s < tree.streams.size(); ++s)
    for (std::size_t k = 0; k < tree.streams[s].turns.size(); ++k) {
      const Turn& turn = tree.streams[s].turns[k];
      order.push_back({turn.t_s, {static_cast<int>(s), static_cast<int>(k)}});
      tree.t_begin = std::min(tree.t_begin, turn.t_s);
      tree.t_end = std::max(tree.t_end, turn_end_s(turn));
    }
  if (order.empty()) tree.t_begin = 0;
  std::stable_sort(order.begin(), order.end(), [](const Item& a, const Item& b) { return a.t < b.t; });

  std::unordered_set<std::int64_t> seen;
  for (const auto& it : order) {
    Turn& turn = tree.streams[static_cast<std::size_t>(it.ref.stream)].turns[static_cast<std::size_t>(it.ref.turn)];
    std::int64_t hits = 0;
    for (auto h : turn.call->hash_ids) hits += seen.count(h);
    turn.theoretical_hit_blocks = hits;
    for (auto h : turn.call->hash_ids) seen.insert(h);
  }

  // Barriers, per replay scope (_install_replay_dependencies).
  std::vector<std::pair<std::string, std::vector<int>>> scopes;
  for (std::size_t s = 0; s < tree.streams.size(); ++s) {
    const auto& sc = tree.streams[s].replay_scope;
    auto it = std::find_if(scopes.begin(), scopes.end(), [&](const auto& x) { return x.first == sc; });
    if (it == scopes.end()) scopes.push_back({sc, {static_cast<int>(s)}});
    else it->second.push_back(static_cast<int>(s));
  }
  for (const auto& [scope, members] : scopes) scope_barriers(tree, members);
  return tree;
}

}  // namespace agentperf::trace
