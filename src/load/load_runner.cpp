#include "load/load_runner.h"

#include <algorithm>
#include <boost/asio.hpp>
#include <csignal>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <mutex>
#include <thread>
#include <unistd.h>
#include <unordered_set>

#include "common/asio_aliases.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/run_control.h"
#include "load/arrival_schedule.h"
#include "load/prompt_synth.h"
#include "load/request_builder.h"
#include "metrics/progress.h"
#include "net/http_client.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/exact_text.h"

namespace agentperf {

using namespace aio;

namespace {

std::chrono::steady_clock::time_point to_tp(std::int64_t ns) {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
}

std::string fmt_seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g s", s);
  return b;
}

// Seconds to nanoseconds, saturating at ~31 years: validate() bounds every
// duration (profile_config.h `limits`), and a deadline computed from one
// must never wrap into the past (--duration 1e10 once gave a deadline
// before the start: 0 requests, exit 0).
std::int64_t seconds_to_ns(double s) {
  constexpr double cap_ns = 1e18;
  if (!(s > 0)) return 0;
  return static_cast<std::int64_t>(std::min(s * 1e9, cap_ns));
}

// One phase's shared stop conditions; tickets number the requests.
struct PhaseState {
  Phase phase = Phase::profiling;
  std::int64_t index_base = 0;  // request_index of ticket 0 (warmup comes first)
  std::optional<std::int64_t> count;
  std::int64_t start_ns = 0;
  std::int64_t send_deadline_ns = std::numeric_limits<std::int64_t>::max();
  std::int64_t grace_deadline_ns = std::numeric_limits<std::int64_t>::max();
  double grace_s = 0;
  std::atomic<std::int64_t> tickets{0};

  std::optional<std::int64_t> claim() {
    const std::int64_t t = tickets.fetch_add(1, std::memory_order_relaxed);
    if (count && t >= *count) return std::nullopt;
    return t;
  }
  // Every ticket of a counted phase is out: an open-loop dispatcher stops
  // here instead of waiting one more arrival gap to find out.
  bool exhausted() const { return count && tickets.load(std::memory_order_relaxed) >= *count; }
};

// A 200 answer with no output although the request asked for max_tokens > 0
// with ignore_eos is not an error the server admitted, but the numbers of
// such a request mean nothing: it is flagged in the record and the summary.
bool asks_ignore_eos(const ClientConfig& cfg) {
  for (const auto& [k, v] : cfg.extra_inputs)
    if (k == "ignore_eos" && v == "true") return true;
  return false;
}

void flag_suspicious(RequestRecord& rec, bool ignore_eos) {
  if (!ignore_eos || !rec.ok() || rec.requested_osl <= 0) return;
  const std::int64_t out = rec.usage_completion_tokens.value_or(
      rec.client_output_tokens.value_or(rec.content_events + rec.reasoning_events));
  if (out == 0) rec.warning = "zero_output_tokens";
}

// Runs `io` until it runs out of work: polling (no sleep) while handlers ran
// within the last `spin_ns`, then sleeping in epoll_wait until one is ready.
// A streaming run's events come in bursts (one per token of each of many
// streams); inside a burst the next read is usually ready within the window,
// so it is taken, and stamped, without the kernel waking a sleeping thread
// (tens to hundreds of microseconds on a VM). After a burst the worker spins
// at most `spin_ns` before it sleeps, which bounds the cost to a window per
// burst: an idle client does not hold a core.
void run_spinning_then_sleeping(asio::io_context& io, std::int64_t spin_ns) {
  std::int64_t active_ns = monotonic_ns();
  while (!io.stopped()) {
    if (io.poll() > 0) {
      active_ns = monotonic_ns();
      continue;
    }
    if (io.stopped()) break;
    if (monotonic_ns() - active_ns < spin_ns) continue;
    if (io.run_one() == 0) break;
    active_ns = monotonic_ns();
  }
}

}  // namespace

struct LoadRunner::Impl {
  struct Worker {
    int id;
    asio::io_context io{1};
    net::HttpClient client;
    std::vector<RequestRecord> records;
    std::unordered_set<net::InFlight*> in_flight;
    asio::steady_timer deadline_timer{io};
    asio::steady_timer arrival_timer{io};
    asio::steady_timer slot_timer{io};
    int active = 0;
    bool sending_done = false;
    bool grace_expired = false;
    int users = 0;      // closed loop share of --concurrency
    int slot_cap = 0;   // open loop share of --concurrency (0 = none)

