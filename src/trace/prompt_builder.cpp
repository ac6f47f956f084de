#include "trace/prompt_builder.h"

#include <stdexcept>

#include "common/rng.h"

namespace agentperf::trace {
namespace {
std::uint64_t fnv(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
}  // namespace

std::vector<MessageSpan> segment_messages(const Stream& stream, int turn, const WekaTrace& trace,
                                          std::size_t piece_count) {
  struct Seg {
    const char* role;
    std::int64_t blocks;
  };
  const std::int64_t bs = trace.block_size;
  const std::int64_t sys = stream.system_blocks;  // the stream's own declared prefix (session_tree.h)
  std::vector<Seg> segs;
  std::int64_t full = 0;
  for (int j = 0; j <= turn; ++j) {
    const Turn& t = stream.turns[static_cast<std::size_t>(j)];
    full = std::min<std::int64_t>(static_cast<std::int64_t>(t.call->hash_ids.size()), t.call->in / bs);
    if (j == 0) {
      segs.clear();
      const std::int64_t s = std::min(sys, full);
      if (s > 0) segs.push_back({"system", s});
      if (full - s > 0) segs.push_back({"user", full - s});
      continue;
    }
    // Keep the messages of the previous turn up to the shared blocks.
    std::int64_t keep = std::min(t.lcp_blocks, full), acc = 0;
    std::vector<Seg> kept;
    for (const auto& s : segs) {
      if (acc >= keep) break;
      const std::int64_t n = std::min(s.blocks, keep - acc);
      kept.push_back({s.role, n});
      acc += n;
    }
    segs = std::move(kept);
    const std::int64_t fresh = full - acc;
    const std::int64_t answer = std::min(t.assistant_blocks, fresh);
    if (answer > 0) segs.push_back({"assistant", answer});
    if (fresh - answer > 0) segs.push_back({"user", fresh - answer});
  }
  std::vector<MessageSpan> out;
  std::size_t at = 0;
  for (const auto& s : segs) {
    const auto n = static_cast<std::size_t>(s.blocks);
    if (!out.empty() && out.back().role == s.role) out.back().pieces += n;  // merge neighbours of one role
    else out.push_back({s.role, at, n});
    at += n;
  }
  // The tail (pieces past the full blocks) closes the last user message.
  const std::size_t rest = piece_count > at ? piece_count - at : 0;
  if (out.empty() || std::string_view(out.back().role) != "user") out.push_back({"user", at, rest});
  else out.back().pieces += rest;
  return out;
}

TokenIdRange TokenIdRange::from_bounds(int min, int max) {
  if (min < 0 || max - min < 512)
    throw std::invalid_argument("needs 0 <= MIN and MAX - MIN >= 512 (block ids below MAX - 256, cache-bust marker ids in the top 256)");
  TokenIdRange r;
  r.min = min;
  r.span = max - 256 - min;
  r.marker_base = max - 256;
  return r;
}

PromptBuilder::PromptBuilder(const WekaTrace& trace, std::uint64_t seed,
                             std::shared_ptr<const tokenizer::ExactTextBuilder> text, TokenIdRange ids)
    : trace_(trace), trace_seed_(mix_seed(seed, fnv(trace.id))), text_(std::move(text)), ids_(ids) {}

std::vector<std::int32_t> PromptBuilder::block_tokens(std::int64_t hash_id) const {
  Rng rng(mix_seed(trace_seed_, static_cast<std::uint64_t>(hash_id), 0xB10C));
  std::vector<std::int32_t> out(static_cast<std::size_t>(trace_.block_size));
  for (auto& t : out) t = ids_.min + static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(ids_.span)));
  return out;
}

std::shared_ptr<const std::string> PromptBuilder::block_piece(std::int64_t hash_id) {
  auto it = blocks_.find(hash_id);
  if (it != blocks_.end()) return it->second;
  std::string s;
  if (text_) {
    Rng rng(mix_seed(trace_seed_, static_cast<std::uint64_t>(hash_id), 0xB10C));
    s = text_->block(rng, trace_.block_size);
  } else {
    // "a,b,...,z," : every block ends with a comma so blocks join directly;
    // the prompt's last piece is built per turn without it.
    s.reserve(static_cast<std::size_t>(trace_.block_size) * 6);
    for (auto t : block_tokens(hash_id)) {
      s += std::to_string(t);
      s += ',';
    }
  }
  auto piece = std::make_shared<const std::string>(std::move(s));
  blocks_.emplace(hash_id, piece);
  return piece;
}

