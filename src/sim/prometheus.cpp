#include "sim/prometheus.h"

#include "common/prometheus_writer.h"

namespace agentperf::sim {

std::string prometheus_text(const EngineStats& s, const std::string& model_name, bool hicache) {
  const PromLabels l = {{"model_name", model_name}};
  auto with = [&](const char* key, const char* value) {
    PromLabels more = l;
    more.emplace_back(key, value);
    return more;
  };
  PrometheusWriter w;
  w.gauge("sglang:num_running_reqs", "Running requests", l, double(s.running));
  w.gauge("sglang:num_queue_reqs", "Waiting requests", l, double(s.waiting));
  w.gauge("sglang:num_requests_running", "Running requests (old name)", l, double(s.running));
  w.gauge("sglang:num_requests_waiting", "Waiting requests (old name)", l, double(s.waiting));
  w.gauge("sglang:token_usage", "KV tokens held by requests / pool", l, s.token_usage());
  w.gauge("sglang:num_used_tokens", "KV tokens held by requests", l, double(s.kv_used));
  w.gauge("sglang:kv_available_tokens", "Free KV tokens", l, double(s.kv_total - s.kv_used - s.kv_evictable));
  w.gauge("sglang:kv_evictable_tokens", "Cached, evictable KV tokens", l, double(s.kv_evictable));
  w.gauge("sglang:max_total_num_tokens", "KV pool size in tokens", l, double(s.kv_total));
  if (s.state_slots > 0)
    w.gauge("sglang:mamba_usage", "State slots in use / total", l, double(s.state_used) / double(s.state_slots));
  w.gauge("sglang:cache_hit_rate", "Prefix hit rate of the last prefill batch", l, s.last_prefill_hit_rate);
  w.family("sglang:cached_tokens_total", "counter", "Prompt tokens served from cache");
  w.sample("sglang:cached_tokens_total", with("cache_source", "device"), double(s.cached_tokens_device));
  w.sample("sglang:cached_tokens_total", with("cache_source", "host"), double(s.cached_tokens_host));
  w.counter("sglang:prompt_tokens_total", "Prompt tokens", l, double(s.prompt_tokens_total));
  w.counter("sglang:generation_tokens_total", "Generated tokens", l, double(s.generation_tokens_total));
  w.counter("sglang:num_requests_total", "Requests received", l, double(s.requests_total));
  w.counter("sglang:realtime_tokens_total", "Prefill tokens computed", with("mode", "prefill_compute"),
            double(s.computed_prefill_tokens_total));
  w.counter("sglang:num_retracted_reqs_total", "Retracted requests", l, double(s.retractions));
  if (s.spec_verify_steps > 0)
    w.gauge("sglang:spec_accept_length", "Mean accepted tokens per verify step", l,
            s.spec_accept_length_sum / double(s.spec_verify_steps));
  if (hicache) {
    w.gauge("sglang:hicache_host_used_tokens", "Host KV tokens in use", l, double(s.host_used));
    w.gauge("sglang:hicache_host_total_tokens", "Host KV pool size", l, double(s.host_total));
  }
  return w.take();
}

}  // namespace agentperf::sim