    Worker(int i, const net::Url& url, const net::ClientOptions& o) : id(i), client(io, url, o) {}
  };

  const ProfileConfig& cfg;
  std::string model;
  net::Url url;
  std::shared_ptr<const tokenizer::BpeTokenizer> tok;
  PromptSynth synth;
  RequestBuilder builder;
  LiveCounters counters;
  std::vector<std::unique_ptr<Worker>> workers;
  std::atomic<bool> abort{false};
  std::string abort_reason;
  RecordSink* sink = nullptr;
  const bool ignore_eos = asks_ignore_eos(cfg);  // decided once, not per request
  // Per-run salt of X-Request-ID, from the benchmark id: prompts stay
  // seeded, ids never repeat across runs (a router or a server adopting
  // X-Request-ID would otherwise see the previous run's ids again).
  std::uint64_t run_salt = 0;
  // A worker thread that threw (out of memory, a bug): its cause, reported
  // as the run's failure instead of a silent "0 ok, 0 errors".
  std::mutex worker_failure_mu;
  std::string worker_failure;

  Impl(const ProfileConfig& c, std::string m, const std::string& benchmark_id)
      : cfg(c), model(std::move(m)), url(net::parse_url(c.url)), tok(load_tokenizer(c)), synth(c, exact_text(tok)),
        builder(c, model, net::join_path(url.path, c.endpoint_path())) {
    run_salt = benchmark_id.empty()
                   ? static_cast<std::uint64_t>(wall_ns()) ^ (static_cast<std::uint64_t>(::getpid()) << 32)
                   : seed_of(benchmark_id);
    int n = cfg.workers;
    if (cfg.concurrency && !cfg.request_rate) n = std::min(n, *cfg.concurrency);
    const auto opts = client_options(cfg);
    for (int i = 0; i < n; ++i) workers.push_back(std::make_unique<Worker>(i, url, opts));
    workers[0]->client.resolve();
    for (int i = 1; i < n; ++i) workers[static_cast<std::size_t>(i)]->client.set_endpoints(workers[0]->client.endpoints());
    const int conc = cfg.concurrency.value_or(0);
    for (int i = 0; i < n; ++i) {
      const int share = conc / n + (i < conc % n ? 1 : 0);
      if (cfg.request_rate) workers[static_cast<std::size_t>(i)]->slot_cap = conc > 0 ? std::max(1, share) : 0;
      else workers[static_cast<std::size_t>(i)]->users = share;
    }
  }

  static std::shared_ptr<const tokenizer::BpeTokenizer> load_tokenizer(const ClientConfig& c) {
    if (c.tokenizer_path.empty()) return nullptr;
    return std::make_shared<const tokenizer::BpeTokenizer>(tokenizer::BpeTokenizer::from_file(c.tokenizer_path));
  }
  static std::shared_ptr<const tokenizer::ExactTextBuilder> exact_text(
      const std::shared_ptr<const tokenizer::BpeTokenizer>& t) {
    return t ? std::make_shared<const tokenizer::ExactTextBuilder>(*t) : nullptr;
  }

  // Completion of a worker's coroutine. asio::detached would drop an
  // exception (out of memory building a huge prompt, a bug) and leave the
  // run to end as "0 ok, 0 errors": instead the cause is recorded, the
  // worker stops, and the run ends as failed, naming it.
  std::function<void(std::exception_ptr)> task_guard(Worker& w) {
    return [this, &w](std::exception_ptr e) {
      if (!e) return;
      std::string what = "unknown exception";
      try {
        std::rethrow_exception(e);
      } catch (const std::bad_alloc&) {
        what = "out of memory (std::bad_alloc)";
      } catch (const std::exception& ex) {
        what = ex.what();
      } catch (...) {
      }
      {
        std::lock_guard lk(worker_failure_mu);
        if (worker_failure.empty()) worker_failure = "client worker " + std::to_string(w.id) + " failed: " + what;
      }
      stop_sending(w);
      cancel_in_flight(w, "cancelled: a client worker failed");
      task_done(w);
    };
  }

