// The AgentX validation set: published InferenceX AgentX runs (one-hour
// AIPerf replays of the Claude-Code Weka traces against real SGLang and
// vLLM deployments; data/validation/agentx_points.json, sources in each
// series and docs/sim-validation-sources.md), and how one is replayed on
// the simulator to score it (`agentperf sim validate --agentx`).
//
// The step-level set (sim/validation.h) scores one engine step shape at a
// time: fixed-length random prompts, one metric each. An AgentX point is a
// whole deployment under the real workload: lanes of session trees whose
// prompts are ~96 % cached prefix, subagents, idle gaps, t* warmup; the
// numbers InferenceX publishes (total and output tokens/s per GPU, mean
// TTFT and TPOT, p50 TTFT, interactivity, the observed cache hit) all come
// out of one replay. So a point is replayed exactly as `sweep --dry-run`
// replays a recipe point: the replay schedule (replay/virtual_replay.h)
// over the corpus the entry replays (a synthetic stand-in of the same
// statistics: `synth:cc-weka-256k`, or `synth:cc-weka-1m` for the
// unfiltered corpus the GLM, DeepSeek-V4, Kimi and MiniMax entries use),
// on engines configured as the entry's launcher configures SGLang, and the
// metrics are read from the same InferenceX aggregate a measured replay
// writes.
//
// Series, not points, are the unit of the data: one deployment (entry,
// topology, offload, speculative decoding, image) measured at several
// concurrencies in one source. The split into a fitting half and a
// held-out half is by whole series (a series' points share everything but
// the lane count, so splitting inside one would leak), fixed in the data
// before any prediction was looked at. A series that reruns another
// (`rerun_of`: the same deployment measured again, usually on a newer
// image) takes its original's split and gives the run-to-run spread that
// each prediction's error is read against.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine_config.h"
#include "sim/engine_costs.h"
#include "trace/weka_trace.h"

