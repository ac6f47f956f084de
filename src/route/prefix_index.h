// Approximate per-backend prefix cache: which prompt prefixes were routed to
// a backend recently. Prompts are cut into fixed-size byte blocks, each block
// identified by a hash chained over the whole prefix up to it, so "block i is
// present" means "this exact prefix of i+1 blocks was sent there". This is
// the block-hash form of llm-d's approximate prefix scorer, chosen over SGLang
// Model Gateway's character tree because agentic prompts reach 1 MB of text
// per request and a character tree per backend would hold all of it.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace agentperf::route {

// Feeds prompt pieces (system prompt, messages, ...) and emits the chained
// hash of every complete block; a trailing partial block is dropped.
class PrefixHasher {
 public:
  explicit PrefixHasher(std::size_t block_bytes) : block_(block_bytes) {}
  void feed(std::string_view piece);
  const std::vector<std::uint64_t>& blocks() const { return hashes_; }

 private:
  std::size_t block_;
  std::size_t filled_ = 0;
  std::uint64_t running_ = 0x9E3779B97F4A7C15ULL;  // FNV-1a style, chained across blocks
  std::vector<std::uint64_t> hashes_;
};

// Block hashes of an OpenAI request body's prompt: `prompt` (string, array
// of strings, or token ids) or every message's content (string, or text parts) in order.
// Returns false when the body is not a JSON object.
bool prompt_blocks(const std::string& body, std::size_t block_bytes, std::vector<std::uint64_t>& out);

class PrefixIndex {
 public:
  explicit PrefixIndex(std::size_t max_blocks) : max_blocks_(max_blocks) {}
  // Leading blocks of `blocks` present here.
  std::size_t match(const std::vector<std::uint64_t>& blocks) const;
  void insert(const std::vector<std::uint64_t>& blocks);
  std::size_t size() const { return last_use_.size(); }
  void clear();

 private:
  void evict();
  std::size_t max_blocks_;
  std::uint64_t tick_ = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> last_use_;  // block hash -> tick of last insert
  std::deque<std::pair<std::uint64_t, std::uint64_t>> order_;  // (hash, tick) in insert order; stale entries skipped
};

}  // namespace agentperf::route
