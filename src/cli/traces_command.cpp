#include "cli/traces_command.h"

#include <zstd.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "cli/cli_numbers.h"
#include "load/profile_config.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "metrics/progress.h"
#include "trace/corpus_stats.h"
#include "trace/prompt_builder.h"
#include "trace/session_tree.h"
#include "trace/synth.h"
#include "trace/trace_loader.h"

namespace agentperf::cli {

struct TracesCommand {
  CLI::App* synth = nullptr;
  CLI::App* inspect = nullptr;
  trace::SynthOptions synth_opts;
  std::string out_path;
  std::string in_path;
  std::string format = "auto";
  trace::LoadOptions load;
  std::int64_t max_context = 0, entries = 0;
  bool quiet = false;  // no progress lines
};

std::shared_ptr<TracesCommand> add_traces_command(CLI::App& app) {
  auto tc = std::make_shared<TracesCommand>();
  auto* traces = app.add_subcommand("traces", "Agentic trace datasets (Weka format)");
  traces->require_subcommand(1);
  tc->synth = traces->add_subcommand("synth", "Write synthetic Weka-format traces (seeded, deterministic)");
  auto& o = tc->synth_opts;
  // The trace loaders tell JSON Lines from one JSON document by the name
  // (.jsonl[.zst]), so a file written under another name could not be read
  // back: refuse the name here rather than at the replay.
  tc->synth->add_option("-o,--output", tc->out_path, "Output file: .jsonl, or .jsonl.zst to compress")
      ->required()
      ->check(CLI::Validator(
          [](std::string& path) -> std::string {
            auto ends = [&](std::string_view s) { return path.size() > s.size() && path.ends_with(s); };
            return ends(".jsonl") || ends(".jsonl.zst") ? std::string()
                                                        : path + " does not end in .jsonl or .jsonl.zst";
          },
          "FILE.jsonl[.zst]"));
  // Defined before the other options: CLI11 applies options in definition
  // order, so flags given with --preset override the preset's values.
  tc->synth
      ->add_option_function<std::string>(
          "--preset",
          [&o](const std::string& name) {
            try {
              o = trace::synth_preset(name);
            } catch (const std::invalid_argument& e) {
              throw CLI::ValidationError("--preset", e.what());
            }
          },
          "Start from a named corpus shape: cc-weka-256k (the AgentX 256k trace set's published statistics) or "
          "cc-weka-1m (the unfiltered 1M-context set the GLM, DeepSeek-V4, Kimi and MiniMax entries replay); "
          "docs/traces.md")
      ->check(CLI::IsMember(trace::synth_preset_names()));
  tc->synth->add_option("--traces", o.traces, "Number of traces")->transform(int_in(1, 10000000))->capture_default_str();
  tc->synth->add_option("--seed", o.seed, "Seed")->check(uint64_any())->capture_default_str();
  tc->synth->add_option("--mean-turns", o.mean_turns, "Mean top-level calls per trace")->check(real_in(0, 1000000, true))->capture_default_str();
  tc->synth->add_option("--system-tokens", o.system_tokens, "System prompt tokens")->transform(tokens_in(0, limits::max_tokens))->capture_default_str();
  tc->synth->add_option("--tool-tokens", o.tool_tokens, "Tool definition tokens")->transform(tokens_in(0, limits::max_tokens))->capture_default_str();
  tc->synth->add_option("--mean-turn-input", o.mean_turn_input, "New user/tool tokens per turn (lognormal mean)")->check(real_in(0, limits::max_tokens, true, "a number of tokens"))->capture_default_str();
  tc->synth->add_option("--mean-output", o.mean_output, "Output tokens per call (lognormal mean)")->check(real_in(0, limits::max_tokens, true, "a number of tokens"))->capture_default_str();
  tc->synth->add_option("--max-context", o.max_context,
                        "Context at which a session compacts back to its system prompt and tools (must leave room "
                        "for them, a turn and its answers)")->transform(tokens_in(1, limits::max_tokens))->capture_default_str();
  tc->synth->add_option("--subagent-probability", o.subagent_probability, "Chance of a subagent fan-out after a turn")->check(real_in(0, 1))->capture_default_str();
  tc->synth->add_option("--max-fanout", o.max_fanout, "Most subagents in one fan-out")->transform(int_in(1, 1000))->capture_default_str();
  tc->synth->add_flag("--256k", o.apply_256k_rule,
                      "Drop each made call with in+out > 256,000 (the rule that makes the 256k AgentX corpus from the "
                      "unfiltered one): --preset cc-weka-1m --256k makes the 1M preset's sessions as the 256k corpus "
                      "would hold them");
  tc->synth->add_option("--mean-think-time", o.mean_think_time, "Mean seconds between a call's end and the next call")->check(seconds_in(0, limits::max_seconds))->capture_default_str();
  tc->synth->add_flag("-q,--quiet", tc->quiet, "No progress lines");

  tc->inspect = traces->add_subcommand("inspect", "Load traces (file, directory, .zst), build session trees and prompts, print statistics");
  tc->inspect->add_option("path", tc->in_path, "Trace file or directory, or synth:PRESET")->required();
  tc->inspect->add_option("--trace-format", tc->format, "weka, mooncake, or auto (mooncake rows have input_length)")
      ->check(CLI::IsMember({"auto", "weka", "mooncake"}))->capture_default_str();
  tc->inspect->add_option("--max-context-length", tc->max_context, "Drop traces whose peak in+out exceeds this")->transform(tokens_in(1, limits::max_tokens));
  tc->inspect->add_flag("--256k", tc->load.variant_256k, "Drop requests with in+out > 256,000 (the _256k corpus rule)");
  tc->inspect->add_option("--num-dataset-entries", tc->entries, "Keep the first N traces")->transform(int_in(1, 1000000000));
  tc->inspect->add_flag("-q,--quiet", tc->quiet, "No progress lines");
  return tc;
}

namespace {
int run_synth(TracesCommand& tc) {
  // Made and serialized one trace at a time (progress: traces done).
  {
    // A session compacts back to its system prompt and tool definitions, so
    // --max-context bounds whole prompts only when that fixed part, a turn
    // and room for the answer fit under it (8000 under the default 20,000
    // fixed tokens compacted at every turn and still wrote 35.9k prompts).
    const auto& o = tc.synth_opts;
    const double fixed = static_cast<double>(o.system_tokens + o.tool_tokens);
    const double need = fixed + o.mean_turn_input + 4 * o.mean_output;
    if (static_cast<double>(o.max_context) < need)
      throw UserError("--max-context " + std::to_string(o.max_context) + " cannot bound the prompts: every prompt starts with " +
                      std::to_string(o.system_tokens) + " system + " + std::to_string(o.tool_tokens) +
                      " tool tokens, and a turn needs about " + std::to_string(static_cast<long long>(o.mean_turn_input)) +
                      " more plus room for 4 answers of " + std::to_string(static_cast<long long>(o.mean_output)) +
                      " (at least " + std::to_string(static_cast<long long>(need)) +
                      "); lower --system-tokens / --tool-tokens / --mean-turn-input, or raise --max-context");
  }
  CountProgress progress("agentperf: synthesizing traces", tc.quiet);
  progress.start(tc.synth_opts.traces, "traces");
  std::string data;
  std::int64_t requests = 0;
  for (int i = 0; i < tc.synth_opts.traces; ++i) {
    const auto t = trace::synthesize_trace(tc.synth_opts, i);
    data += trace::to_json_line(t);
    data += '\n';
    requests += t.request_count();
    progress.add();
  }
  progress.finish(std::to_string(requests) + " requests, " + std::to_string((data.size() + 500000) / 1000000) + " MB of JSON");
  const bool zst = tc.out_path.size() > 4 && tc.out_path.substr(tc.out_path.size() - 4) == ".zst";
  if (zst) {
    std::string packed(ZSTD_compressBound(data.size()), '\0');
    const auto n = ZSTD_compress(packed.data(), packed.size(), data.data(), data.size(), 3);
    if (ZSTD_isError(n)) throw UserError(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
    packed.resize(n);
    data = std::move(packed);
  }
  write_file_atomically(tc.out_path, data);
  std::printf("wrote %d traces, %lld requests to %s\n", tc.synth_opts.traces, static_cast<long long>(requests),
              tc.out_path.c_str());
  return 0;
}

int run_inspect(TracesCommand& tc) {
  if (tc.max_context > 0) tc.load.max_context_length = tc.max_context;
  if (tc.entries > 0) tc.load.num_dataset_entries = tc.entries;
  const auto t0 = std::chrono::steady_clock::now();
  trace::LoadStats stats;
  // One step: each trace's session tree and prompts are built as it is read.
  CountProgress loading("agentperf: loading traces and building session trees and prompts", tc.quiet);
  trace::LoadOptions load = tc.load;
  load.progress = &loading;
  // One trace at a time, from the file as it is read: a corpus of any size
  // is inspected in the memory of its largest trace plus per-request counts.
  std::int64_t streams = 0, background = 0, dropped = 0, turns = 0, hit = 0, blocks = 0, peak = 0, prompt_tokens = 0;
  std::int64_t flattened = 0, seams = 0;
  std::size_t distinct_blocks = 0;
  trace::CorpusStatsAccumulator corpus;
  std::vector<trace::TraceWorkingSet> working_sets;
  std::vector<double> uncached;  // per request: prompt tokens after its theoretical prefix hit
  double build_s = 0;
  trace::for_each_trace(tc.in_path, tc.format, load, &stats, [&](trace::WekaTrace&& t) {
    const auto b0 = std::chrono::steady_clock::now();
    const auto tree = trace::build_session_tree(t);
    trace::PromptBuilder builder(t, 42);
    streams += static_cast<std::int64_t>(tree.streams.size());
    dropped += tree.dropped_subagents;
    flattened += tree.flattened_agents;
    seams += tree.seams;
    for (std::size_t s = 0; s < tree.streams.size(); ++s) {
      background += tree.streams[s].background;
      for (std::size_t k = 0; k < tree.streams[s].turns.size(); ++k) {
        const auto& turn = tree.streams[s].turns[k];
        ++turns;
        hit += turn.theoretical_hit_blocks;
        uncached.push_back(static_cast<double>(
            std::max<std::int64_t>(0, turn.call->in - turn.theoretical_hit_blocks * t.block_size)));
        blocks += static_cast<std::int64_t>(turn.call->hash_ids.size());
        peak = std::max(peak, turn.call->in + turn.call->out);
        prompt_tokens += builder.build(*turn.call, {static_cast<int>(s), static_cast<int>(k)}).tokens;
      }
    }
    distinct_blocks += builder.cached_blocks();
    corpus.add(t);
    working_sets.push_back(trace::time_averaged_working_set(t, 300));
    build_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - b0).count();
  });
  const auto t1 = std::chrono::steady_clock::now();
  auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  std::printf("files %lld, traces %lld read / %lld kept (%lld over --max-context-length), requests %lld read / %lld kept "
              "(%lld dropped by --256k)\n",
              static_cast<long long>(stats.files), static_cast<long long>(stats.traces_read),
              static_cast<long long>(stats.traces_kept), static_cast<long long>(stats.dropped_by_context),
              static_cast<long long>(stats.requests_read), static_cast<long long>(stats.requests_kept),
              static_cast<long long>(stats.dropped_256k_requests));
  std::printf("streams %lld (%lld subagents and flattened agents, %lld flattened, %lld compaction seams, %lld background, "
              "%lld dropped without a parent turn), turns %lld\n",
              static_cast<long long>(streams), static_cast<long long>(streams - stats.traces_kept),
              static_cast<long long>(flattened), static_cast<long long>(seams), static_cast<long long>(background),
              static_cast<long long>(dropped), static_cast<long long>(turns));
  std::printf("peak context %lld tokens, prompt tokens %lld, distinct blocks %zu, theoretical prefix-cache hit %.2f%%\n",
              static_cast<long long>(peak), static_cast<long long>(prompt_tokens), distinct_blocks,
              blocks ? 100.0 * static_cast<double>(hit) / static_cast<double>(blocks) : 0.0);
  const auto unc = summarize(uncached);
  std::printf("uncached prompt tokens per request (after the theoretical hit): mean %.0f, p50 %.0f, p90 %.0f, p99 %.0f\n",
              unc.avg, unc.percentile(50), unc.percentile(90), unc.percentile(99));
  std::printf("load %.2f s, session trees + prompts %.2f s\n", secs(t0, t1) - build_s, build_s);
  const auto cs = corpus.result();
  std::printf("requests %lld: %lld main-agent, %lld in %lld subagent groups (%.1f per group); %.1f%% of traces use "
              "subagents; main-agent calls per trace mean %.1f, p50 %.0f, p90 %.0f\n",
              static_cast<long long>(cs.requests), static_cast<long long>(cs.main_calls),
              static_cast<long long>(cs.subagent_calls), static_cast<long long>(cs.subagent_groups),
              cs.subagent_groups ? double(cs.subagent_calls) / double(cs.subagent_groups) : 0.0,
              cs.traces ? 100.0 * double(cs.traces_with_subagents) / double(cs.traces) : 0.0,
              cs.main_calls_per_trace.avg, cs.main_calls_per_trace.percentile(50), cs.main_calls_per_trace.percentile(90));
  std::printf("input tokens per request: mean %.0f, p50 %.0f, p90 %.0f, p99 %.0f, max %.0f; output mean %.0f, p50 %.0f\n",
              cs.input_tokens.avg, cs.input_tokens.percentile(50), cs.input_tokens.percentile(90),
              cs.input_tokens.percentile(99), cs.input_tokens.max, cs.output_tokens.avg, cs.output_tokens.percentile(50));
  std::printf("main-agent calls: input mean %.0f, p50 %.0f, p90 %.0f, p99 %.0f; output mean %.0f, p50 %.0f, p90 %.0f\n",
              cs.main_input_tokens.avg, cs.main_input_tokens.percentile(50), cs.main_input_tokens.percentile(90),
              cs.main_input_tokens.percentile(99), cs.main_output_tokens.avg, cs.main_output_tokens.percentile(50),
              cs.main_output_tokens.percentile(90));
  std::printf("a session's main-agent context, time-averaged over its span: mean %.0f, p50 %.0f tokens\n",
              cs.session_context.avg, cs.session_context.percentile(50));
  std::printf("subagent calls: input mean %.0f, p50 %.0f, p90 %.0f; output mean %.0f, p50 %.0f\n",
              cs.subagent_input_tokens.avg, cs.subagent_input_tokens.percentile(50),
              cs.subagent_input_tokens.percentile(90), cs.subagent_output_tokens.avg,
              cs.subagent_output_tokens.percentile(50));
  std::printf("main-agent end-to-start gaps: p50 %.1f s, p90 %.1f s, p99 %.0f s, mean %.0f s; sessions wait %.1f%% of "
              "their span\n",
              cs.main_gap_s.percentile(50), cs.main_gap_s.percentile(90), cs.main_gap_s.percentile(99), cs.main_gap_s.avg,
              100 * cs.waiting_share);
  std::vector<double> means;
  for (const auto& w : working_sets) means.push_back(w.mean_tokens);
  const auto wss = summarize(means);
  std::printf("working set of a lane (time-averaged under replay, idle gaps capped at 300 s): %.0f tokens "
              "(per trace p50 %.0f, p90 %.0f)\n",
              trace::lane_working_set(working_sets), wss.percentile(50), wss.percentile(90));
  return 0;
}
}  // namespace

int execute_traces_command(TracesCommand& tc) {
  if (tc.synth->parsed()) return run_synth(tc);
  if (tc.inspect->parsed()) return run_inspect(tc);
  return -1;
}

}  // namespace agentperf::cli
