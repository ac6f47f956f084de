#include "trace/session_tree.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "trace/agent_chains.h"

namespace agentperf::trace {

std::int64_t SessionTree::turn_count() const {
  std::int64_t n = 0;
  for (const auto& s : streams) n += static_cast<std::int64_t>(s.turns.size());
  return n;
}

namespace {
double end_of(const TraceCall& c) { return c.t + c.api_time; }

void link_turns_in_stream(Stream& s, int block_size) {
  for (std::size_t k = 0; k < s.turns.size(); ++k) {
    Turn& turn = s.turns[k];
    if (k == 0) continue;
    const TraceCall& prev = *s.turns[k - 1].call;
    turn.start_delay_s = std::max(0.0, turn.call->t - end_of(prev));
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
// Streams for every chain but the first of `calls` (whose calls already are
// the turns of `owner`): spawned by the call they forked from, joined by the
// owner's first later call that starts after their last call ends.
void add_flattened_streams(SessionTree& tree, int owner, const std::vector<const TraceCall*>& calls,
                           const ChainResult& chains, const std::string& prefix) {
  tree.seams += chains.seams;
  if (chains.chains.size() < 2) return;
  std::unordered_map<const TraceCall*, TurnRef> where;
  for (std::size_t k = 0; k < tree.streams[static_cast<std::size_t>(owner)].turns.size(); ++k)
    where[tree.streams[static_cast<std::size_t>(owner)].turns[k].call] = {owner, static_cast<int>(k)};
  std::vector<int> stream_of_chain(chains.chains.size(), owner);
  for (std::size_t c = 1; c < chains.chains.size(); ++c) {
    const AgentChain& ch = chains.chains[c];
    const int parent_stream = ch.parent ? stream_of_chain[*ch.parent] : owner;
    Stream s;
    char name[16];
    std::snprintf(name, sizeof name, "%03zu", c);
    s.conversation_id = prefix + "::fa:" + name;
    s.parent = parent_stream;
    s.depth = tree.streams[static_cast<std::size_t>(parent_stream)].depth + 1;
    for (std::size_t i : ch.calls) {
      Turn turn;
      turn.call = calls[i];
      s.turns.push_back(std::move(turn));
    }
    const double first_t = s.turns.front().call->t;
    // The spawning turn: the call it forked from, else the parent's latest
    // call that ended by its start, else the parent's first call.
    const auto& pturns = tree.streams[static_cast<std::size_t>(parent_stream)].turns;
    int spawn = 0;
    if (ch.fork_call && where.count(calls[*ch.fork_call]) && where[calls[*ch.fork_call]].stream == parent_stream) {
      spawn = where[calls[*ch.fork_call]].turn;
    } else {
      for (std::size_t k = 0; k < pturns.size(); ++k)
        if (end_of(*pturns[k].call) <= first_t) spawn = static_cast<int>(k);
    }
    s.spawned_by = {parent_stream, spawn};
    s.turns[0].start_delay_s = std::max(0.0, first_t - end_of(*pturns[static_cast<std::size_t>(spawn)].call));
    const double last_end = end_of(*s.turns.back().call);
    const int idx = static_cast<int>(tree.streams.size());
    int join = -1;
    for (std::size_t k = static_cast<std::size_t>(spawn) + 1; k < pturns.size(); ++k)
      if (pturns[k].call->t >= last_end) {
        join = static_cast<int>(k);
        break;
      }
    s.background = join < 0;
    tree.streams[static_cast<std::size_t>(parent_stream)].turns[static_cast<std::size_t>(spawn)].spawns.push_back(idx);
    if (join >= 0)
      tree.streams[static_cast<std::size_t>(parent_stream)].turns[static_cast<std::size_t>(join)].joins.push_back(idx);
    for (std::size_t k = 0; k < s.turns.size(); ++k) where[s.turns[k].call] = {idx, static_cast<int>(k)};
    stream_of_chain[c] = idx;
    tree.streams.push_back(std::move(s));
    ++tree.flattened_agents;
  }
}

}  // namespace

SessionTree build_session_tree(const WekaTrace& trace, bool split_flattened_agents) {
  SessionTree tree;
  tree.trace = &trace;
  tree.streams.emplace_back();
  Stream& root_init = tree.streams[0];
  root_init.conversation_id = trace.id;

  // Which top-level calls belong to the main agent.
  std::vector<const TraceCall*> top;
  for (const auto& e : trace.entries)
    if (!e.is_subagent) top.push_back(&e.call);
  ChainResult chains;
  if (split_flattened_agents) chains = detect_agent_chains(top);
  std::unordered_set<const TraceCall*> main_calls;
  if (chains.chains.empty()) {
    main_calls.insert(top.begin(), top.end());
  } else {
    for (std::size_t i : chains.chains[0].calls) main_calls.insert(top[i]);
  }

  std::vector<int> awaiting_join;
  std::vector<std::pair<int, std::pair<std::vector<const TraceCall*>, ChainResult>>> subagent_chains;
  for (const auto& entry : trace.entries) {
    if (!entry.is_subagent && !main_calls.count(&entry.call)) continue;  // a flattened agent's call
    if (!entry.is_subagent) {
      Turn turn;
      turn.call = &entry.call;
      // Tiered joins: a waiting child is joined by the first following
      // parent call that starts after the child's last call ends; one that
      // the recording shows still running keeps waiting for a later call.
      std::vector<int> still_waiting;
      for (int idx : awaiting_join) {
        const auto& child = tree.streams[static_cast<std::size_t>(idx)];
        if (end_of(*child.turns.back().call) <= entry.call.t + 1e-6) turn.joins.push_back(idx);
        else still_waiting.push_back(idx);
      }
      awaiting_join = std::move(still_waiting);
      tree.streams[0].turns.push_back(std::move(turn));
      continue;
    }
    if (entry.subagent.calls.empty()) continue;
    if (tree.streams[0].turns.empty()) {
      ++tree.dropped_subagents;  // no preceding parent call to spawn it
      continue;
    }
    const int parent_turn = static_cast<int>(tree.streams[0].turns.size()) - 1;
    Stream child;
    child.conversation_id = trace.id + "::sa:" + entry.subagent.agent_id;
    child.parent = 0;
    child.spawned_by = {0, parent_turn};
    child.depth = 1;
    // Flattened agents inside the group, too: its first chain is the
    // subagent's own stream, the others fork from it.
    std::vector<const TraceCall*> inner;
    for (const auto& c : entry.subagent.calls) inner.push_back(&c);
    ChainResult inner_chains;
    if (split_flattened_agents) inner_chains = detect_agent_chains(inner);
    if (inner_chains.chains.empty()) {
      for (const auto* c : inner) {
        Turn turn;
        turn.call = c;
        child.turns.push_back(std::move(turn));
      }
    } else {
      for (std::size_t i : inner_chains.chains[0].calls) {
        Turn turn;
        turn.call = inner[i];
        child.turns.push_back(std::move(turn));
      }
    }
    const TraceCall& spawn_call = *tree.streams[0].turns[static_cast<std::size_t>(parent_turn)].call;
    child.turns[0].start_delay_s = std::max(0.0, child.turns[0].call->t - end_of(spawn_call));
    const int idx = static_cast<int>(tree.streams.size());
    tree.streams.push_back(std::move(child));
    tree.streams[0].turns[static_cast<std::size_t>(parent_turn)].spawns.push_back(idx);
    awaiting_join.push_back(idx);
    if (inner_chains.chains.size() > 1) subagent_chains.emplace_back(idx, std::make_pair(std::move(inner), std::move(inner_chains)));
  }
  for (int idx : awaiting_join) tree.streams[static_cast<std::size_t>(idx)].background = true;

  add_flattened_streams(tree, 0, top, chains, trace.id);
  for (auto& [idx, sub] : subagent_chains)
    add_flattened_streams(tree, idx, sub.first, sub.second, tree.streams[static_cast<std::size_t>(idx)].conversation_id);

  for (auto& s : tree.streams) link_turns_in_stream(s, trace.block_size);

  // Span, barriers and theoretical hits need every turn in recorded time order.
  struct Item {
    double t;
    TurnRef ref;
  };
  std::vector<Item> order;
  tree.t_begin = std::numeric_limits<double>::max();
  tree.t_end = 0;
  for (std::size_t s = 0; s < tree.streams.size(); ++s)
    for (std::size_t k = 0; k < tree.streams[s].turns.size(); ++k) {
      const TraceCall& c = *tree.streams[s].turns[k].call;
      order.push_back({c.t, {static_cast<int>(s), static_cast<int>(k)}});
      tree.t_begin = std::min(tree.t_begin, c.t);
      tree.t_end = std::max(tree.t_end, end_of(c));
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

  // Barriers: per other stream, the latest turn completed (recorded) by this
  // turn's start. Streams' completions are increasing in turn order, so a
  // binary search per stream finds it.
  if (tree.streams.size() > 1) {
    std::vector<std::vector<double>> ends(tree.streams.size());
    for (std::size_t s = 0; s < tree.streams.size(); ++s)
      for (const auto& t : tree.streams[s].turns) ends[s].push_back(end_of(*t.call));
    for (std::size_t s = 0; s < tree.streams.size(); ++s) {
      for (auto& turn : tree.streams[s].turns) {
        for (std::size_t o = 0; o < tree.streams.size(); ++o) {
          if (o == s) continue;
          const auto& e = ends[o];
          auto pos = std::upper_bound(e.begin(), e.end(), turn.call->t) - e.begin();
          if (pos > 0) turn.barriers.push_back({static_cast<int>(o), static_cast<int>(pos - 1)});
        }
      }
    }
  }
  return tree;
}

}  // namespace agentperf::trace