  void task_done(Worker& w) {
    if (--w.active == 0) {
      // Nothing left to run on this worker for the phase: let io.run() end.
      w.deadline_timer.cancel();
      w.arrival_timer.cancel();
    }
  }

  void stop_sending(Worker& w) {
    w.sending_done = true;
    w.arrival_timer.cancel();
    w.slot_timer.cancel();
  }

  void cancel_in_flight(Worker& w, const std::string& reason) {
    auto copy = w.in_flight;
    for (auto* f : copy) f->cancel(reason);
  }

  asio::awaitable<void> send_one(Worker& w, PhaseState& ps, std::int64_t ticket, std::int64_t scheduled_ns) {
    const std::int64_t index = ps.index_base + ticket;
    RequestRecord rec;
    rec.request_index = static_cast<std::uint64_t>(index);
    rec.phase = ps.phase;
    rec.worker_id = w.id;
    rec.session_num = index;
    rec.conversation_id = std::to_string(index);
    rec.turn_index = 0;
    const auto prompt = synth.make(static_cast<std::uint64_t>(index));
    rec.requested_isl = prompt.isl;
    rec.requested_osl = prompt.osl;
    rec.prompt_exact = prompt.exact;
    rec.x_request_id = make_request_id(mix_seed(run_salt, 0x1D, static_cast<std::uint64_t>(index)),
                                       mix_seed(run_salt, 0x2D, static_cast<std::uint64_t>(index)));
    rec.x_correlation_id = rec.x_request_id;
    const auto req = builder.build(prompt, rec.x_request_id, rec.x_correlation_id);
    rec.credit_issued_ns = monotonic_ns();
    rec.scheduled_ns = scheduled_ns ? scheduled_ns : rec.credit_issued_ns;

    rec.capture_text = tok != nullptr;
    net::InFlight inflight;
    w.in_flight.insert(&inflight);
    // Leaves the set even if something below throws (task_guard then
    // cancels what is in flight: no dangling handle may be left there).
    struct Unregister {
      Worker& w;
      net::InFlight* f;
      ~Unregister() { w.in_flight.erase(f); }
    } unregister{w, &inflight};
    counters.sent.fetch_add(1, std::memory_order_relaxed);
    counters.in_flight.fetch_add(1, std::memory_order_relaxed);
    co_await w.client.send(req, rec, &inflight);
    if (tok && rec.ok() && !rec.usage_completion_tokens)
      rec.client_output_tokens = static_cast<std::int64_t>(tok->count(rec.output_text));
    std::string().swap(rec.output_text);
    flag_suspicious(rec, ignore_eos);
    if (sink) sink->on_record(rec);
    counters.in_flight.fetch_sub(1, std::memory_order_relaxed);
    counters.done.fetch_add(1, std::memory_order_relaxed);
    if (!rec.ok()) counters.errors.fetch_add(1, std::memory_order_relaxed);
    const std::int64_t tokens = rec.usage_completion_tokens.value_or(rec.content_events + rec.reasoning_events);
    counters.output_tokens.fetch_add(tokens, std::memory_order_relaxed);
    w.records.push_back(std::move(rec));
    if (w.slot_cap) w.slot_timer.cancel();  // a slot opened
  }

  asio::awaitable<void> user_loop(Worker& w, PhaseState& ps) {
    while (!w.sending_done && !abort.load(std::memory_order_relaxed)) {
      if (monotonic_ns() >= ps.send_deadline_ns) break;
      auto ticket = ps.claim();
      if (!ticket) break;
      co_await send_one(w, ps, *ticket, 0);
    }
    task_done(w);
  }

  asio::awaitable<void> spawned_request(Worker& w, PhaseState& ps, std::int64_t ticket, std::int64_t scheduled) {
    co_await send_one(w, ps, ticket, scheduled);
    task_done(w);
  }

