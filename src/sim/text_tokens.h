// Token ids for prompts the simulator receives: token-id arrays are used as
// they are; text is split on whitespace and each word hashed to an id, a
// stand-in tokenizer that keeps shared text prefixes as shared token
// prefixes (about one token per word, like the client's synthetic text).
#pragma once
#include <string_view>
#include <vector>

#include "sim/radix_cache.h"

namespace agentperf::sim {

std::vector<Token> pseudo_tokenize(std::string_view text);
// Parses "1,2,3" (the serialized form PromptSynth builds). Throws on garbage.
void append_token_ids(std::string_view csv, std::vector<Token>& out);

}  // namespace agentperf::sim
