#include "load/prompt_synth.h"

#include "load/distribution.h"

#include <algorithm>
#include <array>

namespace agentperf {
namespace {
// Short, common words: each is a single token in the BPE vocabularies of the
// usual model families when preceded by a space.
constexpr std::array<const char*, 64> kWords = {
    "the", "of", "and", "to", "in", "is", "for", "on", "that", "with", "as", "it", "by", "this", "be", "are",
    "from", "at", "or", "an", "was", "we", "can", "all", "your", "has", "more", "will", "one", "if", "new", "not",
    "but", "what", "about", "time", "which", "their", "there", "so", "up", "out", "also", "when", "other", "any",
    "some", "then", "them", "these", "see", "only", "use", "code", "file", "test", "run", "data", "list", "value",
    "name", "line", "type", "call"};
}  // namespace

PromptSynth::PromptSynth(const ProfileConfig& cfg, std::shared_ptr<const tokenizer::ExactTextBuilder> exact)
    : cfg_(cfg), token_ids_(cfg.uses_token_ids()), exact_(token_ids_ ? nullptr : std::move(exact)) {
  for (int g = 0; g < cfg.num_prefix_groups; ++g) {
    Rng rng(mix_seed(cfg.seed, 0x9E11F, static_cast<std::uint64_t>(g)));
    prefixes_.push_back(std::make_shared<const std::string>(tokens_text(rng, cfg.prefix_length)));
  }
}

std::string PromptSynth::tokens_text(Rng& rng, int count) const {
  std::string out;
  if (count <= 0) return out;
  if (exact_) return exact_->block(rng, count);
  out.reserve(static_cast<std::size_t>(count) * (token_ids_ ? 6 : 5));
  const auto span = static_cast<std::uint64_t>(cfg_.token_id_max - cfg_.token_id_min);
  for (int i = 0; i < count; ++i) {
    if (i) out += token_ids_ ? ',' : ' ';
    if (token_ids_) out += std::to_string(cfg_.token_id_min + static_cast<int>(rng.below(span)));
    else out += kWords[rng.below(kWords.size())];
  }
  return out;
}

SynthPrompt PromptSynth::make(std::uint64_t request_index) const {
  Rng rng(mix_seed(cfg_.seed, 0x5EED, request_index));
  SynthPrompt p;
  p.exact = token_ids_ || exact_ != nullptr;
  p.osl = sample_length(cfg_.osl, rng);
  int isl = sample_length(cfg_.isl, rng);
  int unique = isl;
  if (!prefixes_.empty()) {
    // The shared prefix is part of the requested ISL; keep at least one
    // unique token so requests of one group still differ.
    isl = std::max(isl, cfg_.prefix_length + 1);
    unique = isl - cfg_.prefix_length;
    p.prefix_group = static_cast<int>(request_index % prefixes_.size());
    p.prefix = prefixes_[static_cast<std::size_t>(p.prefix_group)];
  }
  p.isl = isl;
  p.suffix = std::make_shared<const std::string>(tokens_text(rng, unique));
  return p;
}

}  // namespace agentperf
