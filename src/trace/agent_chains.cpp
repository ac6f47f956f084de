#include "trace/agent_chains.h"

#include <algorithm>
#include <map>

namespace agentperf::trace {
namespace {
constexpr double kEpsilon = 1e-6;

double end_of(const TraceCall& c) { return c.t + std::max(0.0, c.api_time); }

std::int64_t lcp(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  std::size_t n = std::min(a.size(), b.size()), i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<std::int64_t>(i);
}

struct Work {
  std::vector<std::size_t> calls;
  std::optional<std::size_t> parent, fork_call;
  std::int64_t depth = 0;
  double fork_time = 0;
  std::optional<std::size_t> spliced_into;
  std::optional<std::size_t> tail;  // last call with hash ids
};
}  // namespace

ChainResult detect_agent_chains(const std::vector<const TraceCall*>& calls) {
  ChainResult out;
  if (calls.empty()) return out;
  std::vector<std::size_t> order(calls.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return calls[a]->t < calls[b]->t; });

  std::vector<Work> chains;
  std::vector<std::size_t> chain_of(calls.size());
  std::map<std::size_t, std::vector<std::size_t>> forks_by_tail;
  for (std::size_t i : order) {
    const auto& h = calls[i]->hash_ids;
    if (h.empty()) {  // no evidence: stays on the first chain
      if (chains.empty()) chains.emplace_back();
      chains[0].calls.push_back(i);
      chain_of[i] = 0;
      continue;
    }
    // Extension: the deepest tail that is a whole prefix and has ended.
    std::optional<std::size_t> target;
    std::size_t best_len = 0;
    for (std::size_t c = 0; c < chains.size(); ++c) {
      if (!chains[c].tail) continue;
      const TraceCall& tail = *calls[*chains[c].tail];
      const auto tl = tail.hash_ids.size();
      if (tl == 0 || tl > h.size() || (target && tl <= best_len)) continue;
      if (end_of(tail) > calls[i]->t + kEpsilon) continue;
      if (std::equal(tail.hash_ids.begin(), tail.hash_ids.end(), h.begin())) {
        target = c;
        best_len = tl;
      }
    }
    if (!target) {
      // A new chain, forked from the tail sharing the longest prefix. On a
      // tie we take the most recently active tail; AIPerf takes the deeper
      // one, which after a second compaction back to the same system prefix
      // is the long-dead state before the first (so the live agent would
      // come out as a spawned one).
      std::optional<std::size_t> parent;
      std::int64_t best_d = 0;
      double best_end = -1;
      for (std::size_t c = 0; c < chains.size(); ++c) {
        if (!chains[c].tail) continue;
        const TraceCall& tail = *calls[*chains[c].tail];
        const std::int64_t d = lcp(tail.hash_ids, h);
        if (d == 0) continue;
        if (d > best_d || (d == best_d && end_of(tail) > best_end)) {
          best_d = d;
          best_end = end_of(tail);
          parent = c;
        }
      }
      const std::pair<std::int64_t, std::size_t> best{best_d, 0};
      Work w;
      w.parent = parent;
      w.depth = best.first;
      w.fork_time = calls[i]->t;
      if (parent) w.fork_call = chains[*parent].tail;
      chains.push_back(std::move(w));
      target = chains.size() - 1;
      if (chains[*target].fork_call && chains[*target].depth > 0)
        forks_by_tail[*chains[*target].fork_call].push_back(*target);
    }
    chains[*target].calls.push_back(i);
    chains[*target].tail = i;
    chain_of[i] = *target;
  }

  // Phase 2: splice seams.
  auto resolve = [&](std::size_t c) {
    while (chains[c].spliced_into) c = *chains[c].spliced_into;
    return c;
  };
  std::vector<std::size_t> sources;
  for (const auto& [src, f] : forks_by_tail) sources.push_back(src);
  std::sort(sources.begin(), sources.end(), [&](std::size_t a, std::size_t b) {
    return calls[a]->t != calls[b]->t ? calls[a]->t < calls[b]->t : a < b;
  });
  for (std::size_t src : sources) {
    const std::size_t owner = resolve(chain_of[src]);
    if (chains[owner].calls.back() != src) continue;  // the longer state went on: all forks are spawns
    const double src_end = end_of(*calls[src]);
    std::optional<std::size_t> elected;
    for (std::size_t c : forks_by_tail[src]) {
      const Work& w = chains[c];
      if (w.spliced_into || w.depth <= 0 || src_end > calls[w.calls.front()]->t + kEpsilon) continue;
      if (!elected || w.depth > chains[*elected].depth ||
          (w.depth == chains[*elected].depth && w.fork_time < chains[*elected].fork_time))
        elected = c;
    }
    if (!elected) continue;
    for (std::size_t k : chains[*elected].calls) {
      chains[owner].calls.push_back(k);
      chain_of[k] = owner;
    }
    chains[*elected].spliced_into = owner;
    ++out.seams;
  }

  // Live chains, the first call's chain first, the rest by first call.
  const std::size_t main = resolve(chain_of[order.front()]);
  std::vector<std::size_t> live;
  for (std::size_t c = 0; c < chains.size(); ++c)
    if (!chains[c].spliced_into && c != main) live.push_back(c);
  std::sort(live.begin(), live.end(), [&](std::size_t a, std::size_t b) {
    return calls[chains[a].calls.front()]->t < calls[chains[b].calls.front()]->t;
  });
  live.insert(live.begin(), main);
  std::vector<std::size_t> new_index(chains.size(), 0);
  for (std::size_t k = 0; k < live.size(); ++k) new_index[live[k]] = k;
  for (std::size_t c : live) {
    AgentChain a;
    a.calls = chains[c].calls;
    std::stable_sort(a.calls.begin(), a.calls.end(), [&](std::size_t x, std::size_t y) { return calls[x]->t < calls[y]->t; });
    if (chains[c].parent) a.parent = new_index[resolve(*chains[c].parent)];
    a.fork_call = chains[c].fork_call;
    a.depth = chains[c].depth;
    out.chains.push_back(std::move(a));
  }
  return out;
}

}  // namespace agentperf::trace
