#include "sim/radix_cache.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace agentperf::sim {

RadixCache::RadixCache(int page_size, bool hybrid, std::int64_t host_token_capacity, std::int64_t host_state_capacity,
                       WritePolicy policy, double kv_bytes_per_token, double state_bytes)
    : page_(std::max(1, page_size)), hybrid_(hybrid), host_capacity_(host_token_capacity),
      host_state_capacity_(host_state_capacity), policy_(policy),
      write_threshold_(policy == WritePolicy::write_through_selective ? 2 : 1), kv_bytes_(kv_bytes_per_token),
      state_bytes_(state_bytes), root_(std::make_unique<RadixNode>()) {}

RadixNode* RadixCache::adopt(std::unique_ptr<RadixNode>& n) {
  n->id = next_id_++;
  by_id_[n->id] = n.get();
  return n.get();
}

void RadixCache::touch(RadixNode* n) {
  if (n == root_.get()) return;
  ++n->version;
  const HeapEntry e{n->last_access, n->depth_end, n->id, n->version};
  device_heap_.push(e);
  state_heap_.push(state_entry(n));
  host_heap_.push(e);
  if (device_heap_.size() > 8 * by_id_.size() + 4096) compact_heaps();
}

RadixNode* RadixCache::live(const HeapEntry& e) const {
  auto it = by_id_.find(e.id);
  if (it == by_id_.end() || it->second->version != e.version) return nullptr;
  return it->second;
}

void RadixCache::compact_heaps() {
  device_heap_ = Heap();
  state_heap_ = Heap();
  host_heap_ = Heap();
  for (auto& [id, n] : by_id_) {
    const HeapEntry e{n->last_access, n->depth_end, n->id, n->version};
    device_heap_.push(e);
    state_heap_.push(state_entry(n));
    host_heap_.push(e);
  }
}

RadixCache::HeapEntry RadixCache::state_entry(const RadixNode* n) const {
  return {lock_ends_only_ ? n->state_access : n->last_access, n->depth_end, n->id, n->version};
}

std::uint64_t RadixCache::page_hash(std::span<const Token> t) const {
  std::uint64_t h = 1469598103934665603ull;
  const std::size_t n = std::min<std::size_t>(t.size(), static_cast<std::size_t>(page_));
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<std::uint32_t>(t[i]);
    h *= 1099511628211ull;
  }
  return h;
}

std::int64_t RadixCache::common_pages(std::span<const Token> a, std::span<const Token> b) const {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  // Compare a page at a time; only whole pages count.
  while (i + static_cast<std::size_t>(page_) <= n &&
         std::memcmp(a.data() + i, b.data() + i, sizeof(Token) * static_cast<std::size_t>(page_)) == 0)
    i += static_cast<std::size_t>(page_);
  return static_cast<std::int64_t>(i);
}

void RadixCache::set_device(RadixNode* n, bool on) {
  if (n->device == on) return;
  const auto len = static_cast<std::int64_t>(n->key.size());
  n->device = on;
  c_.device_tokens += on ? len : -len;
  if (n->lock > 0) c_.locked_device_tokens += on ? len : -len;
  if (!on && n->state_device) set_state_device(n, false);
  touch(n);
  if (!on && n->parent) touch(n->parent);  // the parent may now be a device leaf
}

void RadixCache::set_state_device(RadixNode* n, bool on) {
  if (n->state_device == on) return;
  n->state_device = on;
  c_.device_states += on ? 1 : -1;
  if (n->lock > 0) c_.locked_device_states += on ? 1 : -1;
  touch(n);
  if (on && n->host && !n->state_host && host_state_capacity_ > 0 && c_.host_states < host_state_capacity_) {
    n->state_host = true;
    ++c_.host_states;
    c_.d2h_bytes += state_bytes_;
  }
}

RadixNode* RadixCache::split(RadixNode* node, std::int64_t at) {
  auto mid = std::make_unique<RadixNode>();
  RadixNode* parent = node->parent;
  const std::uint64_t h = page_hash(node->key);
  mid->key.assign(node->key.begin(), node->key.begin() + at);
  node->key.erase(node->key.begin(), node->key.begin() + at);
  mid->parent = parent;
  mid->device = node->device;
  mid->host = node->host;
  mid->lock = node->lock;
  mid->last_access = node->last_access;
  mid->hit_count = node->hit_count;
  mid->depth_end = node->depth_end - static_cast<std::int64_t>(node->key.size());
  auto owned = std::move(parent->children[h]);
  owned->parent = mid.get();
  mid->children.emplace(page_hash(owned->key), std::move(owned));
  RadixNode* raw = adopt(mid);
  parent->children[h] = std::move(mid);
  ++nodes_;
  touch(raw);
  touch(node);
  return raw;
}

