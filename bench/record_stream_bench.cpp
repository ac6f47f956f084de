// What streaming records to disk costs the worker that finished a request
// (RecordStreamWriter::on_record: a copy into a queue) and how fast the
// writer thread turns them into profile_export.jsonl lines, for a typical
// record (150 output tokens streamed, usage, ids).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <unistd.h>

#include "metrics/record_json.h"
#include "metrics/record_stream.h"

namespace {
agentperf::RequestRecord typical_record(std::uint64_t i) {
  agentperf::RequestRecord r;
  r.request_index = i;
  r.x_request_id = r.x_correlation_id = "f4a4dff1-3b03-453e-af23-8856ced1ff66";
  r.conversation_id = std::to_string(i);
  r.streamed = true;
  r.start_ns = 1'000'000'000 + static_cast<std::int64_t>(i) * 1000;
  r.start_wall_ns = 1'700'000'000'000'000'000;
  r.credit_issued_ns = r.scheduled_ns = r.start_ns;
  r.ack_ns = r.start_ns + 100'000;
  for (int k = 0; k < 150; ++k) r.content_ns.push_back(r.start_ns + 20'000'000 + k * 5'000'000);
  r.end_ns = r.content_ns.back() + 100'000;
  r.content_events = 150;
  r.http_status = 200;
  r.requested_isl = 550;
  r.requested_osl = 150;
  r.usage_prompt_tokens = 550;
  r.usage_completion_tokens = 150;
  return r;
}

std::filesystem::path bench_file() {
  return std::filesystem::temp_directory_path() / ("agentperf_bench_records_" + std::to_string(::getpid()) + ".jsonl");
}

// The worker's side: one on_record call.
void BM_OnRecord(benchmark::State& state) {
  const auto rec = typical_record(1);
  agentperf::RecordStreamWriter w(bench_file());
  for (auto _ : state) w.on_record(rec);
  w.close();
  state.SetItemsProcessed(state.iterations());
  std::filesystem::remove(bench_file());
}
BENCHMARK(BM_OnRecord);

// The writer thread's side: the JSON line of one record.
void BM_RecordToJsonLine(benchmark::State& state) {
  const auto rec = typical_record(1);
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string line;
    agentperf::append_record_json_line(line, rec);
    bytes += line.size() + 1;
    benchmark::DoNotOptimize(line);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_RecordToJsonLine);

// End to end: 150k records pushed, then close() waits for the last line.
void BM_StreamAndClose150k(benchmark::State& state) {
  const auto rec = typical_record(1);
  for (auto _ : state) {
    agentperf::RecordStreamWriter w(bench_file());
    for (int i = 0; i < 150'000; ++i) w.on_record(rec);
    w.close();
  }
  state.SetItemsProcessed(state.iterations() * 150'000);
  std::filesystem::remove(bench_file());
}
BENCHMARK(BM_StreamAndClose150k)->Unit(benchmark::kMillisecond)->Iterations(1);
}  // namespace
