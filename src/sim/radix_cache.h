// Radix prefix cache over token ids, SGLang-style (github.com/sgl-project/sglang,
// python/sglang/srt/mem_cache/hi_mamba_radix_cache.py @ 2782416cecea;
// docs/advanced_features/hicache_design.md @ 5b51a5206e03):
//  - page-granular: queries are cut to whole pages and edges split only at
//    page boundaries;
//  - LRU eviction of unlocked device leaves; running requests lock their
//    matched path;
//  - hybrid models (linear-attention layers): a node can hold a state
//    checkpoint for the position at its end, and a prefix hit is only usable
//    up to the deepest matched node with a checkpoint;
//  - sliding-window tails (DeepSeek-V4.1 under SGLang's cap-sized SWA pool):
//    the same rule, with the checkpoint standing for the live sliding window
//    an insert leaves at its end; a running request pins only the window
//    where its own path ends, so the older tails above it stay evictable
//    (protect_lock_ends_only()).
//  - hierarchical cache (HiCache): nodes can be backed up to a host pool.
//    A node is written to host when its hit count reaches the policy's
//    threshold (write_through 1, write_through_selective 2); on device
//    eviction a backed-up node is demoted (stays in the tree, host-only), a
//    node that is not is written first under write_back and dropped
//    otherwise. Host space is reclaimed LRU over host-only leaves.
// Hit counts rise each time an insert passes through a node.
#pragma once
#include <cstdint>
#include <memory>
#include <queue>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/engine_config.h"

namespace agentperf::sim {

using Token = std::int32_t;

struct RadixNode {
  std::vector<Token> key;  // edge tokens from the parent
  RadixNode* parent = nullptr;
  std::unordered_map<std::uint64_t, std::unique_ptr<RadixNode>> children;  // by first-page hash
  bool device = true;
  bool host = false;
  bool state_device = false;
  bool state_host = false;
  int lock = 0;      // requests whose locked path passes through or ends here
  int end_lock = 0;  // requests whose locked path ends here
  std::int64_t last_access = 0;
  std::int64_t state_access = 0;  // with protect_lock_ends_only(): when its tail was last used
  int hit_count = 0;
  std::int64_t depth_end = 0;  // tokens from the root to this node's end
  std::uint64_t id = 0;
  std::uint64_t version = 0;   // bumped on every change that can alter its eviction order or eligibility
};

struct PrefixMatch {
  std::int64_t matched = 0;        // tokens matched structurally (page-aligned)
  std::int64_t device_usable = 0;  // usable from the device as it is
  std::int64_t host_usable = 0;    // usable if host-resident pages (and state) are loaded back (>= device_usable)
  RadixNode* device_node = nullptr;  // node ending at device_usable (root if 0)
  RadixNode* host_node = nullptr;    // node ending at host_usable
};

struct CacheCounters {
  std::int64_t device_tokens = 0;   // KV tokens held by the tree on the device
  std::int64_t host_tokens = 0;     // KV tokens backed up on the host
  std::int64_t device_states = 0;   // state checkpoints on the device
  std::int64_t host_states = 0;
  std::int64_t locked_device_tokens = 0;
  std::int64_t locked_device_states = 0;
  double d2h_bytes = 0;             // written to host so far
  double h2d_bytes = 0;             // loaded back so far
  std::int64_t device_evicted_tokens = 0;
  std::int64_t host_evicted_tokens = 0;
};

class RadixCache {
 public:
  RadixCache(int page_size, bool hybrid, std::int64_t host_token_capacity, std::int64_t host_state_capacity,
             WritePolicy policy, double kv_bytes_per_token, double state_bytes);

  // Longest cached prefix of tokens. Splits an edge so the match ends on a
  // node boundary (as SGLang does). Touches matched nodes (LRU).
  PrefixMatch match(std::span<const Token> tokens, std::int64_t now);

  // Makes the path to `node` device-resident (load-back of host pages):
  // returns the tokens that now occupy device KV.
  std::int64_t load_back(RadixNode* node, std::int64_t now);

  // Inserts tokens[0, len) (len cut to whole pages), marking the path
  // device-resident; with_state puts a state checkpoint at the end. Returns
  // the tokens newly added to device KV (the caller frees that many of its
  // own) and the end node.
  struct InsertResult {
    std::int64_t new_device_tokens = 0;
    bool new_state = false;
    RadixNode* node = nullptr;
  };
  InsertResult insert(std::span<const Token> tokens, std::int64_t len, bool with_state, std::int64_t now);

  void lock(RadixNode* node);
  void unlock(RadixNode* node);
  // State checkpoints are then evictable unless a lock ends at their node
  // (SGLang's SWA lock covers one window, not the whole path), and their
  // LRU order counts only the uses that end at them. Call before use.
  void protect_lock_ends_only() { lock_ends_only_ = true; }

  // Frees at least `tokens` device KV tokens from unlocked leaves, LRU
  // first; returns the tokens freed.
  std::int64_t evict_device(std::int64_t tokens);
  // Frees `states` device state checkpoints from unlocked nodes, LRU first.
  std::int64_t evict_device_states(std::int64_t states);

  std::int64_t evictable_device_tokens() const { return c_.device_tokens - c_.locked_device_tokens; }
  std::int64_t evictable_device_states() const { return c_.device_states - c_.locked_device_states; }
  const CacheCounters& counters() const { return c_; }
  std::int64_t host_token_capacity() const { return host_capacity_; }
  int page_size() const { return page_; }
  std::size_t node_count() const { return nodes_; }

 private:
  std::uint64_t page_hash(std::span<const Token> t) const;
  std::int64_t common_pages(std::span<const Token> a, std::span<const Token> b) const;
  RadixNode* split(RadixNode* node, std::int64_t at);
  void backup_if_hot(RadixNode* node);
  bool reserve_host(std::int64_t tokens);
  std::int64_t evict_host(std::int64_t tokens);
  void set_device(RadixNode* n, bool on);
  void set_state_device(RadixNode* n, bool on);
  void remove_subtree(RadixNode* n);
  void delete_leaf(RadixNode* n);
  RadixNode* adopt(std::unique_ptr<RadixNode>& n);  // gives a new node its id

  // Eviction candidates, LRU first: lazy heaps whose entries are checked
  // against the node's current version and eligibility when popped, so
  // finding the next victim costs O(log n) instead of a scan of the tree.
  struct HeapEntry {
    std::int64_t last_access;
    std::int64_t depth;
    std::uint64_t id;
    std::uint64_t version;
  };
  struct LaterFirst {
    bool operator()(const HeapEntry& a, const HeapEntry& b) const {
      return a.last_access != b.last_access ? a.last_access > b.last_access : a.depth > b.depth;
    }
  };
  using Heap = std::priority_queue<HeapEntry, std::vector<HeapEntry>, LaterFirst>;
  HeapEntry state_entry(const RadixNode* n) const;  // ordered by state_access with lock_ends_only_
  void touch(RadixNode* n);  // re-queues n in every heap with a new version
  RadixNode* live(const HeapEntry& e) const;
  void compact_heaps();
  Heap device_heap_, state_heap_, host_heap_;
  std::unordered_map<std::uint64_t, RadixNode*> by_id_;
  std::uint64_t next_id_ = 1;

  int page_;
  bool hybrid_;
  bool lock_ends_only_ = false;
  std::int64_t host_capacity_, host_state_capacity_;
  WritePolicy policy_;
  int write_threshold_;
  double kv_bytes_, state_bytes_;
  std::unique_ptr<RadixNode> root_;
  CacheCounters c_;
  std::size_t nodes_ = 0;
};

}  // namespace agentperf::sim