PrefixMatch RadixCache::match(std::span<const Token> tokens, std::int64_t now) {
  const std::size_t len = tokens.size() / static_cast<std::size_t>(page_) * static_cast<std::size_t>(page_);
  auto q = tokens.first(len);
  PrefixMatch m;
  m.device_node = m.host_node = root_.get();
  RadixNode* node = root_.get();
  std::size_t pos = 0;
  std::int64_t device_end = 0;
  RadixNode* device_end_node = root_.get();
  while (pos < len) {
    auto it = node->children.find(page_hash(q.subspan(pos)));
    if (it == node->children.end()) break;
    RadixNode* child = it->second.get();
    const std::int64_t cp = common_pages(child->key, q.subspan(pos));
    if (cp == 0) break;
    if (cp < static_cast<std::int64_t>(child->key.size())) child = split(child, cp);
    node = child;
    pos += static_cast<std::size_t>(cp);
    node->last_access = now;
    touch(node);
    const auto end = static_cast<std::int64_t>(pos);
    if (node->device) {
      device_end = end;
      device_end_node = node;
    }
    if (hybrid_) {
      if (node->device && node->state_device) {
        m.device_usable = end;
        m.device_node = node;
      }
      if (node->state_device || node->state_host) {
        m.host_usable = end;
        m.host_node = node;
      }
    } else {
      m.host_usable = end;
      m.host_node = node;
    }
  }
  m.matched = static_cast<std::int64_t>(pos);
  // Window tails are refreshed where the hit ends, not along the path
  // (SGLang's reset_node_and_window_ancestors_mru), so older tails age out.
  if (lock_ends_only_ && m.device_node != root_.get()) {
    m.device_node->state_access = now;
    touch(m.device_node);
  }
  if (!hybrid_) {
    m.device_usable = device_end;
    m.device_node = device_end_node;
  }
  if (m.host_usable < m.device_usable) {
    m.host_usable = m.device_usable;
    m.host_node = m.device_node;
  }
  return m;
}

std::int64_t RadixCache::load_back(RadixNode* node, std::int64_t now) {
  std::int64_t loaded = 0;
  for (RadixNode* n = node; n && n != root_.get(); n = n->parent) {
    n->last_access = now;
    touch(n);
    if (!n->device && n->host) {
      set_device(n, true);
      const auto len = static_cast<std::int64_t>(n->key.size());
      loaded += len;
      c_.h2d_bytes += static_cast<double>(len) * kv_bytes_;
    }
  }
  if (hybrid_ && node != root_.get() && !node->state_device && node->state_host) {
    set_state_device(node, true);
    c_.h2d_bytes += state_bytes_;
  }
  return loaded;
}

void RadixCache::backup_if_hot(RadixNode* node) {
  if (host_capacity_ <= 0 || node->host || policy_ == WritePolicy::write_back) return;
  if (node->hit_count < write_threshold_) return;
  const auto len = static_cast<std::int64_t>(node->key.size());
  if (!reserve_host(len)) return;
  node->host = true;
  touch(node);
  c_.host_tokens += len;
  c_.d2h_bytes += static_cast<double>(len) * kv_bytes_;
  if (hybrid_ && node->state_device && !node->state_host && c_.host_states < host_state_capacity_) {
    node->state_host = true;
    ++c_.host_states;
    c_.d2h_bytes += state_bytes_;
  }
}

bool RadixCache::reserve_host(std::int64_t tokens) {
  if (tokens > host_capacity_) return false;
  if (c_.host_tokens + tokens > host_capacity_) evict_host(c_.host_tokens + tokens - host_capacity_);
  return c_.host_tokens + tokens <= host_capacity_;
}

RadixCache::InsertResult RadixCache::insert(std::span<const Token> tokens, std::int64_t len, bool with_state,
                                            std::int64_t now) {
  InsertResult r;
  len = std::min<std::int64_t>(len, static_cast<std::int64_t>(tokens.size()));
  len = len / page_ * page_;
  RadixNode* node = root_.get();
  r.node = node;
  auto q = tokens.first(static_cast<std::size_t>(len));
  std::int64_t pos = 0;
  while (pos < len) {
    const std::uint64_t h = page_hash(q.subspan(static_cast<std::size_t>(pos)));
    auto it = node->children.find(h);
    if (it == node->children.end()) {
      auto child = std::make_unique<RadixNode>();
      child->key.assign(q.begin() + pos, q.end());
      child->parent = node;
      child->device = false;
      child->hit_count = 1;
      child->last_access = now;
      child->depth_end = len;
      RadixNode* raw = adopt(child);
      node->children.emplace(h, std::move(child));
      ++nodes_;
      set_device(raw, true);
      r.new_device_tokens += len - pos;
      backup_if_hot(raw);
      node = raw;
      pos = len;
      break;
    }
    RadixNode* child = it->second.get();
    const std::int64_t cp = common_pages(child->key, q.subspan(static_cast<std::size_t>(pos)));
    if (cp == 0) break;  // first-page hash collision: stop rather than corrupt the tree
    if (cp < static_cast<std::int64_t>(child->key.size())) child = split(child, cp);
    if (!child->device) {
      set_device(child, true);
      r.new_device_tokens += cp;
    }
    ++child->hit_count;
    child->last_access = now;
    touch(child);
    backup_if_hot(child);
    node = child;
    pos += cp;
  }
  r.node = node;
  if (with_state && hybrid_ && node != root_.get() && !node->state_device) {
    set_state_device(node, true);
    r.new_state = true;
  }
  if (lock_ends_only_ && node != root_.get()) {
    node->state_access = now;
    touch(node);
  }
  return r;
}

