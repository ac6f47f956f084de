#include "replay/replay_runner.h"

#include <cctype>
#include <cstdlib>

#include "replay/replay_scheduler.h"

#include <openssl/sha.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/asio_aliases.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/run_control.h"
#include "metrics/progress.h"
#include "load/request_builder.h"
#include "net/http_client.h"
#include "tokenizer/bpe_tokenizer.h"
#include "common/bool_word.h"
#include "tokenizer/exact_text.h"
#include "trace/prompt_builder.h"
#include "trace/session_tree.h"

namespace agentperf::replay {
using namespace aio;

ReplayConfig::SessionHeaders ReplayConfig::SessionHeaders::from_environment() {
  // pydantic-settings' reading of a bool (common/bool_word.h); another word
  // keeps the default.
  auto flag = [](const char* name, bool fallback) {
    const char* v = std::getenv(name);
    return v ? parse_bool_word(v).value_or(fallback) : fallback;
  };
  SessionHeaders h;
  h.x_session_affinity = flag("AIPERF_HTTP_X_SESSION_AFFINITY_FROM_CORRELATION_ID", true);
  h.x_session_id = flag("AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID", false);
  h.x_smg_routing_key = flag("AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID", false);
  h.x_dynamo_session_id = flag("AIPERF_HTTP_X_DYNAMO_SESSION_ID_FROM_CORRELATION_ID", false);
  return h;
}

std::string cache_bust_marker(const std::string& benchmark_id, std::int64_t pass, int lane, const std::string& trace_id) {
  const std::string key = benchmark_id + ":" + std::to_string(pass) + ":" + std::to_string(lane) + ":" + trace_id;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), digest);
  static const char* hex = "0123456789abcdef";
  std::string h;
  for (int i = 0; i < 6; ++i) {
    h += hex[digest[i] >> 4];
    h += hex[digest[i] & 15];
  }
  return "[rid:" + h + "]";
}

namespace {

class Runner {
 public:
  Runner(const ReplayConfig& cfg, const std::vector<trace::WekaTrace>& traces, std::string model)
      : cfg_(cfg), traces_(traces), model_(std::move(model)), url_(net::parse_url(cfg.client.url)),
        client_(io_, url_, client_options(cfg.client)), wake_(io_), progress_(cfg.output.quiet, cfg.output.progress_interval_s) {
    client_.resolve();
    if (!cfg.client.tokenizer_path.empty()) {
      tok_ = std::make_shared<const tokenizer::BpeTokenizer>(tokenizer::BpeTokenizer::from_file(cfg.client.tokenizer_path));
      exact_ = std::make_shared<const tokenizer::ExactTextBuilder>(*tok_);
    }
    text_ = !cfg.client.uses_token_ids();
    if (text_ && !exact_)
      throw UserError("replay with text prompts (chat) needs --tokenizer so block text has exact token counts; "
                      "or use --endpoint-type completions (token-id prompts)");
    path_ = net::join_path(url_.path, cfg.client.endpoint_path());
    nlohmann::json fixed = nlohmann::json::object();
    fixed["model"] = model_;
    fixed["stream"] = true;
    fixed["stream_options"] = {{"include_usage", true}};
    fixed["ignore_eos"] = true;
    for (const auto& [k, v] : cfg.client.extra_inputs) fixed[k] = nlohmann::json::parse(v);
    const std::string d = fixed.dump();
    fixed_fields_ = d.substr(1, d.size() - 2);
    MarkerEncoding marker;
    marker.text = text_;
    if (text_) marker.count_text_tokens = [tok = tok_](const std::string& s) { return static_cast<std::int64_t>(tok->count(s)); };
    sched_.emplace(cfg, traces, std::move(marker), exact_);
  }

  // Warmup: done/planned requests, ETA by the grace period; profiling:
  // ETA by --duration.
  void print_progress() {
    const bool prof = sched_->profiling();
    const double deadline = prof ? sched_->send_deadline() : cfg_.warmup_grace_s;
    const std::int64_t deadline_ns = std::isfinite(deadline) ? start_ns_ + static_cast<std::int64_t>(deadline * 1e9)
                                                             : std::numeric_limits<std::int64_t>::max();
    progress_.maybe_print(sched_->counters(), prof ? Phase::profiling : Phase::warmup,
                          prof ? std::nullopt : std::optional<std::int64_t>(sched_->warmup_planned()),
                          start_ns_ + static_cast<std::int64_t>(sched_->profile_start() * 1e9), deadline_ns);
  }