  asio::awaitable<void> dispatcher(Worker& w, PhaseState& ps) {
    ArrivalSchedule schedule(cfg.arrival, *cfg.request_rate, w.id, static_cast<int>(workers.size()),
                             mix_seed(cfg.seed, static_cast<std::uint64_t>(ps.phase)));
    while (!w.sending_done && !ps.exhausted()) {
      const std::int64_t target = ps.start_ns + schedule.next_offset_ns();
      if (target >= ps.send_deadline_ns) break;
      if (target > monotonic_ns()) {
        w.arrival_timer.expires_at(to_tp(target));
        co_await w.arrival_timer.async_wait(nothrow);
      }
      if (w.sending_done) break;
      auto ticket = ps.claim();
      if (!ticket) break;
      // --concurrency with --request-rate caps requests in flight: a late
      // arrival waits for a slot and its lateness is recorded.
      while (w.slot_cap && static_cast<int>(w.in_flight.size()) >= w.slot_cap && !w.sending_done) {
        w.slot_timer.expires_at(std::chrono::steady_clock::time_point::max());
        co_await w.slot_timer.async_wait(nothrow);
      }
      if (w.sending_done) break;
      ++w.active;
      asio::co_spawn(w.io, spawned_request(w, ps, *ticket, target), task_guard(w));
    }
    task_done(w);
  }

  asio::awaitable<void> deadline_watch(Worker& w, PhaseState& ps) {
    w.deadline_timer.expires_at(to_tp(ps.send_deadline_ns));
    auto [ec] = co_await w.deadline_timer.async_wait(nothrow);
    if (ec || w.active == 0) co_return;
    stop_sending(w);
    w.deadline_timer.expires_at(to_tp(ps.grace_deadline_ns));
    auto [ec2] = co_await w.deadline_timer.async_wait(nothrow);
    if (ec2 || w.active == 0) co_return;
    w.grace_expired = true;
    char reason[128];
    std::snprintf(reason, sizeof reason, "cancelled: the %.3g s grace period after the benchmark duration expired",
                  ps.grace_s);
    cancel_in_flight(w, reason);
  }

  void start_phase_on(Worker& w, PhaseState& ps) {
    w.sending_done = false;
    w.grace_expired = false;
    w.active = 0;
    if (cfg.request_rate) {
      ++w.active;
      asio::co_spawn(w.io, dispatcher(w, ps), task_guard(w));
    } else {
      for (int u = 0; u < w.users; ++u) {
        ++w.active;
        asio::co_spawn(w.io, user_loop(w, ps), task_guard(w));
      }
    }
    if (w.active == 0) return;
    if (ps.send_deadline_ns != std::numeric_limits<std::int64_t>::max())
      asio::co_spawn(w.io, deadline_watch(w, ps), asio::detached);
  }