std::string PromptBuilder::block_prefix(std::int64_t hash_id, std::int64_t n) const {
  std::string s;
  if (text_) {
    Rng rng(mix_seed(trace_seed_, static_cast<std::uint64_t>(hash_id), 0xB10C));
    return text_->block(rng, static_cast<int>(n));  // the same words the full block starts with
  }
  const auto toks = block_tokens(hash_id);
  for (std::int64_t i = 0; i < n; ++i) {
    if (i) s += ',';
    s += std::to_string(toks[static_cast<std::size_t>(i)]);
  }
  return s;
}

std::string PromptBuilder::tail(TurnRef where, std::int64_t start, std::int64_t n) const {
  Rng rng(mix_seed(trace_seed_, (static_cast<std::uint64_t>(where.stream) << 32) | static_cast<std::uint32_t>(where.turn),
                   0x7A11 + static_cast<std::uint64_t>(start)));
  if (text_) return text_->block(rng, static_cast<int>(n));
  std::string s;
  for (std::int64_t i = 0; i < n; ++i) {
    if (i) s += ',';
    s += std::to_string(ids_.min + static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(ids_.span))));
  }
  return s;
}

void PromptBuilder::append_token_ids(const TraceCall& call, TurnRef where, std::vector<std::int32_t>& out) {
  const std::int64_t bs = trace_.block_size;
  const auto blocks = static_cast<std::int64_t>(call.hash_ids.size());
  const std::int64_t full = std::min(blocks, call.in / bs);
  const std::int64_t rest = call.in - full * bs;
  auto ids_of = [&](std::int64_t hash_id) -> const std::vector<std::int32_t>& {
    auto it = block_ids_.find(hash_id);
    if (it == block_ids_.end()) it = block_ids_.emplace(hash_id, block_tokens(hash_id)).first;
    return it->second;
  };
  out.reserve(out.size() + static_cast<std::size_t>(call.in));
  for (std::int64_t i = 0; i < full; ++i) {
    const auto& b = ids_of(call.hash_ids[static_cast<std::size_t>(i)]);
    out.insert(out.end(), b.begin(), b.end());
  }
  if (rest <= 0) return;
  std::int64_t from_block = 0;
  if (full < blocks) {
    from_block = std::min(rest, bs);
    const auto& b = ids_of(call.hash_ids[static_cast<std::size_t>(full)]);
    out.insert(out.end(), b.begin(), b.begin() + from_block);
  }
  // The tail: the same draws tail() writes as text.
  const std::int64_t start = full * bs + from_block;
  Rng rng(mix_seed(trace_seed_, (static_cast<std::uint64_t>(where.stream) << 32) | static_cast<std::uint32_t>(where.turn),
                   0x7A11 + static_cast<std::uint64_t>(start)));
  for (std::int64_t i = 0; i < rest - from_block; ++i)
    out.push_back(ids_.min + static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(ids_.span))));
}

std::size_t PromptBuilder::piece_count(const TraceCall& call, std::int64_t bs) {
  const std::int64_t full = std::min(static_cast<std::int64_t>(call.hash_ids.size()), call.in / bs);
  return static_cast<std::size_t>(full + (call.in - full * bs > 0 ? 1 : 0));
}

PromptPieces PromptBuilder::build(const TraceCall& call, TurnRef where) {
  PromptPieces p;
  p.token_ids = !text_;
  p.tokens = call.in;
  const std::int64_t bs = trace_.block_size;
  const auto blocks = static_cast<std::int64_t>(call.hash_ids.size());
  const std::int64_t full = std::min(blocks, call.in / bs);
  const std::int64_t rest = call.in - full * bs;  // tokens after the full blocks
  p.pieces.reserve(static_cast<std::size_t>(full) + 1);
  for (std::int64_t i = 0; i < full; ++i) p.pieces.push_back(block_piece(call.hash_ids[static_cast<std::size_t>(i)]));
  if (rest > 0) {
    std::string last;
    if (full < blocks) {
      // The recorded block is only partly in this prompt: its first tokens.
      const std::int64_t from_block = std::min(rest, bs);
      last = block_prefix(call.hash_ids[static_cast<std::size_t>(full)], from_block);
      if (rest > from_block) {
        if (!text_) last += ',';
        last += tail(where, full * bs + from_block, rest - from_block);
      }
    } else {
      last = tail(where, full * bs, rest);
    }
    p.pieces.push_back(std::make_shared<const std::string>(std::move(last)));
  } else if (!text_ && !p.pieces.empty()) {
    // No tail: the last full block goes out without its trailing comma.
    const std::string& b = *p.pieces.back();
    p.pieces.back() = std::make_shared<const std::string>(b.substr(0, b.size() - 1));
  }
  return p;
}

}  // namespace agentperf::trace