  ReplayResult run() {
    start_ns_ = monotonic_ns();
    sched_->start();
    if (cfg_.warmup && !cfg_.output.quiet)
      std::fprintf(stderr,
                   "agentperf: warmup: %lld primers (spread over up to %.0f s) then up to %lld pressure requests "
                   "(%d per lane); at most %.0f s (--warmup-grace-period) before profiling starts\n",
                   static_cast<long long>(sched_->warmup_primers_planned()), cfg_.system_idle_cap_s,
                   static_cast<long long>(sched_->warmup_pressure_planned()), cfg_.warmup_requests_per_lane,
                   cfg_.warmup_grace_s);
    co_spawn(io_, drive(), failure_guard());
    io_.run();
    auto& result = sched_->result();
    if (!failure_.empty()) {
      // The loop was stopped by a failed coroutine: the run ends as failed,
      // naming the cause (records already finished are kept and on disk).
      result.abort_reason = result.abort_reason.empty() ? failure_ : result.abort_reason + "; " + failure_;
    }
    // (rates over the profiling phase: the counters restarted at its start)
    progress_.finish(sched_->counters(), Phase::profiling,
                     start_ns_ + static_cast<std::int64_t>(sched_->profile_start() * 1e9));
    std::sort(result.run.records.begin(), result.run.records.end(),
              [](const RequestRecord& a, const RequestRecord& b) { return a.start_ns < b.start_ns; });
    result.run.profiling_start_ns += start_ns_;
    result.run.profiling_end_ns = monotonic_ns();
    result.run.abort_reason = result.abort_reason;
    const auto& s = client_.stats();
    result.run.client = {s.connects, s.connect_failures, s.reused, s.stale_dropped, s.retries};
    return std::move(result);
  }

 private:
  double now() const { return static_cast<double>(monotonic_ns() - start_ns_) / 1e9; }

  net::HttpRequest build_request(Play& p, int s, int k, const trace::Turn& turn, RequestRecord& rec, bool one_token) {
    const trace::TurnRef ref{s, k};
    trace::PromptPieces pieces = p.builder->build(*turn.call, ref);
    net::HttpRequest req;
    req.path = path_;
    req.headers.emplace_back("X-Request-ID", rec.x_request_id);
    req.headers.emplace_back("X-Correlation-ID", rec.x_correlation_id);
    const auto& sh = cfg_.session_headers;
    if (cfg_.routing_headers) {
      // Routers keep a tree on one backend by the root key, subagents included.
      req.headers.emplace_back("X-SMG-Routing-Key", rec.root_correlation_id);
      req.headers.emplace_back("X-Session-ID", rec.x_correlation_id);
    } else {
      if (sh.x_smg_routing_key) req.headers.emplace_back("X-SMG-Routing-Key", rec.x_correlation_id);
      if (sh.x_session_id) req.headers.emplace_back("X-Session-ID", rec.x_correlation_id);
    }
    if (sh.x_session_affinity) req.headers.emplace_back("X-Session-Affinity", rec.x_correlation_id);
    if (sh.x_dynamo_session_id) {
      req.headers.emplace_back("X-Dynamo-Session-ID", rec.x_correlation_id);
      if (!rec.parent_correlation_id.empty())
        req.headers.emplace_back("X-Dynamo-Parent-Session-ID", rec.parent_correlation_id);
    }
    if (!cfg_.client.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + cfg_.client.api_key);
    for (const auto& h : cfg_.client.headers) req.headers.push_back(h);
    const std::int64_t max_tokens = one_token ? 1 : std::max<std::int64_t>(1, turn.call->out);
    std::string head = "{" + fixed_fields_ + ",\"max_tokens\":" + std::to_string(max_tokens);
    head += text_ ? ",\"messages\":[" : ",\"prompt\":[";
    req.body.push_back(std::make_shared<const std::string>(std::move(head)));
    if (text_) {
      // System / user / assistant messages over the shared block pieces; the
      // marker opens the first user message.
      const auto& stream = p.tree.streams[static_cast<std::size_t>(s)];
      const auto spans = trace::segment_messages(stream, k, *p.trace, pieces.pieces.size());
      bool marked = false;
      for (std::size_t m = 0; m < spans.size(); ++m) {
        const std::string_view role = spans[m].role;
        req.body.push_back(role == "system" ? open_system_ : role == "assistant" ? open_assistant_ : open_user_);
        if (role == "user" && !marked && p.marker_piece) {
          req.body.push_back(p.marker_piece);
          marked = true;
        }
        for (std::size_t i = 0; i < spans[m].pieces; ++i) req.body.push_back(pieces.pieces[spans[m].first_piece + i]);
        req.body.push_back(m + 1 < spans.size() ? close_message_ : close_messages_);
      }
    } else {
      // The marker goes after the system blocks, never last (the last piece
      // closes the token list).
      const std::size_t at =
          p.marker_piece ? marker_piece_index(p.tree.streams[static_cast<std::size_t>(s)], pieces.pieces.size())
                         : pieces.pieces.size();
      for (std::size_t i = 0; i < pieces.pieces.size(); ++i) {
        if (i == at) req.body.push_back(p.marker_piece);
        req.body.push_back(pieces.pieces[i]);
      }
      req.body.push_back(close_ids_);
    }
    rec.requested_isl = static_cast<int>(pieces.tokens + (p.marker_piece ? p.marker_tokens : 0));
    rec.requested_osl = static_cast<int>(max_tokens);
    rec.prompt_exact = true;
    return req;
  }

