#include "route/prefix_index.h"

#include <simdjson.h>

namespace agentperf::route {

void PrefixHasher::feed(std::string_view piece) {
  for (unsigned char c : piece) {
    running_ = (running_ ^ c) * 0x100000001B3ULL;
    if (++filled_ == block_) {
      // Finalise the block's identity (the whole prefix so far) and keep chaining.
      std::uint64_t h = running_;
      h ^= h >> 33;
      h *= 0xff51afd7ed558ccdULL;
      h ^= h >> 33;
      hashes_.push_back(h);
      filled_ = 0;
    }
  }
}

std::size_t PrefixIndex::match(const std::vector<std::uint64_t>& blocks) const {
  std::size_t n = 0;
  while (n < blocks.size() && last_use_.count(blocks[n])) ++n;
  return n;
}

void PrefixIndex::insert(const std::vector<std::uint64_t>& blocks) {
  ++tick_;
  for (std::uint64_t h : blocks) {
    last_use_[h] = tick_;
    order_.emplace_back(h, tick_);
  }
  evict();
}

void PrefixIndex::evict() {
  while (last_use_.size() > max_blocks_ && !order_.empty()) {
    auto [h, t] = order_.front();
    order_.pop_front();
    auto it = last_use_.find(h);
    if (it != last_use_.end() && it->second == t) last_use_.erase(it);
  }
  // Re-inserted blocks leave stale entries behind; compact (keeping order)
  // when they outnumber the live ones, so memory stays bounded.
  if (order_.size() > 2 * last_use_.size() + 1024) {
    std::deque<std::pair<std::uint64_t, std::uint64_t>> live;
    for (const auto& e : order_)
      if (auto it = last_use_.find(e.first); it != last_use_.end() && it->second == e.second) live.push_back(e);
    order_.swap(live);
  }
}

void PrefixIndex::clear() {
  last_use_.clear();
  order_.clear();
}

bool prompt_blocks(const std::string& body, std::size_t block_bytes, std::vector<std::uint64_t>& out) {
  thread_local simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  simdjson::dom::element doc;
  if (parser.parse(padded).get(doc)) return false;
  simdjson::dom::object obj;
  if (doc.get_object().get(obj)) return false;
  PrefixHasher hasher(block_bytes);
  simdjson::dom::element prompt;
  if (!obj["prompt"].get(prompt)) {
    std::string_view s;
    if (!prompt.get_string().get(s)) hasher.feed(s);
    simdjson::dom::array arr;
    if (!prompt.get_array().get(arr))
      for (auto e : arr) {
        std::int64_t token;
        if (!e.get_string().get(s)) hasher.feed(s);
        else if (!e.get_int64().get(token))  // token ids: their bytes are the prefix
          hasher.feed(std::string_view(reinterpret_cast<const char*>(&token), sizeof token));
      }
  }
  simdjson::dom::array messages;
  if (!obj["messages"].get_array().get(messages)) {
    for (auto m : messages) {
      std::string_view role, s;
      // The role is part of what the engine sees (chat template), so it is part of the prefix.
      if (!m["role"].get_string().get(role)) hasher.feed(role);
      simdjson::dom::element content;
      if (m["content"].get(content)) continue;
      if (!content.get_string().get(s)) {
        hasher.feed(s);
        continue;
      }
      simdjson::dom::array parts;
      if (!content.get_array().get(parts))
        for (auto part : parts)
          if (!part["text"].get_string().get(s)) hasher.feed(s);
    }
  }
  out = hasher.blocks();
  return true;
}

}  // namespace agentperf::route
