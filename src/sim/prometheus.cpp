#include "sim/prometheus.h"

#include <cstdio>

namespace agentperf::sim {
namespace {
void metric(std::string& out, const char* name, const char* type, const char* help, const std::string& labels,
            double value) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "# HELP %s %s\n# TYPE %s %s\n%s{%s} %.17g\n", name, help, name, type, name,
                labels.c_str(), value);
  out += buf;
}
}  // namespace

std::string prometheus_text(const EngineStats& s, const std::string& model_name, bool hicache) {
  const std::string l = "model_name=\"" + model_name + "\"";
  std::string out;
  metric(out, "sglang:num_running_reqs", "gauge", "Running requests", l, double(s.running));
  metric(out, "sglang:num_queue_reqs", "gauge", "Waiting requests", l, double(s.waiting));
  metric(out, "sglang:num_requests_running", "gauge", "Running requests (old name)", l, double(s.running));
  metric(out, "sglang:num_requests_waiting", "gauge", "Waiting requests (old name)", l, double(s.waiting));
  metric(out, "sglang:token_usage", "gauge", "KV tokens held by requests / pool", l, s.token_usage());
  metric(out, "sglang:num_used_tokens", "gauge", "KV tokens held by requests", l, double(s.kv_used));
  metric(out, "sglang:kv_available_tokens", "gauge", "Free KV tokens", l,
         double(s.kv_total - s.kv_used - s.kv_evictable));
  metric(out, "sglang:kv_evictable_tokens", "gauge", "Cached, evictable KV tokens", l, double(s.kv_evictable));
  metric(out, "sglang:max_total_num_tokens", "gauge", "KV pool size in tokens", l, double(s.kv_total));
  if (s.state_slots > 0)
    metric(out, "sglang:mamba_usage", "gauge", "State slots in use / total", l,
           double(s.state_used) / double(s.state_slots));
  metric(out, "sglang:cache_hit_rate", "gauge", "Prefix hit rate of the last prefill batch", l, s.last_prefill_hit_rate);
  std::string c = "# HELP sglang:cached_tokens_total Prompt tokens served from cache\n# TYPE sglang:cached_tokens_total counter\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "sglang:cached_tokens_total{%s,cache_source=\"device\"} %lld\n", l.c_str(),
                static_cast<long long>(s.cached_tokens_device));
  c += buf;
  std::snprintf(buf, sizeof buf, "sglang:cached_tokens_total{%s,cache_source=\"host\"} %lld\n", l.c_str(),
                static_cast<long long>(s.cached_tokens_host));
  c += buf;
  out += c;
  metric(out, "sglang:prompt_tokens_total", "counter", "Prompt tokens", l, double(s.prompt_tokens_total));
  metric(out, "sglang:generation_tokens_total", "counter", "Generated tokens", l, double(s.generation_tokens_total));
  metric(out, "sglang:num_requests_total", "counter", "Requests received", l, double(s.requests_total));
  metric(out, "sglang:realtime_tokens_total", "counter", "Prefill tokens computed", l + ",mode=\"prefill_compute\"",
         double(s.computed_prefill_tokens_total));
  metric(out, "sglang:num_retracted_reqs_total", "counter", "Retracted requests", l, double(s.retractions));
  if (s.spec_verify_steps > 0)
    metric(out, "sglang:spec_accept_length", "gauge", "Mean accepted tokens per verify step", l,
           s.spec_accept_length_sum / double(s.spec_verify_steps));
  if (hicache) {
    metric(out, "sglang:hicache_host_used_tokens", "gauge", "Host KV tokens in use", l, double(s.host_used));
    metric(out, "sglang:hicache_host_total_tokens", "gauge", "Host KV pool size", l, double(s.host_total));
  }
  return out;
}

}  // namespace agentperf::sim