  asio::awaitable<void> send_turn(Dispatch d) {
    RequestRecord rec = std::move(d.rec);
    const auto& turn = d.play->tree.streams[static_cast<std::size_t>(d.stream)].turns[static_cast<std::size_t>(d.turn)];
    rec.capture_text = tok_ != nullptr;
    auto req = build_request(*d.play, d.stream, d.turn, turn, rec, d.one_token);
    rec.credit_issued_ns = monotonic_ns();
    rec.scheduled_ns = rec.credit_issued_ns;
    net::InFlight inflight;
    inflight_set_.push_back(&inflight);
    co_await client_.send(req, rec, &inflight);
    inflight_set_.erase(std::find(inflight_set_.begin(), inflight_set_.end(), &inflight));
    if (tok_ && rec.ok() && !rec.usage_completion_tokens)
      rec.client_output_tokens = static_cast<std::int64_t>(tok_->count(rec.output_text));
    std::string().swap(rec.output_text);
    sched_->complete(d, std::move(rec), now());
    wake_.cancel();
  }

  // Completion of the scheduler and of each request coroutine: an exception
  // (out of memory building a prompt, a bug) stops the loop with its cause
  // instead of vanishing into asio::detached and leaving the run hanging.
  std::function<void(std::exception_ptr)> failure_guard() {
    return [this](std::exception_ptr e) {
      if (!e || !failure_.empty()) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::bad_alloc&) {
        failure_ = "replay failed: out of memory (std::bad_alloc)";
      } catch (const std::exception& ex) {
        failure_ = std::string("replay failed: ") + ex.what();
      } catch (...) {
        failure_ = "replay failed: unknown exception";
      }
      for (auto* f : inflight_set_) f->cancel("cancelled: " + failure_);
      io_.stop();
    };
  }

  // The real-time driver of the schedule: sends what is due, cancels what
  // the schedule says to cancel, and sleeps until the next timer, a
  // completion, or 0.25 s (stop requests are polled that often).
  asio::awaitable<void> drive() {
    for (;;) {
      const double t = now();
      auto due = sched_->poll(t);
      for (auto& d : due) co_spawn(io_, send_turn(std::move(d)), failure_guard());
      if (!due.empty()) continue;
      print_progress();
      if (sched_->finished()) co_return;
      if (const auto& why = sched_->cancel_reason()) {
        auto copy = inflight_set_;
        for (auto* f : copy) f->cancel(*why);
        // The cancelled requests come back through send_turn.
        while (sched_->in_flight() > 0) {
          wake_.expires_after(std::chrono::milliseconds(5));
          co_await wake_.async_wait(nothrow);
        }
        continue;
      }
      const double next = sched_->next_wakeup();
      double wait = std::max(0.0, std::min({next - t, cfg_.output.progress_interval_s, 0.25}));
      wake_.expires_after(std::chrono::nanoseconds(static_cast<std::int64_t>(wait * 1e9)));
      co_await wake_.async_wait(nothrow);
    }
  }

  const ReplayConfig& cfg_;
  const std::vector<trace::WekaTrace>& traces_;
  std::string model_;
  net::Url url_;
  asio::io_context io_{1};
  net::HttpClient client_;
  asio::steady_timer wake_;
  ProgressPrinter progress_;
  std::shared_ptr<const tokenizer::BpeTokenizer> tok_;
  std::shared_ptr<const tokenizer::ExactTextBuilder> exact_;
  bool text_ = false;
  std::string path_, fixed_fields_;
  std::shared_ptr<const std::string> close_ids_ = std::make_shared<const std::string>("]}");
  std::shared_ptr<const std::string> open_system_ = std::make_shared<const std::string>("{\"role\":\"system\",\"content\":\"");
  std::shared_ptr<const std::string> open_user_ = std::make_shared<const std::string>("{\"role\":\"user\",\"content\":\"");
  std::shared_ptr<const std::string> open_assistant_ = std::make_shared<const std::string>("{\"role\":\"assistant\",\"content\":\"");
  std::shared_ptr<const std::string> close_message_ = std::make_shared<const std::string>("\"},");
  std::shared_ptr<const std::string> close_messages_ = std::make_shared<const std::string>("\"}]}");
  std::optional<ReplayScheduler> sched_;  // made once the tokenizer is known
  std::vector<net::InFlight*> inflight_set_;
  std::string failure_;
  std::int64_t start_ns_ = 0;
};

}  // namespace

ReplayResult run_replay(const ReplayConfig& cfg, const std::vector<trace::WekaTrace>& traces, const std::string& model) {
  if (traces.empty()) throw UserError("replay: no traces to play");
  if (cfg.lanes < 1) throw UserError("--lanes must be at least 1");
  if (cfg.duration_s <= 0) throw UserError("--duration must be > 0 seconds");
  Runner r(cfg, traces, model);
  return r.run();
}

}  // namespace agentperf::replay
