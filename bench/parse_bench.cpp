// Per-event cost of the streaming hot path: SSE framing alone, and SSE +
// OpenAI chunk JSON parsing as the client does it for every event.
#include <benchmark/benchmark.h>

#include "common/record.h"
#include "net/openai_response.h"
#include "net/sse_parser.h"
#include "testserver/openai_scripts.h"

namespace {
std::string make_stream(int events) {
  agentperf::testserver::StreamScript s;
  std::string out;
  for (int i = 0; i < events; ++i) out += agentperf::testserver::sse_chunk_event(s, i, false);
  return out;
}

void BM_SseFraming(benchmark::State& state) {
  const std::string stream = make_stream(1000);
  for (auto _ : state) {
    agentperf::net::SseParser p;
    std::size_t n = 0;
    p.feed(stream, [&](const agentperf::net::SseEvent& e) { n += e.data.size(); });
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(state.iterations() * 1000);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(stream.size()));
}
BENCHMARK(BM_SseFraming);

void BM_SseAndOpenAIParse(benchmark::State& state) {
  const std::string stream = make_stream(1000);
  for (auto _ : state) {
    agentperf::RequestRecord rec;
    rec.content_ns.reserve(1000);
    agentperf::net::OpenAIResponseParser oai(rec);
    agentperf::net::SseParser p;
    p.feed(stream, [&](const agentperf::net::SseEvent& e) { oai.on_event(e); });
    benchmark::DoNotOptimize(rec.content_events);
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}
BENCHMARK(BM_SseAndOpenAIParse);
}  // namespace