  // Runs one phase to completion. Returns false if the run was stopped.
  bool run_phase(PhaseState& ps, RunResult& result, ProgressPrinter& progress) {
    counters.phase = ps.phase == Phase::warmup ? 0 : 1;
    counters.sent = 0;
    counters.done = 0;
    counters.errors = 0;
    counters.output_tokens = 0;
    counters.phase_start_ns = ps.start_ns;
    std::atomic<int> finished{0};
    std::vector<std::thread> threads;
    for (auto& wp : workers) {
      Worker& w = *wp;
      threads.emplace_back([this, &w, &ps, &finished] {
        try {
          w.io.restart();
          start_phase_on(w, ps);
          if (cfg.busy_poll) {
            // poll() runs what is ready without blocking and stops the
            // io_context once no work is left, as run() returns then.
            while (!w.io.stopped()) w.io.poll();
          } else if (cfg.poll_spin_us > 0) {
            run_spinning_then_sleeping(w.io, static_cast<std::int64_t>(cfg.poll_spin_us) * 1000);
          } else {
            w.io.run();
          }
        } catch (const std::exception& e) {
          std::lock_guard lk(worker_failure_mu);
          if (worker_failure.empty()) worker_failure = "client worker " + std::to_string(w.id) + " failed: " + e.what();
        } catch (...) {
          std::lock_guard lk(worker_failure_mu);
          if (worker_failure.empty()) worker_failure = "client worker " + std::to_string(w.id) + " failed";
        }
        finished.fetch_add(1);
      });
    }
    bool stopped = false;
    bool signal_seen = false;
    std::int64_t signal_grace_deadline = std::numeric_limits<std::int64_t>::max();
    const auto n = static_cast<int>(workers.size());
    while (finished.load() < n) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      progress.maybe_print(counters, ps.phase, ps.count, ps.start_ns, ps.send_deadline_ns);
      if (stop_requested() && !signal_seen && !abort) {
        // A stop request: no new requests; those in flight get the grace
        // period to finish and are counted, then they are cancelled.
        signal_seen = true;
        stopped = true;
        result.interrupted = true;
        result.stop_signal = stop_signal();
        abort_reason = stop_reason();
        abort = true;
        signal_grace_deadline = monotonic_ns() + seconds_to_ns(cfg.grace_period_s);
        for (auto& wp : workers) {
          Worker* w = wp.get();
          asio::post(w->io, [this, w] { stop_sending(*w); });
        }
        if (!cfg.quiet && counters.in_flight.load() > 0)
          std::fprintf(stderr, "\nagentperf: %s: sending stopped; waiting up to %.3g s for %lld requests in flight "
                               "(a second signal cancels them at once)\n",
                       abort_reason.c_str(), cfg.grace_period_s, static_cast<long long>(counters.in_flight.load()));
      }
      if (signal_seen && signal_grace_deadline != std::numeric_limits<std::int64_t>::max() &&
          (monotonic_ns() >= signal_grace_deadline || cancel_requested())) {
        const char* why = cancel_requested() ? "cancelled: a second signal during the grace period"
                                             : "cancelled: the grace period after the stop request expired";
        signal_grace_deadline = std::numeric_limits<std::int64_t>::max();
        for (auto& wp : workers) {
          Worker* w = wp.get();
          asio::post(w->io, [this, w, why] { cancel_in_flight(*w, why); });
        }
      }
      std::string reason;
      {
        std::lock_guard lk(worker_failure_mu);
        if (!worker_failure.empty() && !abort) reason = worker_failure;
      }
      if (reason.empty() && !abort) {
        const auto done = counters.done.load();
        const auto errors = counters.errors.load();
        if (cfg.failed_request_threshold < 1.0 && done >= 10 &&
            static_cast<double>(errors) / static_cast<double>(done) > cfg.failed_request_threshold) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "error rate %.1f%% (%lld of %lld) exceeded --failed-request-threshold %.2f",
                        100.0 * errors / done, static_cast<long long>(errors), static_cast<long long>(done),
                        cfg.failed_request_threshold);
          reason = buf;
        }
      }
      if (!reason.empty() && !abort.exchange(true)) {
        abort_reason = reason;
        stopped = true;
        for (auto& wp : workers) {
          Worker* w = wp.get();
          asio::post(w->io, [this, w, reason] {
            stop_sending(*w);
            cancel_in_flight(*w, "cancelled: " + reason);
          });
        }
      }
    }
    for (auto& t : threads) t.join();
    progress.finish(counters, ps.phase);
    {
      std::lock_guard lk(worker_failure_mu);
      if (!worker_failure.empty() && abort_reason != worker_failure) {
        if (abort_reason.empty()) abort_reason = worker_failure;
        else abort_reason += "; " + worker_failure;
        stopped = true;
      }
    }

    std::vector<RequestRecord> phase_records;
    std::size_t phase_count = 0;
    for (auto& wp : workers) phase_count += wp->records.size();
    phase_records.reserve(phase_count);
    result.records.reserve(result.records.size() + phase_count);
    for (auto& wp : workers) {
      for (auto& r : wp->records) phase_records.push_back(std::move(r));
      wp->records.clear();
    }
    std::sort(phase_records.begin(), phase_records.end(),
              [](const RequestRecord& a, const RequestRecord& b) { return a.start_ns < b.start_ns; });
    for (auto& r : phase_records) result.records.push_back(std::move(r));
    return !stopped && !abort;
  }

  RunResult run() {
    RunResult result;
    ProgressPrinter progress(cfg.quiet, cfg.progress_interval_s);
    if (cfg.warmup_request_count > 0) {
      PhaseState warm;
      warm.phase = Phase::warmup;
      warm.count = cfg.warmup_request_count;
      warm.start_ns = monotonic_ns() + 1'000'000;
      if (!run_phase(warm, result, progress)) {
        result.abort_reason = abort_reason;
        return result;
      }
    }
    PhaseState prof;
    prof.phase = Phase::profiling;
    prof.index_base = cfg.warmup_request_count;
    prof.count = cfg.request_count;
    prof.start_ns = monotonic_ns() + 1'000'000;
    prof.grace_s = cfg.grace_period_s;
    if (cfg.duration_s) {
      prof.send_deadline_ns = prof.start_ns + seconds_to_ns(*cfg.duration_s);
      prof.grace_deadline_ns = prof.send_deadline_ns + seconds_to_ns(cfg.grace_period_s);
    }
    result.profiling_start_ns = prof.start_ns;
    result.profiling_start_wall_ns = ClockAnchor::now().to_wall(prof.start_ns);
    run_phase(prof, result, progress);
    result.profiling_end_ns = monotonic_ns();
    result.abort_reason = abort_reason;
    for (const auto& r : result.records)
      if (r.phase == Phase::profiling && r.was_cancelled) ++result.profiling_cancelled;
    for (auto& wp : workers) {
      const auto& s = wp->client.stats();
      result.client.connects += s.connects;
      result.client.connect_failures += s.connect_failures;
      result.client.reused += s.reused;
      result.client.stale_dropped += s.stale_dropped;
      result.client.retries += s.retries;
    }
    counters.phase = 2;
    return result;
  }
};

