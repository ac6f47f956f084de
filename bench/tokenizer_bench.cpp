// Encode throughput of the native BPE on mixed text (prose, code, CJK,
// emoji, numbers, whitespace runs). Usage: agentperf_bench_tokenizer
// [google-benchmark flags]; the tokenizer.json path comes from
// AGENTPERF_TOKENIZER_JSON or the setup script's default location.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "common/rng.h"
#include "tokenizer/bpe_tokenizer.h"

namespace {
using agentperf::tokenizer::BpeTokenizer;

const BpeTokenizer& tokenizer() {
  static const BpeTokenizer t = [] {
    const char* env = std::getenv("AGENTPERF_TOKENIZER_JSON");
    return BpeTokenizer::from_file(env ? env : AGENTPERF_DEFAULT_TOKENIZER_JSON);
  }();
  return t;
}

// About 4 MB of mixed text; `distinct` adds random letter strings so the
// per-piece cache sees mostly new pieces (the worst case).
std::string corpus(bool distinct) {
  const char* parts[] = {
      "The scheduler admits requests while the KV cache has room, then decodes the running batch. ",
      "def step(self, batch):\n    for req in batch.reqs:\n        req.output_ids.append(self.sample(req))\n",
      "    if (kv_available() < need) { evict(need - kv_available()); }\n",
      "分词器的速度很重要，因为每个请求都要编码。",
      "Emoji 🙂🎉 and numbers 3.14159, 2026-12-02, 0x7fff, 1,000,000.\n",
      "\t\t   \n\n",
      "{\"role\": \"assistant\", \"content\": \"I'll read the file and fix the test.\"}\n",
  };
  std::string out;
  agentperf::Rng rng(7);
  while (out.size() < (4u << 20)) {
    out += parts[rng.below(7)];
    if (distinct) {
      out += ' ';
      for (int i = 0, n = 3 + static_cast<int>(rng.below(9)); i < n; ++i) out += static_cast<char>('a' + rng.below(26));
    }
  }
  return out;
}

void BM_EncodeMixedText(benchmark::State& state) {
  const auto& tok = tokenizer();
  const std::string text = corpus(state.range(0) != 0);
  std::size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tok.encode(text);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}
BENCHMARK(BM_EncodeMixedText)->Arg(0)->Arg(1)->ArgNames({"distinct_words"})->Unit(benchmark::kMillisecond);
}  // namespace
