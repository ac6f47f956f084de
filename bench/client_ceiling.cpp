// agentperf_bench_client: the load generator's own ceiling.
//
// A local server streams as fast as it can (every response written at once)
// from a separate process, so the client's CPU time is measured alone. Four
// scenarios, one client worker thread each:
//   requests  short streams (8 events) at high concurrency: streamed requests/s
//   records   the same, each record streamed to a JSONL file as profile does
//   events    long streams (4096 events): SSE events/s per client core
//   stamps    paced streams (1 ms apart, server in-process recording the
//             moment it wrote each event): client stamp - server write time
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "bench_support.h"
#include "common/clock.h"
#include "load/load_runner.h"
#include "metrics/record_stream.h"
#include "metrics/stats.h"
#include "testserver/openai_scripts.h"
#include "testserver/scripted_server.h"

using namespace agentperf;
using namespace std::chrono_literals;

namespace {

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct Throughput {
  double wall_s = 0, cpu_s = 0;
  std::int64_t requests = 0, errors = 0, events = 0;
};

// With `records_to`, every record is streamed to that file as the run goes,
// as `profile` does (metrics/record_stream.h): the writer thread's CPU then
// counts in the client's.
Throughput run_fast(const std::string& url, int concurrency, int osl, double seconds,
                    const std::filesystem::path& records_to = {}) {
  auto cfg = bench::closed_loop(url, concurrency, osl, seconds);
  LoadRunner runner(cfg, "bench");
  std::optional<RecordStreamWriter> writer;
  if (!records_to.empty()) {
    writer.emplace(records_to);
    runner.set_record_sink(&*writer);
  }
  const double cpu0 = cpu_seconds();
  const auto t0 = monotonic_ns();
  auto result = runner.run();
  if (writer) writer->close();
  Throughput t;
  t.wall_s = static_cast<double>(monotonic_ns() - t0) / 1e9;
  t.cpu_s = cpu_seconds() - cpu0;
  for (const auto& r : result.records) {
    if (!r.ok()) {
      ++t.errors;
      continue;
    }
    ++t.requests;
    t.events += r.content_events;
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  std::string json_path;
  bool requests_only = false;  // --requests-only: the first scenario alone (for profiling)
  int spin_us = LoadConfig{}.poll_spin_us;  // --poll-spin-us: the first stamps run's window
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--requests-only")) requests_only = true;
    else if (!std::strcmp(argv[i], "--poll-spin-us") && i + 1 < argc) spin_us = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--seconds S] [--json FILE] [--requests-only] [--poll-spin-us US]\n", argv[0]);
      return 2;
    }
  }
  bench::Child child = bench::start_instant_backend();
  const std::string url = "http://127.0.0.1:" + std::to_string(child.port);

  auto req = run_fast(url, 64, 8, seconds);
  if (requests_only) {
    child.stop();
    std::printf("streamed requests/s %.0f (%.0f per client CPU-second; %lld requests, %lld errors)\n",
                req.requests / req.wall_s, req.requests / std::max(1e-9, req.cpu_s),
                static_cast<long long>(req.requests), static_cast<long long>(req.errors));
    return req.errors == 0 ? 0 : 1;
  }
  const auto records_file = std::filesystem::temp_directory_path() /
                            ("agentperf_bench_client_" + std::to_string(::getpid()) + ".jsonl");
  auto rec = run_fast(url, 64, 8, seconds, records_file);
  std::filesystem::remove(records_file);
  auto ev = run_fast(url, 8, 4096, seconds);
  child.stop();

  // Timestamp error: the server runs in-process so its write stamps and the
  // client's event stamps share one monotonic clock.
  testserver::ServerOptions sopts;
  sopts.record_write_times = true;
  testserver::ScriptedServer paced(testserver::paced_openai_handler(1ms, 1ms), sopts);
  paced.start();
  // One stamps run: the stamp errors, and the CPU of the whole process (the
  // paced server included) per wall second: what spinning costs.
  struct Stamps {
    Summary error_us;
    double cores = 0;
  };
  auto stamp_errors = [&](bool busy_poll, int spin_us) {
    auto cfg = bench::closed_loop(paced.url(), 8, 200, std::min(seconds, 3.0));
    cfg.busy_poll = busy_poll;
    cfg.poll_spin_us = spin_us;
    LoadRunner runner(cfg, "bench");
    const double cpu0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    auto result = runner.run();
    const double cores =
        (cpu_seconds() - cpu0) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<double> err_us;
    for (const auto& r : result.records) {
      if (!r.ok()) continue;
      auto writes = paced.write_times(r.x_request_id);
      for (std::size_t i = 0; i < r.content_ns.size() && i < writes.size(); ++i)
        err_us.push_back(static_cast<double>(r.content_ns[i] - writes[i]) / 1e3);
    }
    return Stamps{summarize(err_us), cores};
  };
  const Stamps stamp = stamp_errors(false, spin_us);
  const Stamps stamp_sleep = stamp_errors(false, 0);
  const Stamps stamp_busy = stamp_errors(true, 0);
  paced.stop();

  const double req_per_s = req.requests / req.wall_s;
  const double req_per_core = req.requests / std::max(1e-9, req.cpu_s);
  const double ev_per_s = ev.events / ev.wall_s;
  const double ev_per_core = ev.events / std::max(1e-9, ev.cpu_s);
  std::printf("agentperf client ceiling (1 client worker, server in a separate process)\n");
  std::printf("  streamed requests/s      %10.0f  (%.0f per client CPU-second; %lld requests, %lld errors, "
              "8 events each)\n",
              req_per_s, req_per_core, static_cast<long long>(req.requests), static_cast<long long>(req.errors));
  std::printf("  + records to disk        %10.0f  (%.0f per client CPU-second, writer thread included; as `profile` "
              "runs)\n",
              rec.requests / rec.wall_s, rec.requests / std::max(1e-9, rec.cpu_s));
  std::printf("  SSE events/s             %10.0f  (%.0f per client CPU-second; %lld events, %lld errors)\n", ev_per_s,
              ev_per_core, static_cast<long long>(ev.events), static_cast<long long>(ev.errors));
  auto print_stamps = [](const char* label, const Stamps& s, const std::string& mode) {
    std::printf("%s p50 %.1f  p99 %.1f  max %.1f  over %zu paced events; %.2f cores%s\n", label,
                s.error_us.percentile(50), s.error_us.percentile(99), s.error_us.max, s.error_us.count, s.cores,
                mode.c_str());
  };
  print_stamps("  timestamp error (us)    ", stamp, " (--poll-spin-us " + std::to_string(spin_us) + ")");
  print_stamps("   --poll-spin-us 0       ", stamp_sleep, "");
  print_stamps("   with --busy-poll       ", stamp_busy, "");
  auto stamps_json = [](const Stamps& s) {
    return nlohmann::json{{"p50", s.error_us.percentile(50)}, {"p99", s.error_us.percentile(99)}, {"max", s.error_us.max}};
  };
  if (!json_path.empty()) {
    nlohmann::json j = {{"streamed_requests_per_s", req_per_s},
                        {"streamed_requests_per_client_cpu_s", req_per_core},
                        {"streamed_requests_per_s_with_records", rec.requests / rec.wall_s},
                        {"sse_events_per_s", ev_per_s},
                        {"sse_events_per_client_cpu_s", ev_per_core},
                        {"timestamp_error_us", stamps_json(stamp)},
                        {"timestamp_error_us_sleeping", stamps_json(stamp_sleep)},
                        {"timestamp_error_us_busy_poll", stamps_json(stamp_busy)},
                        {"errors", req.errors + rec.errors + ev.errors}};
    std::ofstream(json_path) << j.dump(2) << "\n";
  }
  return (req.errors + rec.errors + ev.errors) == 0 ? 0 : 1;
}
