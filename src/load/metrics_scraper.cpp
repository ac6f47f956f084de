#include "load/metrics_scraper.h"

#include <atomic>
#include <boost/asio.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/asio_aliases.h"
#include "common/atomic_file.h"
#include "common/clock.h"
#include "common/error.h"
#include "metrics/prometheus_text.h"
#include "metrics/server_metrics_export.h"
#include "net/http_client.h"

namespace agentperf {
using namespace aio;

struct MetricsScraper::Impl {
  std::string url, output;
  double interval_s;
  asio::io_context io{1};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;
  std::atomic<bool> stop{false};
  std::vector<std::string> lines;
  std::size_t failures = 0;
  std::function<void(const std::map<std::string, double>&)> callback;
  std::optional<ServerMetricsLog> log;
  std::optional<asio::steady_timer> timer;
  std::int64_t window_start = 0, window_end = 0;
  std::int64_t slice_ns = 0;
  std::string benchmark_id;

  asio::awaitable<void> loop() {
    const auto u = net::parse_url(url);
    net::ClientOptions o;
    o.request_timeout = std::chrono::milliseconds(5000);
    o.connect_attempts = 1;
    net::HttpClient client(io, u, o);
    timer.emplace(io);
    auto next = std::chrono::steady_clock::now();
    // One more scrape after stop() (AIPerf's final scrape), so the counters
    // cover the last requests of the window.
    for (;;) {
      const bool last = stop;
      net::HttpRequest req;
      req.method = "GET";
      req.path = u.path;
      req.headers.emplace_back("Accept", "text/plain");
      auto res = co_await client.fetch(req);
      if (res.error || res.status != 200) {
        ++failures;
        log->add_failure();
      } else {
        const std::int64_t now = wall_ns();
        log->add_scrape(now, res.body);
        const auto sums = sum_by_name(parse_prometheus_text(res.body));
        nlohmann::json j = {{"t_ns", now}, {"metrics", sums}};
        lines.push_back(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        if (callback) callback(sums);
      }
      if (last) break;
      if (stop) continue;  // stop() came during the fetch: the final scrape now
      next += std::chrono::nanoseconds(static_cast<std::int64_t>(interval_s * 1e9));
      timer->expires_at(next);
      co_await timer->async_wait(nothrow);
    }
  }
};

MetricsScraper::MetricsScraper(std::string url, double interval_s, std::string output_path)
    : impl_(std::make_unique<Impl>()) {
  impl_->url = std::move(url);
  impl_->interval_s = interval_s;
  impl_->output = std::move(output_path);
  impl_->log.emplace(impl_->url);
  net::parse_url(impl_->url);  // fail now, with the reason, on a bad URL
}

MetricsScraper::~MetricsScraper() { stop(); }

void MetricsScraper::on_sample(std::function<void(const std::map<std::string, double>&)> f) {
  impl_->callback = std::move(f);
}

void MetricsScraper::start() {
  auto& d = *impl_;
  d.work.emplace(d.io.get_executor());
  co_spawn(d.io, d.loop(), asio::detached);
  d.thread = std::thread([&d] { d.io.run(); });
}

std::size_t MetricsScraper::stop() {
  auto& d = *impl_;
  if (!d.thread.joinable()) return d.lines.size();
  d.stop = true;
  // Wake the loop for its final scrape; it ends by itself after it.
  asio::post(d.io, [&d] {
    if (d.timer) d.timer->cancel();
  });
  d.work.reset();
  d.thread.join();
  write_file_atomically(d.output, [&](std::ostream& out) {
    for (const auto& l : d.lines) out << l << '\n';
  });
  // AIPerf's server_metrics_export.json / .csv beside the timeline.
  const auto dir = std::filesystem::path(d.output).parent_path();
  const auto j = d.log->export_json(d.window_start, d.window_end, d.benchmark_id, d.slice_ns);
  write_file_atomically(dir / "server_metrics_export.json", [&](std::ostream& out) {
    out << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  });
  const std::string csv = d.log->export_csv(d.window_start, d.window_end, d.benchmark_id, d.slice_ns);
  write_file_atomically(dir / "server_metrics_export.csv", [&](std::ostream& out) { out << csv; });
  return d.lines.size();
}

void MetricsScraper::set_export_window(std::int64_t start_wall_ns, std::int64_t end_wall_ns) {
  impl_->window_start = start_wall_ns;
  impl_->window_end = end_wall_ns;
}

void MetricsScraper::set_benchmark_id(std::string id) { impl_->benchmark_id = std::move(id); }

void MetricsScraper::set_slice_duration(double seconds) {
  impl_->slice_ns = seconds > 0 ? static_cast<std::int64_t>(seconds * 1e9) : 0;
}

std::size_t MetricsScraper::failures() const { return impl_->failures; }

}  // namespace agentperf