namespace agentperf::sweep {

// One deployment as its source and the entry's launcher describe it.
struct AgentxSeries {
  std::string id, split, family;
  std::string master_key;   // InferenceX config key
  std::string engine;       // sglang | vllm: the scheduler the simulator follows
  std::string engine_image;
  std::string model_spec, hardware;  // simulator specs (data/models, data/hardware)
  int num_gpus = 1, tp = 1, ep = 1;
  bool dp_attention = false;  // DP ranks of attention TP1, each its own KV pool and radix cache
  // A multinode deployment (InferenceX's prefill/decode WorkerConfig): its
  // worker pools, run as a sweep's dry run runs them (sweep/point_ranks.h,
  // multinode_ranks): an aggregated one (no decode workers) as replicas, a
  // disaggregated one as prefill and decode pools with the KV transfer
  // between. tp/ep/dp_attention above then describe nothing on their own.
  struct Workers {
    int workers = 0, tp = 1, ep = 1;
    bool dp_attention = false;
  };
  std::optional<Workers> prefill, decode;
  std::string kv_offload = "none";  // none | dram (HiCache)
  std::string runner;                // InferenceX runner: its host DRAM sizes the HiCache pool
  double dram_utilization = 0.8;
  // Speculative decoding as the series ran it (enabled: method mtp or
  // dspark): the draft's shape and the golden acceptance length.
  sim::SpecDecodeConfig spec;
  int kv_dtype_bytes = 0;  // 0: the spec's
  double mem_fraction_static = 0.80;  // the field, else the launcher flags' --mem-fraction-static, else 0.80
  // The scheduling and memory flags the entry's launcher passes to the
  // engine, as written in the launcher at the revision the series notes
  // cite ("--chunked-prefill-size 65536 --prefill-decode-interval 10 ..."):
  // read as a recipe's server command is (recipe/point_engine_config.h),
  // --swa-full-tokens-ratio and --swa-prefix-tails included.
  std::string launcher_flags;
  std::int64_t max_total_tokens = 0;  // the launcher's --max-total-tokens (0: none)
  std::int64_t context_length = 0;    // the launcher's --context-length (0: the spec's max_context)
  std::string corpus;  // synth preset name
  std::string rerun_of;
  // A series whose source shows a KV-cache cliff: the last concurrency the
  // source calls healthy (0: no cliff published). Points past it are scored
  // by where the cliff falls, not by MAPE: in the collapsed regime TTFT
  // runs to minutes and its error says only how deep into thrashing a
  // point is.
  int cliff_after = 0;
  std::string excluded;  // non-empty: shown, not scored, for this reason (stated before any prediction)
  std::string source, notes;
};

struct AgentxPoint {
  std::string id, series;
  int concurrency = 1;
  std::map<std::string, double> published;  // metric name -> value (agentx_metric_names())
  std::string source_detail;
  std::string excluded;
};

struct AgentxSet {
  std::string source;
  std::map<std::string, AgentxSeries> series;
  std::vector<AgentxPoint> points;
  const AgentxSeries& series_of(const AgentxPoint& p) const { return series.at(p.series); }
};

// The metrics a point may publish, with their units:
//   total_tok_s_gpu, output_tok_s_gpu   tokens/s per GPU (cached input counts)
//   ttft_mean_ms, ttft_p50_ms, ttft_p90_ms, tpot_mean_ms
//   interactivity_p50                   tokens/s per user (1 / ITL)
//   e2e_interactivity_p90               InferenceX's p90 of OSL / E2E latency
//   cache_hit_observed                  the engine's prefix hit over profiling (0-1)
const std::vector<std::string>& agentx_metric_names();

// "builtin" (the shipped set) or a path. Throws UserError naming the file,
// the series or point and the field.
AgentxSet load_agentx_set(const std::string& name_or_path);

struct AgentxPrediction {
  std::map<std::string, double> metrics;  // every agentx_metric_names() entry the run produced
  double cpu_seconds = 0, virtual_seconds = 0;
  long long requests = 0;
  // Where the time went (profiling requests; sim/virtual_client.h): the
  // mean TTFT's parts, in ms, and the decode side: the mean decode round,
  // TPOT from decode rounds alone (round / accept length) and the share of
  // the engines' busy time spent in prefill steps (the decode batch waits
  // through them; SGLang does not mix them by default).
  std::map<std::string, double> breakdown;
  std::string binding_pool;  // sim::binding_pool of the point's engines (kv, state, running_cap, none)
  std::string failure;  // non-empty: the replay aborted (gate) or could not run
};

struct AgentxPredictOptions {
  double duration_s = 3600;  // the published runs' length
  std::int64_t first_trace = 0;  // the corpus index the lanes start from (replay::ReplayConfig::first_trace)
  std::string corpus;            // non-empty: this preset instead of the series' own (a what-if)
  // Preset name -> a Weka trace file (or directory) replayed in its place,
  // rows in file order: the real corpus where the user has it, so the
  // lanes replay the rows and t* the published hour did (AIPerf's Weka
  // loaders sample sequentially: docs/agentx.md).
  std::map<std::string, std::string> corpus_files;
  // Engine costs per engine kind ("sglang", "vllm"): the shipped profiles
  // unless replaced.
  std::function<sim::EngineCosts(const std::string& engine)> costs;
};

// The traces of a corpus source (corpus_source's "synth:PRESET" or a file),
// read once and shared by its points. A file is read as InferenceX has
// AIPerf load the corpus: its first 393 traces (--num-dataset-entries 393,
// benchmarks/benchmark_lib.sh @ 843c6254ff69), in file order.
const std::vector<trace::WekaTrace>& agentx_corpus(const std::string& source);
// The preset a series replays under these options: the override, else its own.
const std::string& corpus_of(const AgentxSeries& s, const AgentxPredictOptions& o);
// Where that preset's traces come from: the file given for it in
// o.corpus_files, else "synth:PRESET" (the synthetic stand-in).
std::string corpus_source(const AgentxSeries& s, const AgentxPredictOptions& o);

AgentxPrediction predict_agentx_point(const AgentxSet& set, const AgentxPoint& p, const AgentxPredictOptions& o);

// Whether a point is past its series' published cliff (scored by cliff position).
bool past_published_cliff(const AgentxSet& set, const AgentxPoint& p);

// The cliff a series' predictions show: the first concurrency (in the
// series' own points, ascending) whose predicted cache hit falls below
// `collapse_share` of the highest predicted hit at a lower concurrency, and
// the concurrency before it; nullopt when the hit never falls that far.
struct PredictedCliff {
  int last_healthy = 0, first_collapsed = 0;
};
std::optional<PredictedCliff> predicted_cliff(const std::vector<std::pair<int, double>>& conc_and_hit,
                                              double collapse_share = 0.8);

}  // namespace agentperf::sweep
