#include "recipe/point_engine_config.h"

#include <algorithm>
#include <cstdio>

#include "recipe/inferencex_map.h"

namespace agentperf::recipe {

namespace {
// A vLLM server command (generated for vLLM entries), after any NAME=VALUE
// environment words a launcher writes before it.
bool is_vllm_command(const std::string& command) {
  std::size_t at = command.find_first_not_of(' ');
  while (at != std::string::npos) {
    const std::size_t end = command.find(' ', at);
    const std::string word = command.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const std::size_t eq = word.find('=');
    if (eq == std::string::npos || eq == 0 || word.rfind("--", 0) == 0) break;  // not an environment word
    at = end == std::string::npos ? end : command.find_first_not_of(' ', end);
  }
  return at != std::string::npos && command.compare(at, 10, "vllm serve") == 0;
}

}  // namespace

bool runs_tensorrt_llm(const Recipe& r) { return r.framework.find("trt") != std::string::npos; }

bool runs_vllm_scheduler(const Recipe& r, const ExpandedPoint& p) {
  return p.command.empty() ? r.framework.find("vllm") != std::string::npos : is_vllm_command(p.command);
}

sim::EngineConfig engine_config_for(const ExpandedPoint& p, const sim::EngineCosts& costs) {
  sim::EngineConfig c;
  // A vLLM command runs vLLM's scheduler: decode and prefill chunks in one
  // step under --max-num-batched-tokens. Every other command is scheduled as
  // SGLang (a multinode entry's vLLM workers: engines_for).
  c.scheduler = is_vllm_command(p.command) ? sim::SchedulerKind::vllm : sim::SchedulerKind::sglang;
  c.costs = costs;
  c.tp = p.entry->tp;
  c.mem_fraction_static = 0.80;
  c.max_running_requests = p.max_running_requests;
  c.cuda_graph_max_bs = p.cuda_graph_max_bs;
  c.spec.enabled = p.entry->spec_decoding == "mtp";
  // A launcher's --kv-cache-dtype (BF16 KV halves the pool of an FP8 spec).
  if (const auto v = command_flag_value(p.command, "--kv-cache-dtype")) c.kv_cache_dtype_bytes = sim::parse_kv_cache_dtype(*v);
  // The DSA backends (with an FP8 cache they decide the latent's layout in
  // the pool: sim/memory_plan.h), under either of SGLang's spellings.
  for (const char* flag : {"--dsa-prefill-backend", "--nsa-prefill-backend"})
    if (const auto v = command_flag_value(p.command, flag)) c.dsa_prefill_backend = *v;
  for (const char* flag : {"--dsa-decode-backend", "--nsa-decode-backend"})
    if (const auto v = command_flag_value(p.command, flag)) c.dsa_decode_backend = *v;
  // The launcher's scheduling flags, as SGLang reads them (a DP-attention
  // engine's global chunk and tokenizer loops are split over its ranks in
  // engines_for, below).
  sim::apply_scheduling_flags(p.command, c);
  // SGLang's --mem-fraction-static, or vLLM's --gpu-memory-utilization
  // taken as the same share (vLLM also takes its profiled activation peak
  // out of it, which the plan does not).
  for (const char* flag : {"--mem-fraction-static", "--gpu-memory-utilization"})
    if (const auto v = command_flag_value(p.command, flag)) {
      double f = 0;
      if (std::sscanf(v->c_str(), "%lf", &f) == 1 && f > 0 && f < 1) c.mem_fraction_static = f;
    }
  if (p.entry->kv_offloading == "dram") {
    if (!command_flag_value(p.command, "--page-size")) c.page_size = 64;
    c.hicache.enabled = true;
    c.hicache.size_gb = static_cast<double>(p.hicache_size_gb);
    c.hicache.write_policy = sim::WritePolicy::write_through_selective;
  }
  return c;
}

namespace {

std::string fmt(const char* f, double a = 0, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

// Topology of one engine of a role (see the header).
void shape(PointEngine& pe, const WorkerSpec& w, int conc) {
  int attn_tp = w.tp * w.pcp, engines = std::max(1, w.num_worker);
  pe.gpus = w.tp * w.pp * w.pcp;
  pe.dp = 1;
  if (w.dp_attn) {
    if (w.ep > w.tp) {  // vLLM DEP: TP t x DP e/t over e GPUs; workers may be its DP groups
      attn_tp = w.tp;
      pe.gpus = w.ep * w.pp * w.pcp;
      pe.dp = w.ep / w.tp;
      engines = std::max(1, w.num_worker * w.tp / w.ep);
    } else {  // SGLang / vLLM single node: DP t ranks of attention TP 1
      attn_tp = 1;
      pe.dp = w.tp;
    }
  }
  pe.workers = engines;
  pe.config.tp = attn_tp;
  const int running = (2 * conc + engines * pe.dp - 1) / (engines * pe.dp);
  pe.config.max_running_requests = running;
  pe.config.cuda_graph_max_bs = std::min(pe.config.cuda_graph_max_bs, std::max(1, running));
}

// A cap on the requests one rank runs, from the engine's own settings:
// `cap` as given, `per_rank` what it leaves each rank (0: none). It binds
// only below the rule's share (shape()).
void cap_running(PointEngine& pe, int cap, int per_rank) {
  if (per_rank == 0 || per_rank >= pe.config.max_running_requests) return;
  pe.recipe_running_cap = cap;
  pe.config.max_running_requests = per_rank;
  pe.config.cuda_graph_max_bs = std::min(pe.config.cuda_graph_max_bs, per_rank);
}

// A multinode pool's recipe may cap the requests each server runs. SGLang's
// --max-running-requests is the server's, split over its DP-attention
// ranks (ModelRunner: max_running_requests // dp_size,
// python/sglang/srt/model_executor/model_runner.py in
// github.com/sgl-project/sglang); vLLM's --max-num-seqs is each engine
// core's, a DP rank's own (vllm/config/scheduler.py in
// github.com/vllm-project/vllm). It applies where it is below shape()'s
// 2 x conc rule, the share of the run's requests a rank can hold: there it
// binds admission. A larger cap binds nothing at the point's concurrency;
// it would only size what SGLang reserves per running request (speculative
// state buffers of a hybrid model), and the recipes that set one large
// (Qwen3.5's, 72-80 at TP2) also set the replayed-SSM spec path
// (--enable-linear-replayssm-spec) that the memory plan does not model, so
// the rule's smaller figure sizes those.
void apply_recipe_running_cap(PointEngine& pe, const std::string& command) {
  int cap = command_flag_positive_int(command, "--max-running-requests"), per_rank = 0;
  if (cap > 0)
    per_rank = std::max(1, cap / pe.dp);
  else if ((cap = command_flag_positive_int(command, "--max-num-seqs")) > 0)
    per_rank = cap;
  cap_running(pe, cap, per_rank);
}

// A TensorRT-LLM engine as engines_for's header says; `weights` is what one
// rank holds, `usable` its HBM.
void apply_trtllm(PointEngine& pe, double weights, double usable) {
  // In-flight batching (TensorRT-LLM performance-tuning guide, "Tuning Max
  // Batch Size and Max Num Tokens"): one forward of max_num_tokens, context
  // chunks and generation tokens together; its default is 8192
  // (TorchLlmArgs.max_num_tokens).
  constexpr int kDefaultMaxNumTokens = 8192;
  // Nothing read: TensorRT-LLM's own defaults (free_gpu_memory_fraction 0.9).
  const TrtllmSettings t = pe.trtllm.value_or(TrtllmSettings{});
  pe.config.scheduler = sim::SchedulerKind::vllm;
  pe.config.max_num_batched_tokens = t.max_num_tokens > 0 ? t.max_num_tokens : kDefaultMaxNumTokens;
  const double free = t.free_gpu_memory_fraction;
  // As the memory plan's rest = usable x f - weights, f = (w + free (usable - w)) / usable.
  pe.config.mem_fraction_static = (weights + free * (usable - weights)) / usable;
  pe.sizing.push_back(fmt("TensorRT-LLM sizing: free_gpu_memory_fraction %.2f", free) +
                      (pe.trtllm ? " (the launcher's or recipe's)" : " (TensorRT-LLM's default)") +
                      fmt(" of the %.2f GiB left after %.2f GiB of weights = mem_fraction_static %.4f",
                          (usable - weights) / (1024.0 * 1024 * 1024), weights / (1024.0 * 1024 * 1024),
                          pe.config.mem_fraction_static) +
                      fmt("; in-flight batching, %.0f tokens a forward", pe.config.max_num_batched_tokens));
  if (!pe.trtllm) return;
  pe.config.page_size = t.tokens_per_block;
  if (t.kv_cache_dtype != "auto") pe.config.kv_cache_dtype_bytes = sim::parse_kv_cache_dtype(t.kv_cache_dtype);
  if (t.stream_interval > 0) pe.config.stream_interval = t.stream_interval;
  pe.config.spec.enabled = t.max_draft_len > 0;
  if (t.max_draft_len > 0) pe.config.spec.draft_chain(t.max_draft_len);
  // max_batch_size is each rank's scheduler's own (an attention-DP rank
  // runs one), so it caps a rank as it stands.
  if (t.max_batch_size > 0) {
    cap_running(pe, t.max_batch_size, t.max_batch_size);
    if (pe.recipe_running_cap > 0)
      pe.sizing.push_back(fmt("running requests per rank = max_batch_size %.0f", t.max_batch_size));
  }
  // Host offload (TensorRT-LLM "KV Cache System", offloading to host
  // memory): a block evicted from the GPU pool is copied to the host pool
  // first, and a later hit copies it back: SGLang's write_back in the
  // simulator's terms. A decode pool keeps no cache (engines_for).
  if (t.host_cache_bytes > 0 && t.enable_block_reuse && pe.role != "decode") {
    pe.config.hicache.enabled = true;
    pe.config.hicache.size_gb = static_cast<double>(t.host_cache_bytes) / 1e9;
    pe.config.hicache.write_policy = sim::WritePolicy::write_back;
  } else {
    pe.config.hicache = sim::HiCacheConfig{};
  }
}

// A launcher's speculation (inferencex_map.h) on a rank's config.
void apply_launcher_speculation(PointEngine& pe, const LauncherSpeculation& ls) {
  auto& spec = pe.config.spec;
  if (ls.draft_tokens == 0) {
    spec.enabled = false;
    pe.sizing.push_back("speculation: the launcher serves this concurrency without a draft");
    return;
  }
  if (ls.block)
    spec.draft_block(ls.draft_tokens);
  else
    spec.draft_chain(ls.draft_tokens);
  spec.accept_length = ls.accept_length;
  pe.sizing.push_back(fmt(ls.block ? "speculation as the launcher runs it: a block of %.0f drafted in one forward, "
                                     "acceptance length %.2f"
                                   : "speculation as the launcher runs it: %.0f draft steps, acceptance length %.2f",
                          ls.draft_tokens, ls.accept_length));
}

}  // namespace

std::vector<PointEngine> engines_for(const Recipe& r, const ExpandedPoint& p, const sim::EngineCosts& costs,
                                     const sim::ModelSpec* model, const sim::HardwareSpec* hw) {
  std::vector<PointEngine> out;
  const auto& e = *p.entry;
  if (!e.multinode()) {
    PointEngine pe{"", 1, e.tp, 1, engine_config_for(p, costs), std::nullopt, {}};
    // The server's environment turns vLLM's Rust front end on as an env
    // word in its command does (sim/engine_config.h).
    if (const auto it = r.server_env.find(sim::kRustFrontendEnv);
        it != r.server_env.end() && sim::turns_on_rust_frontend(it->second))
      sim::use_rust_frontend(pe.config);
    // The launcher's attention kernels, its drafter's included, whether or
    // not a command was generated for the entry.
    if (const auto attention = launcher_attention_backend(r.framework, r.model_prefix, r.sim_hardware_spec);
        !attention.target.empty()) {
      pe.config.attention_backend = attention.target;
      pe.config.draft_attention_backend = attention.draft;
    }
    // The launcher's draft length and golden acceptance length, in place of
    // the generic 3 steps at 3.39.
    if (pe.config.spec.enabled)
      if (const auto ls = launcher_speculation(r.framework, r.model_prefix, r.sim_hardware_spec, p.conc))
        apply_launcher_speculation(pe, *ls);
    // A single-node entry with no generated command (an offload backend the
    // generator does not write, e.g. vLLM with LMCache) still runs its
    // framework's scheduler at its launcher's memory fraction, as the
    // master config's note says, not SGLang's at 0.80.
    if (p.command.empty()) {
      if (runs_vllm_scheduler(r, p)) pe.config.scheduler = sim::SchedulerKind::vllm;
      pe.config.mem_fraction_static =
          launcher_memory_fraction(r.framework, r.model_prefix, r.sim_hardware_spec, e.tp, e.dp_attn, p.conc);
    }
    // A TensorRT-LLM launcher's options (its extra-options YAML).
    if (runs_tensorrt_llm(r))
      pe.trtllm = launcher_trtllm_settings(r.model_prefix, r.sim_hardware_spec, e.tp, p.conc);
    // A vLLM launcher's host offload: its connector's bytes a rank, store
    // policy and KV block, in place of the HiCache rule.
    if (pe.config.hicache.enabled && runs_vllm_scheduler(r, p))
      if (const auto h = launcher_host_offload(r.model_prefix, r.sim_hardware_spec, e.kv_offload_backend, e.tp,
                                               e.dp_attn, p.total_cpu_dram_gb)) {
        pe.config.hicache.size_gb = h->bytes_per_rank / 1e9;
        pe.config.hicache.write_policy = h->lazy ? sim::WritePolicy::write_back : sim::WritePolicy::write_through;
        if (h->block_size > 0) pe.config.page_size = h->block_size;
        pe.sizing.push_back(h->connector + fmt(": %.1f GB of host KV a rank, stored ", h->bytes_per_rank / 1e9) +
                            (h->lazy ? "when the GPU evicts a block" : "as blocks are computed") +
                            (h->block_size > 0 ? fmt(", %.0f-token blocks", h->block_size) : std::string()));
      }
    if (e.dp_attn || e.pp > 1 || e.pcp > 1) {
      WorkerSpec w;
      w.num_worker = 1;
      w.tp = e.tp;
      w.ep = e.ep;
      w.pp = e.pp;
      w.pcp = e.pcp;
      w.dp_attn = e.dp_attn;
      shape(pe, w, p.conc);
      if (pe.dp > 1) {
        // SGLang with DP attention divides --chunked-prefill-size by the DP
        // size (python/sglang/srt/server_args.py, the data-parallelism
        // handling; InferenceX's DeepSeek-V4 launcher passes 8192 x TP for an
        // 8192-token budget a rank for that reason), and its tokenizer loops
        // serve all ranks: each simulated rank has its own front end, so it
        // gets its share of them.
        if (command_flag_value(p.command, "--chunked-prefill-size"))
          pe.config.chunked_prefill_size = std::max(1, pe.config.chunked_prefill_size / pe.dp);
        pe.config.tokenizer_workers = std::max(1, pe.config.tokenizer_workers / pe.dp);
      }
    }
    out.push_back(std::move(pe));
  } else {
    for (const char* role : {"prefill", "decode"}) {
      const WorkerSpec& w = std::string(role) == "prefill" ? *e.prefill : *e.decode;
      if (w.num_worker == 0) continue;
      // The pool's flags from its srt-slurm recipe, read as a launcher's
      // command would be (srt_slurm_recipe.h). Without them nothing says
      // its memory fraction: a vLLM worker gets vLLM's default
      // --gpu-memory-utilization, 0.9 (vllm/config/cache.py), instead of the
      // 0.80 taken for the others.
      ExpandedPoint pool = p;
      pool.command = w.server_command;
      PointEngine pe{role, w.num_worker, w.gpus(), 1, engine_config_for(pool, costs), std::nullopt, {}};
      if (pool.command.empty() && runs_vllm_scheduler(r, p)) {
        pe.config.scheduler = sim::SchedulerKind::vllm;
        pe.config.mem_fraction_static = 0.90;
      }
      if (std::string(role) == "decode") {  // InferenceX budgets DRAM offload for the prefill side only
        if (!command_flag_value(pool.command, "--page-size") && !command_flag_value(pool.command, "--block-size"))
          pe.config.page_size = 1;
        pe.config.hicache = sim::HiCacheConfig{};
      }
      shape(pe, w, p.conc);
      apply_recipe_running_cap(pe, pool.command);
      pe.trtllm = w.trtllm;
      out.push_back(std::move(pe));
    }
  }
  if (!model) return out;
  for (auto& pe : out) {
    const bool spec = pe.config.spec.enabled && model->mtp;
    if (pe.gpus != pe.config.tp) {
      // One rank holds 1/gpus of the weights (under DP attention, its share
      // of the attention and the embedding whole) while its KV is sharded
      // over config.tp.
      const double replicated = pe.dp > 1 ? model->dp_attention_replicated_bytes : 0.0;
      pe.model = sim::rank_model(*model, pe.gpus, pe.config.tp, pe.dp > 1);
      pe.sizing.push_back(
          (pe.dp > 1 ? fmt("DP attention: %.0f DP ranks of attention TP%.0f on %.0f GPUs", pe.dp, pe.config.tp, pe.gpus)
                     : fmt("TP%.0f x PP/PCP on %.0f GPUs", pe.config.tp, pe.gpus)) +
          fmt("; weights over all %.0f GPUs (%.2f GB per rank", pe.gpus,
              (pe.model->total_weight_bytes() +
               (spec ? pe.model->mtp->weight_bytes + pe.model->mtp->own_embed_head_bytes : 0)) /
                  pe.config.tp / 1e9) +
          (replicated > 0 ? fmt(", the attention and embedding's %.2f GB whole on each", replicated / pe.config.tp / 1e9)
                          : std::string()) +
          fmt("), KV and state sharded over TP%.0f", pe.config.tp));
    }
    if (pe.recipe_running_cap > 0)
      pe.sizing.push_back(fmt("running requests per rank = the recipe's cap %.0f", pe.recipe_running_cap) +
                          (pe.config.max_running_requests != pe.recipe_running_cap
                               ? fmt(" / %.0f DP ranks = %.0f", pe.dp, pe.config.max_running_requests)
                               : std::string()));
    else if (pe.dp > 1 || pe.workers > 1)
      pe.sizing.push_back(fmt("running requests per rank = ceil(2 x conc %.0f / (%.0f engines x %.0f DP ranks)) = %.0f",
                              p.conc, pe.workers, pe.dp, pe.config.max_running_requests));
  }
  if (runs_tensorrt_llm(r) && hw) {
    for (auto& pe : out) {
      const auto& m = pe.model ? *pe.model : *model;
      // The draft's weights only where this role runs MTP (a TensorRT-LLM
      // recipe's role without speculative_config loads none).
      const bool spec = (pe.trtllm ? pe.trtllm->max_draft_len > 0 : pe.config.spec.enabled) && m.mtp;
      const double draft = spec ? m.mtp->weight_bytes + m.mtp->own_embed_head_bytes : 0.0;
      apply_trtllm(pe, (m.total_weight_bytes() + draft) / std::max(1, pe.config.tp), hw->hbm_usable_bytes);
    }
  }
  return out;
}

}  // namespace agentperf::recipe