void RadixCache::lock(RadixNode* node) {
  ++node->end_lock;
  for (RadixNode* n = node; n && n != root_.get(); n = n->parent) {
    if (n->lock++ == 0) {
      if (n->device) c_.locked_device_tokens += static_cast<std::int64_t>(n->key.size());
      if (n->state_device) ++c_.locked_device_states;
    }
  }
}

void RadixCache::unlock(RadixNode* node) {
  --node->end_lock;
  for (RadixNode* n = node; n && n != root_.get(); n = n->parent) {
    if (--n->lock == 0) {
      if (n->device) c_.locked_device_tokens -= static_cast<std::int64_t>(n->key.size());
      if (n->state_device) --c_.locked_device_states;
      touch(n);
    }
  }
}

void RadixCache::delete_leaf(RadixNode* n) {
  const auto len = static_cast<std::int64_t>(n->key.size());
  if (n->device) c_.device_tokens -= len;
  if (n->host) c_.host_tokens -= len;
  if (n->state_device) --c_.device_states;
  if (n->state_host) --c_.host_states;
  RadixNode* parent = n->parent;
  by_id_.erase(n->id);
  parent->children.erase(page_hash(n->key));
  --nodes_;
  touch(parent);  // it may have become a leaf
}

void RadixCache::remove_subtree(RadixNode* n) {
  std::vector<RadixNode*> kids;
  for (auto& [h, c] : n->children) kids.push_back(c.get());
  for (RadixNode* k : kids) remove_subtree(k);
  delete_leaf(n);
}

namespace {
bool has_device_child(const RadixNode* n) {
  for (const auto& [h, c] : n->children)
    if (c->device) return true;
  return false;
}
}  // namespace

std::int64_t RadixCache::evict_device(std::int64_t tokens) {
  std::int64_t freed = 0;
  while (freed < tokens && !device_heap_.empty()) {
    const HeapEntry e = device_heap_.top();
    device_heap_.pop();
    RadixNode* n = live(e);
    if (!n || !n->device || n->lock > 0 || has_device_child(n)) continue;
    const auto len = static_cast<std::int64_t>(n->key.size());
    if (!n->host && policy_ == WritePolicy::write_back && host_capacity_ > 0 && reserve_host(len)) {
      n->host = true;  // written to host on eviction, then demoted
      c_.host_tokens += len;
      c_.d2h_bytes += static_cast<double>(len) * kv_bytes_;
      if (hybrid_ && n->state_device && c_.host_states < host_state_capacity_) {
        n->state_host = true;
        ++c_.host_states;
        c_.d2h_bytes += state_bytes_;
      }
    }
    if (n->host) set_device(n, false);
    else remove_subtree(n);
    freed += len;
    c_.device_evicted_tokens += len;
  }
  return freed;
}

std::int64_t RadixCache::evict_device_states(std::int64_t states) {
  std::int64_t freed = 0;
  while (freed < states && !state_heap_.empty()) {
    const HeapEntry e = state_heap_.top();
    state_heap_.pop();
    RadixNode* n = live(e);
    if (!n || !n->state_device || (lock_ends_only_ ? n->end_lock : n->lock) > 0) continue;
    set_state_device(n, false);  // a tombstone: the KV stays
    ++freed;
  }
  return freed;
}

std::int64_t RadixCache::evict_host(std::int64_t tokens) {
  std::int64_t freed = 0;
  while (freed < tokens && !host_heap_.empty()) {
    const HeapEntry e = host_heap_.top();
    host_heap_.pop();
    RadixNode* n = live(e);
    if (!n || !n->host || n->device || !n->children.empty() || n->lock > 0) continue;
    const auto len = static_cast<std::int64_t>(n->key.size());
    delete_leaf(n);
    freed += len;
    c_.host_evicted_tokens += len;
  }
  return freed;
}

}  // namespace agentperf::sim
