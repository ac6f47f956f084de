// GPU telemetry for the report: samples of power, utilisation and memory per
// GPU over time, read from
//   - a CSV: `nvidia-smi --query-gpu=timestamp,index,power.draw,utilization.gpu,memory.used
//     --format=csv -lms 500` (header `timestamp, index, power.draw [W], ...`,
//     values with or without units, `[N/A]` for a missing value), or any CSV
//     with a timestamp column and one of the metric columns below;
//   - AIPerf's DCGM export, gpu_telemetry_export.jsonl (one TelemetryRecord
//     per line: timestamp_ns, gpu_index, gpu_uuid, telemetry_data with
//     gpu_power_usage W, gpu_utilization %, gpu_memory_used GB).
// Unknown columns and fields are ignored; a row that cannot be read is a
// UserError naming the file, line and column.
//
// From the samples: the mean power over a window (the run's profiling
// window), summed over GPUs, for tokens per joule; and per-GPU series on the
// run's time axis for the page.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace agentperf::report {

struct GpuSample {
  std::int64_t t_ns = 0;  // wall clock, ns since the epoch
  std::optional<double> power_w, util_pct, mem_gib;
};

struct GpuSeries {
  std::string key;    // what tells GPUs apart in the file (host + index, UUID)
  std::string label;  // "GPU 0", "node1 GPU 0"
  std::vector<GpuSample> samples;  // in time order
};

struct GpuTelemetry {
  std::string file;  // where it came from
  std::vector<GpuSeries> gpus;  // in the order first seen
};

// By extension: .jsonl is AIPerf's export, anything else a CSV.
GpuTelemetry read_gpu_telemetry(const std::string& path);
GpuTelemetry read_gpu_metrics_csv(const std::string& path);
GpuTelemetry read_aiperf_gpu_telemetry(const std::string& path);

// nvidia-smi's "2026/12/03 19:44:56.286" (local time: TZ applies), ISO 8601
// ("2026-12-03T19:44:56.286Z", "+01:00", or no zone: local), or a number of
// seconds (ms, us, ns by magnitude) since the epoch. nullopt: not a time.
std::optional<std::int64_t> parse_timestamp_ns(const std::string& text);

struct MeanPower {
  double total_w = 0;       // sum over GPUs of each GPU's mean power in the window
  int gpus = 0;             // GPUs summed
  std::size_t samples = 0;  // samples averaged, all GPUs
};
// The mean power over [from_ns, to_ns]: each GPU's mean of its samples in the
// window, summed. nullopt, with `why` set, when a GPU with power samples has
// none in the window (sample faster than the run is long) or none has power.
std::optional<MeanPower> mean_power(const GpuTelemetry& t, std::int64_t from_ns, std::int64_t to_ns, std::string* why);

// The page's series: per GPU, its samples within [t0, t0 + duration] (1 s
// either side), seconds from t0, at most `max_points` each.
nlohmann::json telemetry_series(const GpuTelemetry& t, std::int64_t t0_ns, double duration_s, std::size_t max_points = 1500);

// Tokens per joule: tokens per second (all GPUs) over watts (all GPUs).
inline double tokens_per_joule(double tokens_per_s, double watts) { return watts > 0 ? tokens_per_s / watts : 0; }
// Dollars per million tokens: a GPU-hour serves tokens/s/GPU x 3600 tokens.
inline double cost_per_million_tokens(double price_per_gpu_hour, double tokens_per_s_per_gpu) {
  return tokens_per_s_per_gpu > 0 ? price_per_gpu_hour / (tokens_per_s_per_gpu * 3600) * 1e6 : 0;
}

}  // namespace agentperf::report
