// Scrapes a server's Prometheus endpoint at a fixed interval on its own
// thread while a benchmark runs, and writes every sample as JSONL:
// {"t_ns": wall clock, "metrics": {name: value summed over label sets}}.
// AIPerf scrapes every 333 ms; the default here is 1 s.
// stop() takes one last scrape, then writes the timeline and, beside it,
// AIPerf's server_metrics_export.json and server_metrics_export.csv over the
// export window (metrics/server_metrics_export.h; InferenceX reads the JSON's
// counters for the observed prompt-cache hit).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace agentperf {

class MetricsScraper {
 public:
  // url: the full metrics URL (http://host:port/metrics).
  MetricsScraper(std::string url, double interval_s, std::string output_path);
  ~MetricsScraper();
  // Called on the scraper's thread with every sample (metric -> value summed
  // over label sets); set before start().
  void on_sample(std::function<void(const std::map<std::string, double>&)> f);
  void start();
  // The profiling window of the exports, wall-clock ns (0: open); set it
  // before stop(). Default: every scrape.
  void set_export_window(std::int64_t start_wall_ns, std::int64_t end_wall_ns);
  void set_benchmark_id(std::string id);
  // Seconds per time slice in server_metrics_export.json (0: none).
  void set_slice_duration(double seconds);
  // Stops after a final scrape, writes the files (whole, renamed into
  // place); returns samples taken.
  std::size_t stop();
  std::size_t failures() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace agentperf
