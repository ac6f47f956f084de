#include "sim/prometheus.h"

#include "common/prometheus_writer.h"

namespace agentperf::sim {

namespace {

// vLLM V1's names, the ones InferenceX's AgentX plot script reads
// (github.com/SemiAnalysisAI/InferenceX, utils/generate_aiperf_plots.py
// @ 843c6254ff69): gauges of running/waiting requests and KV-cache usage
// (blocks held by requests over the pool, 0..1), counters of prompt and
// generated tokens, prefix-cache queries and hits in tokens, preemptions,
// and prompt tokens by source (computed, hit in the device cache, or
// brought back from the host tier). Counters carry `_total` on the wire, as
// prometheus_client writes them; exporters and that script name the family
// without it.
void vllm_metrics(PrometheusWriter& w, const EngineStats& s, const std::string& model_name, bool host_tier) {
  const PromLabels l = {{"model_name", model_name}, {"engine", "0"}};
  auto with = [&](const char* key, const char* value) {
    PromLabels more = l;
    more.emplace_back(key, value);
    return more;
  };
  w.gauge("vllm:num_requests_running", "Number of requests in model execution batches", l, double(s.running));
  w.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed", l, double(s.waiting));
  w.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage", l, s.token_usage());
  if (host_tier)
    w.gauge("vllm:cpu_kv_cache_usage_perc", "CPU KV-cache usage", l,
            s.host_total ? double(s.host_used) / double(s.host_total) : 0.0);
  w.counter("vllm:prompt_tokens_total", "Number of prefill tokens processed", l, double(s.prompt_tokens_total));
  w.counter("vllm:generation_tokens_total", "Number of generation tokens processed", l,
            double(s.generation_tokens_total));
  w.counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens", l,
            double(s.prompt_tokens_total));
  w.counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens", l,
            double(s.cached_tokens_device));
  if (host_tier) {
    w.counter("vllm:kv_offload_bytes_gpu_to_cpu_total", "KV bytes offloaded from GPU to CPU", l, s.d2h_bytes);
    w.counter("vllm:kv_offload_bytes_cpu_to_gpu_total", "KV bytes loaded from CPU to GPU", l, s.h2d_bytes);
    w.counter("vllm:external_prefix_cache_queries_total", "External prefix cache queries, in tokens", l,
              double(s.prompt_tokens_total - s.cached_tokens_device));
    w.counter("vllm:external_prefix_cache_hits_total", "External prefix cache hits, in tokens", l,
              double(s.cached_tokens_host));
  }
  w.family("vllm:prompt_tokens_by_source_total", "counter", "Number of prompt tokens by source");
  w.sample("vllm:prompt_tokens_by_source_total", with("source", "local_compute"), double(s.computed_prefill_tokens_total));
  w.sample("vllm:prompt_tokens_by_source_total", with("source", "local_cache_hit"), double(s.cached_tokens_device));
  w.sample("vllm:prompt_tokens_by_source_total", with("source", "external_kv_transfer"), double(s.cached_tokens_host));
  w.counter("vllm:num_preemptions_total", "Cumulative number of preemptions from the engine", l, double(s.retractions));
  w.counter("vllm:request_success_total", "Count of successfully processed requests", l,
            double(s.requests_finished));
}

}  // namespace

std::string prometheus_text(const EngineStats& s, const std::string& model_name, bool hicache, SchedulerKind scheduler) {
  PrometheusWriter w;
  if (scheduler == SchedulerKind::vllm) {
    vllm_metrics(w, s, model_name, hicache);
    return w.take();
  }
  const PromLabels l = {{"model_name", model_name}};
  auto with = [&](const char* key, const char* value) {
    PromLabels more = l;
    more.emplace_back(key, value);
    return more;
  };
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