LoadRunner::LoadRunner(const ProfileConfig& cfg, std::string model, const std::string& benchmark_id)
    : impl_(std::make_unique<Impl>(cfg, std::move(model), benchmark_id)) {}
LoadRunner::~LoadRunner() = default;
RunResult LoadRunner::run() { return impl_->run(); }
LiveCounters& LoadRunner::counters() noexcept { return impl_->counters; }
void LoadRunner::set_record_sink(RecordSink* sink) noexcept { impl_->sink = sink; }
void LoadRunner::request_interrupt() noexcept { request_stop(SIGINT); }
bool LoadRunner::interrupt_requested() noexcept { return stop_requested(); }

std::string preflight_model(const ClientConfig& cfg) { return preflight_served_model(cfg).id; }

void check_token_ids_fit(int min, int max, const ServedModel& served, const std::string& flag) {
  if (!served.vocab_size || max <= *served.vocab_size) return;
  throw UserError(flag + " " + std::to_string(min) + ":" + std::to_string(max) + " does not fit the vocabulary of '" +
                  served.id + "' (" + std::to_string(*served.vocab_size) + " token ids, from GET /v1/models); use " +
                  flag + " MIN:MAX with MAX <= " + std::to_string(*served.vocab_size));
}

ServedModel preflight_served_model(const ClientConfig& cfg) {
  const auto url = net::parse_url(cfg.url);
  {
    // A base URL that ends in /v1 (as OpenAI clients take it) makes every
    // path /v1/v1/...: name the fix instead of the 404 that follows.
    std::string p = url.path;
    while (!p.empty() && p.back() == '/') p.pop_back();
    if (p.size() >= 3 && p.compare(p.size() - 3, 3, "/v1") == 0)
      throw UserError("--url " + cfg.url + " ends in /v1, and agentperf adds /v1/... itself (it would ask for " +
                      p + "/v1/models); pass --url " + url.origin() + p.substr(0, p.size() - 3));
  }
  // A server that accepts connections but does not answer yet (still
  // loading weights) must not hold the run for --request-timeout (6 hours
  // by default): short probes, each said on stderr, then a clear error.
  constexpr int kProbes = 3;
  const auto probe_timeout = std::min(client_options(cfg).request_timeout, std::chrono::milliseconds(10'000));
  net::HttpRequest req;
  req.method = "GET";
  req.path = net::join_path(url.path, "/v1/models");
  req.headers.emplace_back("Accept", "application/json");
  if (!cfg.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + cfg.api_key);
  for (const auto& h : cfg.headers) req.headers.push_back(h);
  net::SimpleResponse res;
  const double probe_s = static_cast<double>(probe_timeout.count()) / 1000;
  for (int attempt = 1; attempt <= kProbes; ++attempt) {
    asio::io_context io(1);
    auto opts = client_options(cfg);
    opts.request_timeout = probe_timeout;
    net::HttpClient client(io, url, opts);
    client.resolve();
    auto fut = asio::co_spawn(io, client.fetch(req), asio::use_future);
    io.run();
    res = fut.get();
    const bool no_answer = res.error && res.status == 0 && res.error->type == "RequestTimeout";
    if (!no_answer) break;
    if (attempt < kProbes)
      std::fprintf(stderr, "agentperf: %s%s accepts connections but sent no answer in %.3g s (still loading?); "
                           "asking again (%d of %d)\n",
                   url.origin().c_str(), req.path.c_str(), probe_s, attempt + 1, kProbes);
    else
      throw UserError("server at " + url.origin() + " accepts connections but did not answer GET " + req.path + " in " +
                      std::to_string(kProbes) + " tries of " + fmt_seconds(probe_s) +
                      ": is it still loading? Start the run once it answers");
  }
  if (cfg.wait_for_server_s > 0 && ((res.error && res.status == 0) || res.status == 502 || res.status == 503)) {
    // --wait-for-server: a server still starting (connection refused, or a
    // gateway's 502/503 while the engine loads) is asked again every second.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(cfg.wait_for_server_s);
    std::fprintf(stderr, "agentperf: waiting up to %s for %s to answer GET %s\n", fmt_seconds(cfg.wait_for_server_s).c_str(),
                 url.origin().c_str(), req.path.c_str());
    while (((res.error && res.status == 0) || res.status == 502 || res.status == 503) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      asio::io_context io(1);
      auto opts = client_options(cfg);
      opts.request_timeout = probe_timeout;
      opts.connect_attempts = 1;
      net::HttpClient client(io, url, opts);
      client.resolve();
      auto fut = asio::co_spawn(io, client.fetch(req), asio::use_future);
      io.run();
      res = fut.get();
    }
  }
  if (res.error && res.status == 0)
    throw UserError("server at " + url.origin() + " is not reachable: " + res.error->message +
                    (cfg.wait_for_server_s > 0 ? " (waited " + fmt_seconds(cfg.wait_for_server_s) + ")"
                                               : std::string(" (start it first, or pass --wait-for-server SECONDS)")));
  if (res.error) throw UserError("GET " + url.origin() + req.path + ": " + res.error->message);
  ServedModel served;
  auto body = res.status == 200 ? nlohmann::json::parse(res.body, nullptr, false) : nlohmann::json();
  const bool listed = body.is_object() && body.contains("data") && body["data"].is_array() && !body["data"].empty() &&
                      body["data"][0].is_object() && body["data"][0].contains("id") && body["data"][0]["id"].is_string();
  if (!cfg.model.empty()) {
    served.id = cfg.model;
    if (listed && cfg.model_check) {
      // A name the server does not serve would be recorded as the served
      // model, and most servers answer it with 404s (or serve another).
      std::string ids;
      bool found = false;
      for (const auto& m : body["data"]) {
        if (!m.is_object() || !m.contains("id") || !m["id"].is_string()) continue;
        const std::string id = m["id"].get<std::string>();
        found = found || id == cfg.model;
        ids += (ids.empty() ? "" : ", ") + id;
      }
      if (!found)
        throw UserError("--model " + cfg.model + ": GET " + url.origin() + req.path + " lists " + ids +
                        ", not this name; pass one of those, or --no-model-check for a gateway that routes by name");
    }
  } else if (res.status != 200) {
    throw UserError("could not discover the model: GET " + req.path + " answered HTTP " + std::to_string(res.status) +
                    "; pass --model NAME");
  } else if (!listed) {
    throw UserError("could not discover the model: GET " + req.path +
                    " did not return {\"data\":[{\"id\":...}]}; pass --model NAME");
  } else {
    served.id = body["data"][0]["id"].get<std::string>();
  }
  if (listed) {
    for (const auto& m : body["data"]) {
      if (!m.is_object() || m.value("id", std::string()) != served.id) continue;
      if (m.contains("meta") && m["meta"].is_object() && m["meta"].contains("n_vocab") &&
          m["meta"]["n_vocab"].is_number_integer())
        served.vocab_size = m["meta"]["n_vocab"].get<std::int64_t>();
    }
  }
  return served;
}

}  // namespace agentperf
