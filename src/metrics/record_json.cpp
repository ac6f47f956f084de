#include "metrics/record_json.h"

#include <array>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "metrics/metric_table.h"
#include "metrics/record_metrics.h"

namespace agentperf {
namespace {

// A compact JSON writer with nlohmann's dump(-1) spelling: no spaces,
// shortest round-trip doubles ("1.0", "1e+16"), NaN and infinities as null,
// strings escaped as dump(ensure_ascii=false, replace) escapes them.
class LineWriter {
 public:
  explicit LineWriter(std::string& out) : out_(out) {}

  void begin_object() {
    separate();
    out_ += '{';
    first_ = true;
  }
  void end_object() {
    out_ += '}';
    first_ = false;
  }
  void begin_array() {
    separate();
    out_ += '[';
    first_ = true;
  }
  void end_array() {
    out_ += ']';
    first_ = false;
  }
  // A key; the value written next belongs to it.
  LineWriter& key(std::string_view k) {
    separate();
    string_text(k);
    out_ += ':';
    first_ = true;  // the value after a key takes no comma
    return *this;
  }
  void str(std::string_view s) {
    separate();
    string_text(s);
  }
  void integer(std::int64_t v) {
    separate();
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, end);
  }
  void number(double v) {
    separate();
    if (!std::isfinite(v)) {
      out_ += "null";
      return;
    }
    std::array<char, 64> buf;
    char* end = nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), v);
    out_.append(buf.data(), end);
  }
  void boolean(bool b) {
    separate();
    out_ += b ? "true" : "false";
  }
  void null() {
    separate();
    out_ += "null";
  }
  void str_or_null(const std::string& s) { s.empty() ? null() : str(s); }

 private:
  void separate() {
    if (!first_) out_ += ',';
    first_ = false;
  }
  // Plain printable ASCII without quote or backslash is written as is (ids,
  // tags, units, most messages); anything else goes through nlohmann's own
  // escaping so control characters, non-ASCII and invalid UTF-8 come out as
  // the DOM dump wrote them.
  void string_text(std::string_view s) {
    bool plain = true;
    for (unsigned char c : s)
      if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
        plain = false;
        break;
      }
    if (plain) {
      out_ += '"';
      out_ += s;
      out_ += '"';
    } else {
      out_ += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  }

  std::string& out_;
  bool first_ = true;
};

std::int64_t to_wall(const RequestRecord& r, std::int64_t mono) {
  return mono == 0 ? 0 : r.start_wall_ns + (mono - r.start_ns);
}

void metric_value(LineWriter& w, std::string_view tag, double v, bool integral, const char* unit) {
  w.key(tag).begin_object();
  w.key("value");
  integral ? w.integer(static_cast<std::int64_t>(v)) : w.number(v);
  w.key("unit").str(unit);
  w.end_object();
}

}  // namespace

void append_record_json_line(std::string& out, const RequestRecord& r) {
  const RecordMetrics m = compute_metrics(r);
  LineWriter w(out);
  w.begin_object();

  w.key("metadata").begin_object();
  w.key("session_num").integer(r.session_num);
  w.key("x_request_id").str(r.x_request_id);
  w.key("x_correlation_id").str(r.x_correlation_id);
  w.key("conversation_id").str(r.conversation_id);
  w.key("turn_index").integer(r.turn_index);
  w.key("root_correlation_id").str_or_null(r.root_correlation_id);
  w.key("agent_depth").integer(r.agent_depth);
  w.key("parent_correlation_id").str_or_null(r.parent_correlation_id);
  w.key("request_start_ns").integer(r.start_wall_ns);
  w.key("request_ack_ns");
  r.ack_ns ? w.integer(to_wall(r, r.ack_ns)) : w.null();
  w.key("request_end_ns").integer(to_wall(r, r.end_ns));
  w.key("credit_issued_ns").integer(to_wall(r, r.credit_issued_ns));
  w.key("scheduled_ns").integer(to_wall(r, r.scheduled_ns));
  w.key("worker_id").str("worker_" + std::to_string(r.worker_id));
  w.key("record_processor_id").str("inline");
  w.key("benchmark_phase").str(phase_name(r.phase));
  w.key("was_cancelled").boolean(r.was_cancelled);
  w.key("cancellation_time_ns");
  r.was_cancelled ? w.integer(to_wall(r, r.cancellation_ns)) : w.null();
  w.key("http_status").integer(r.http_status);
  w.key("retries").integer(r.retries);
  w.key("isl_source").str(token_source_name(m.isl_source));
  w.key("osl_source").str(token_source_name(m.osl_source));
  if (!r.warning.empty()) w.key("warning").str(r.warning);
  if (r.retry_start_ns) w.key("retry_start_ns").integer(to_wall(r, r.retry_start_ns));  // the second attempt's send
  if (r.burst_events > 0) w.key("burst_events").integer(r.burst_events);
  if (r.server_timings) {
    const auto& st = *r.server_timings;
    w.key("server_timings").begin_object();
    if (st.prompt_n) w.key("prompt_n").integer(*st.prompt_n);
    if (st.prompt_ms) w.key("prompt_ms").number(*st.prompt_ms);
    if (st.predicted_n) w.key("predicted_n").integer(*st.predicted_n);
    if (st.predicted_ms) w.key("predicted_ms").number(*st.predicted_ms);
    if (st.cache_n) w.key("cache_n").integer(*st.cache_n);
    w.end_object();
  }
  if (!r.content_ns.empty()) {
    w.key("first_content_ns").integer(to_wall(r, r.content_ns.front()));
    w.key("last_content_ns").integer(to_wall(r, r.content_ns.back()));
  }
  w.end_object();

  // Every metric of the table with a value (metrics/metric_table.h), in the
  // table's order: the same rows the aggregate summarises.
  w.key("metrics").begin_object();
  if (r.ok()) {
    for (const auto& def : metric_table())
      if (def.value)
        if (auto v = def.value(r, m)) metric_value(w, def.tag, *v, def.integral, def.unit);
    if (!m.inter_chunk_ms.empty()) {
      w.key(kInterChunkLatency).begin_object();
      w.key("value").begin_array();
      for (double v : m.inter_chunk_ms) w.number(v);
      w.end_array();
      w.key("unit").str(find_metric(kInterChunkLatency)->unit);
      w.end_object();
    }
  } else if (m.isl) {
    metric_value(w, "error_isl", static_cast<double>(*m.isl), true, "tokens");
    if (m.send_lateness_ms) metric_value(w, "send_lateness", *m.send_lateness_ms, false, "ms");
  }
  w.end_object();

  w.key("error");
  if (r.error) {
    w.begin_object();
    w.key("code");
    r.error->code ? w.integer(*r.error->code) : w.null();
    w.key("type").str(r.error->type);
    w.key("message").str(r.error->message);
    w.end_object();
  } else {
    w.null();
  }
  w.end_object();
}

}  // namespace agentperf
