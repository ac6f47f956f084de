#include "cli/sim_validate_agentx.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/atomic_file.h"
#include "common/error.h"
#include "metrics/stats.h"
#include "sim/cost_fit.h"
#include "sim/engine_costs.h"
#include "sweep/agentx_validation.h"
#include "trace/synth.h"

namespace agentperf::cli {
namespace {

using sweep::AgentxPoint;
using sweep::AgentxPrediction;
using sweep::AgentxSet;

// The metrics a table shows, with their short names.
const std::vector<std::pair<std::string, std::string>>& shown_metrics() {
  static const std::vector<std::pair<std::string, std::string>> m = {
      {"total_tok_s_gpu", "tput/GPU"},   {"output_tok_s_gpu", "out/GPU"},  {"ttft_mean_ms", "TTFT mean"},
      {"ttft_p50_ms", "TTFT p50"},       {"ttft_p90_ms", "TTFT p90"},      {"tpot_mean_ms", "TPOT"},
      {"interactivity_p50", "intvty p50"}, {"e2e_interactivity_p90", "e2e intvty p90"},
      {"cache_hit_observed", "hit"}};
  return m;
}

struct Scored {
  const AgentxPoint* p = nullptr;
  AgentxPrediction pred;
  std::map<std::string, double> error;  // metric -> signed relative error
  // With --sample-orders K > 1: metric -> [min, max] over the K trace
  // orders (the prediction itself included), and the orders that failed.
  std::map<std::string, std::pair<double, double>> sampled;
  std::vector<std::string> sampled_failures;
  // The predicted cache hit under each trace order (0: the prediction's
  // own), nullopt where that order failed; a run that reported no cached
  // token counts as 0 (collapsed). The cliff table places each series'
  // cliff under every order.
  std::vector<std::optional<double>> order_hits;
};

std::string join_series(const std::vector<std::string>& texts) {
  std::string s;
  for (const auto& t : texts) s += (s.empty() ? "" : "' or '") + t;
  return s;
}

// The hit a prediction reports, 0 when it has none, nullopt when it failed.
std::optional<double> hit_of(const AgentxPrediction& p) {
  if (!p.failure.empty()) return std::nullopt;
  auto it = p.metrics.find("cache_hit_observed");
  return it == p.metrics.end() ? 0.0 : it->second;
}

bool inside(const std::pair<double, double>& range, double v) { return range.first <= v && v <= range.second; }

// Input tokens per output token of a run, from its total and output
// throughputs (total / output - 1); nullopt unless both are there. The
// published and the predicted ones differ when the simulated hour replays
// other turns than the real one did (docs/sim-validation.md, "Input per
// output token"): a total-throughput miss that this explains is the
// sample's, not the engine's.
std::optional<double> input_per_output(const std::map<std::string, double>& m) {
  auto t = m.find("total_tok_s_gpu"), o = m.find("output_tok_s_gpu");
  if (t == m.end() || o == m.end() || o->second <= 0) return std::nullopt;
  return t->second / o->second - 1;
}

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f %%", v);
  return b;
}

std::string num(double v) {
  char b[32];
  if (v >= 100) std::snprintf(b, sizeof b, "%.0f", v);
  else if (v >= 1) std::snprintf(b, sizeof b, "%.2f", v);
  else std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

// Run-to-run spread per metric: for every rerun series, |rerun - original| /
// original at each concurrency both published, pooled; the median.
std::map<std::string, double> rerun_spread(const AgentxSet& set) {
  std::map<std::string, std::vector<double>> diffs;
  for (const auto& p : set.points) {
    const auto& s = set.series_of(p);
    if (s.rerun_of.empty()) continue;
    for (const auto& q : set.points) {
      if (q.series != s.rerun_of || q.concurrency != p.concurrency) continue;
      for (const auto& [m, v] : p.published)
        if (auto it = q.published.find(m); it != q.published.end()) diffs[m].push_back(std::abs(v - it->second) / it->second);
    }
  }
  std::map<std::string, double> out;
  for (auto& [m, d] : diffs) {
    std::sort(d.begin(), d.end());
    out[m] = percentile_sorted(d, 50);
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> parse_corpus_files(const std::vector<std::string>& items) {
  std::map<std::string, std::string> out;
  const auto presets = trace::synth_preset_names();
  std::string known;
  for (const auto& p : presets) known += (known.empty() ? "" : ", ") + p;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    const std::string preset = eq == std::string::npos ? std::string() : item.substr(0, eq);
    const std::string path = eq == std::string::npos ? std::string() : item.substr(eq + 1);
    if (eq == std::string::npos || path.empty())
      throw UserError("--corpus-file '" + item + "': expected PRESET=PATH (a trace file or directory for the series "
                      "that replay PRESET, one of " + known + ")");
    if (std::find(presets.begin(), presets.end(), preset) == presets.end())
      throw UserError("--corpus-file '" + item + "': unknown corpus preset '" + preset + "' (known: " + known + ")");
    if (!out.emplace(preset, path).second)
      throw UserError("--corpus-file: " + preset + " is given twice ('" + out[preset] + "' and '" + path + "')");
  }
  return out;
}

int run_sim_validate_agentx(const AgentxValidateOptions& o) {
  AgentxSet set = sweep::load_agentx_set(o.points);
  std::vector<const AgentxPoint*> todo;
  for (const auto& p : set.points) {
    const auto& s = set.series_of(p);
    if (!o.only.empty() && std::none_of(o.only.begin(), o.only.end(), [&](const std::string& t) {
          return p.series.find(t) != std::string::npos;
        }))
      continue;
    if (!s.excluded.empty() || !p.excluded.empty()) continue;
    todo.push_back(&p);
  }
  if (todo.empty()) throw UserError("--agentx: no point of " + set.source + " to predict" +
                                    (o.only.empty() ? "" : " (none of a series matching --series '" + join_series(o.only) + "')"));
  sweep::AgentxPredictOptions po;
  po.duration_s = o.duration_s;
  po.corpus = o.corpus;
  po.corpus_files = parse_corpus_files(o.corpus_files);
  if (!o.engine_profile.empty()) {
    const sim::EngineCosts c = sim::load_engine_costs(o.engine_profile);
    po.costs = [c](const std::string&) { return c; };
  }
  auto corpus_of = [&](const AgentxPoint& p) { return sweep::corpus_source(set.series_of(p), po); };
  // The corpora first, one at a time (each point's replay reads them); a
  // file given for a corpus is read even when no chosen series replays it.
  for (const auto& [preset, path] : po.corpus_files) {
    std::size_t n = 0;
    try {
      n = sweep::agentx_corpus(path).size();
    } catch (const UserError& e) {
      throw UserError("--corpus-file " + preset + "=" + path + ": " + e.what());
    }
    if (!o.quiet)
      std::fprintf(stderr, "agentperf: series on %s replay %s (%zu traces, in file order)\n", preset.c_str(),
                   path.c_str(), n);
  }
  for (const auto* p : todo) (void)sweep::agentx_corpus(corpus_of(*p));

  std::vector<Scored> rows(todo.size());
  std::atomic<std::size_t> next{0};
  std::mutex print_mu;
  std::size_t done = 0;
  double cpu = 0;
  const int jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  // A point that cannot be predicted is a row with its failure, not an abort.
  auto predict = [&](const AgentxPoint& p, const sweep::AgentxPredictOptions& opts) {
    try {
      return sweep::predict_agentx_point(set, p, opts);
    } catch (const UserError& e) {
      AgentxPrediction failed;
      failed.failure = e.what();
      return failed;
    }
  };
  auto worker = [&] {
    for (std::size_t i; (i = next++) < todo.size();) {
      Scored& r = rows[i];
      r.p = todo[i];
      r.pred = predict(*r.p, po);
      for (const auto& [m, v] : r.p->published)
        if (auto it = r.pred.metrics.find(m); it != r.pred.metrics.end()) r.error[m] = (it->second - v) / v;
      double point_cpu = r.pred.cpu_seconds;
      if (o.sample_orders > 1) r.order_hits.assign(static_cast<std::size_t>(o.sample_orders), std::nullopt);
      if (o.sample_orders > 1 && r.pred.failure.empty()) {
        r.order_hits[0] = hit_of(r.pred);
        for (const auto& [m, v] : r.pred.metrics) r.sampled[m] = {v, v};
        const auto corpus = static_cast<std::int64_t>(sweep::agentx_corpus(corpus_of(*r.p)).size());
        for (int k = 1; k < o.sample_orders; ++k) {
          sweep::AgentxPredictOptions pk = po;
          pk.first_trace = k * corpus / o.sample_orders;
          const AgentxPrediction other = predict(*r.p, pk);
          point_cpu += other.cpu_seconds;
          if (!other.failure.empty()) {
            r.sampled_failures.push_back("first trace " + std::to_string(pk.first_trace) + ": " + other.failure);
            continue;
          }
          r.order_hits[static_cast<std::size_t>(k)] = hit_of(other);
          for (const auto& [m, v] : other.metrics)
            if (auto it = r.sampled.find(m); it != r.sampled.end())
              it->second = {std::min(it->second.first, v), std::max(it->second.second, v)};
        }
      }
      std::lock_guard lk(print_mu);
      ++done;
      cpu += point_cpu;
      if (!o.quiet) {
        std::string line;
        for (const auto& [m, e] : r.error) {
          char b[64];
          std::snprintf(b, sizeof b, " %s %+.0f%%", m.c_str(), 100 * e);
          line += b;
        }
        std::fprintf(stderr, "agentperf: [%zu/%zu] %s (%.1f s)%s%s\n", done, todo.size(), r.p->id.c_str(),
                     r.pred.cpu_seconds, line.c_str(), r.pred.failure.empty() ? "" : (" FAILED: " + r.pred.failure).c_str());
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min<int>(jobs, static_cast<int>(todo.size())); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  std::sort(rows.begin(), rows.end(), [&](const Scored& a, const Scored& b) {
    return a.p->series != b.p->series ? a.p->series < b.p->series : a.p->concurrency < b.p->concurrency;
  });

  const auto spread = rerun_spread(set);
  // MAPE per (split, metric), per (family, metric) over the held-out
  // series, and per (series, metric).
  std::map<std::string, std::map<std::string, std::vector<double>>> by_split, by_family, by_series;
  for (const auto& r : rows)
    for (const auto& [m, e] : r.error) {
      if (sweep::past_published_cliff(set, *r.p)) continue;  // scored by the cliff's position below
      const auto& s = set.series_of(*r.p);
      by_split[s.split][m].push_back(e);
      if (s.split == "held_out") by_family[s.family][m].push_back(e);
      by_series[s.id][m].push_back(e);
    }

  std::ostringstream md;
  md << "| point | split | family | conc |";
  for (const auto& [m, label] : shown_metrics()) md << " " << label << " |";
  md << "\n|---|---|---|---|";
  for (std::size_t i = 0; i < shown_metrics().size(); ++i) md << "---|";
  md << "\n";
  for (const auto& r : rows) {
    const auto& s = set.series_of(*r.p);
    md << "| " << r.p->id << " | " << s.split << (sweep::past_published_cliff(set, *r.p) ? ", past the cliff" : "") << " | "
       << s.family << " | " << r.p->concurrency << " |";
    for (const auto& [m, label] : shown_metrics()) {
      auto pub = r.p->published.find(m);
      auto pr = r.pred.metrics.find(m);
      if (pub == r.p->published.end()) {
        md << " |";
        continue;
      }
      char b[96];
      if (pr == r.pred.metrics.end())
        std::snprintf(b, sizeof b, " %s / - |", num(pub->second).c_str());
      else
        std::snprintf(b, sizeof b, " %s / %s (%+.0f %%)", num(pub->second).c_str(), num(pr->second).c_str(),
                      100 * r.error.at(m));
      md << b;
      if (auto sr = r.sampled.find(m); sr != r.sampled.end() && pr != r.pred.metrics.end())
        md << " [" << num(sr->second.first) << "-" << num(sr->second.second) << "]";
      if (pr != r.pred.metrics.end()) md << " |";
    }
    md << "\n";
  }
  md << "\nCells: published / predicted (signed error)"
     << (o.sample_orders > 1 ? " [lowest-highest prediction over " + std::to_string(o.sample_orders) + " trace orders]"
                             : std::string())
     << ". Points past a published cliff are scored by the cliff's position (below), not in the MAPE.\n\n";
  md << "| MAPE | ";
  for (const auto& [m, label] : shown_metrics()) md << label << " | ";
  md << "\n|---|";
  for (std::size_t i = 0; i < shown_metrics().size(); ++i) md << "---|";
  md << "\n";
  auto mape_row = [&](const std::string& name, const std::map<std::string, std::vector<double>>& errs) {
    md << "| " << name << " |";
    for (const auto& [m, label] : shown_metrics()) {
      auto it = errs.find(m);
      md << " " << (it == errs.end() ? "-" : pct(sim::mape_percent(it->second)) + " (" + std::to_string(it->second.size()) + ")") << " |";
    }
    md << "\n";
  };
  for (const auto& [split, errs] : by_split) mape_row(split == "fit" ? "fitting series" : "held-out series", errs);
  for (const auto& [fam, errs] : by_family) mape_row("held-out, " + fam, errs);
  if (o.sample_orders > 1) {
    // Over the points the MAPE scores: the median half-width of the sampled
    // range, relative to the prediction, and how many published values lie
    // inside it (held-out series).
    std::map<std::string, std::vector<double>> half;
    std::map<std::string, std::pair<int, int>> in_range;
    for (const auto& r : rows) {
      if (sweep::past_published_cliff(set, *r.p)) continue;
      for (const auto& [m, range] : r.sampled) {
        auto pr = r.pred.metrics.find(m);
        if (r.p->published.count(m) == 0 || pr == r.pred.metrics.end() || pr->second == 0) continue;
        half[m].push_back((range.second - range.first) / 2 / std::abs(pr->second));
        if (set.series_of(*r.p).split != "held_out") continue;
        ++in_range[m].second;
        if (inside(range, r.p->published.at(m))) ++in_range[m].first;
      }
    }
    md << "| sampling spread (median half-range, " << o.sample_orders << " trace orders) |";
    for (const auto& [m, label] : shown_metrics()) {
      auto it = half.find(m);
      if (it == half.end()) {
        md << " - |";
        continue;
      }
      std::sort(it->second.begin(), it->second.end());
      md << " " << pct(100 * percentile_sorted(it->second, 50)) << " |";
    }
    md << "\n| held-out: published inside the range |";
    for (const auto& [m, label] : shown_metrics()) {
      auto it = in_range.find(m);
      md << " " << (it == in_range.end() ? "-" : std::to_string(it->second.first) + " of " + std::to_string(it->second.second))
         << " |";
    }
    md << "\n";
  }
  md << "| run-to-run spread (median, reruns) |";
  for (const auto& [m, label] : shown_metrics()) {
    auto it = spread.find(m);
    md << " " << (it == spread.end() ? "-" : pct(100 * it->second)) << " |";
  }
  md << "\n";
  // Cliffs: where each series with a published collapse has it, and where
  // the predictions put it (predicted hit below 80 % of the best before).
  std::map<std::string, std::vector<const Scored*>> series_rows;
  for (const auto& r : rows) series_rows[r.p->series].push_back(&r);
  nlohmann::ordered_json cliffs = nlohmann::ordered_json::array();
  bool any_cliff = false;
  for (const auto& [sid, srows] : series_rows) {
    const auto& s = set.series.at(sid);
    if (s.cliff_after <= 0) continue;
    const bool orders = o.sample_orders > 1;
    if (!any_cliff)
      md << "\n| series (cliff published) | published: healthy -> collapsed | predicted | steps apart |"
         << (orders ? " over " + std::to_string(o.sample_orders) + " trace orders (steps apart) |" : std::string())
         << "\n|---|---|---|---|" << (orders ? "---|" : "") << "\n";
    any_cliff = true;
    std::vector<int> concs;
    std::vector<std::pair<int, double>> hits;
    for (const auto* r : srows) {
      concs.push_back(r->p->concurrency);
      // A replay with no cached token reported (or none at all): collapsed.
      hits.emplace_back(r->p->concurrency, hit_of(r->pred).value_or(0.0));
    }
    std::sort(concs.begin(), concs.end());
    int collapsed = 0;
    for (int c : concs)
      if (c > s.cliff_after) {
        collapsed = c;
        break;
      }
    auto index_of = [&](int c) { return static_cast<int>(std::lower_bound(concs.begin(), concs.end(), c) - concs.begin()); };
    // Where a set of hits puts the cliff, and how many of the series' steps
    // that is from the published one (none found: at least the steps left).
    struct Placement {
      std::optional<sweep::PredictedCliff> cliff;
      int steps = 0;
      bool within_one_step() const { return cliff && steps <= 1; }
      std::string span() const {
        return "c" + std::to_string(cliff->last_healthy) + " -> c" + std::to_string(cliff->first_collapsed);
      }
      void put(nlohmann::ordered_json& j) const {
        j["predicted_last_healthy"] = cliff ? nlohmann::ordered_json(cliff->last_healthy) : nlohmann::ordered_json(nullptr);
        j["predicted_collapsed"] = cliff ? nlohmann::ordered_json(cliff->first_collapsed) : nlohmann::ordered_json(nullptr);
        j["steps_apart"] = steps;
      }
    };
    auto place = [&](const std::vector<std::pair<int, double>>& h) {
      Placement pl{sweep::predicted_cliff(h)};
      pl.steps = pl.cliff ? std::abs(index_of(pl.cliff->last_healthy) - index_of(s.cliff_after))
                          : static_cast<int>(concs.size()) - index_of(s.cliff_after);
      return pl;
    };
    const Placement pc = place(hits);
    const std::string predicted = pc.cliff ? pc.span() : "none up to c" + std::to_string(concs.back());
    md << "| " << sid << " | c" << s.cliff_after << " -> c" << collapsed << " | " << predicted << " | "
       << (pc.cliff ? std::to_string(pc.steps) : ">= " + std::to_string(pc.steps)) << " |";
    nlohmann::ordered_json cliff = {{"series", sid}, {"published_last_healthy", s.cliff_after}, {"published_collapsed", collapsed}};
    pc.put(cliff);
    cliff["within_one_step"] = pc.within_one_step();
    if (orders) {
      // The same cliff under each trace order: how far the sample alone
      // moves it.
      std::string cells;
      int within = 0, placed = 0;
      nlohmann::ordered_json per_order = nlohmann::ordered_json::array();
      for (int k = 0; k < o.sample_orders; ++k) {
        std::vector<std::pair<int, double>> hk;
        bool complete = true;
        for (const auto* r : srows) {
          const auto& h = r->order_hits[static_cast<std::size_t>(k)];
          if (!h) complete = false;
          else hk.emplace_back(r->p->concurrency, *h);
        }
        if (!cells.empty()) cells += ", ";
        if (!complete) {
          cells += "failed";
          per_order.push_back({{"order", k}, {"failed", true}});
          continue;
        }
        ++placed;
        const Placement pk = place(hk);
        within += pk.within_one_step();
        cells += pk.cliff ? pk.span() + " (" + std::to_string(pk.steps) + ")"
                          : "none (>= " + std::to_string(pk.steps) + ")";
        nlohmann::ordered_json oj = {{"order", k}};
        pk.put(oj);
        per_order.push_back(std::move(oj));
      }
      md << " " << cells << "; " << within << " of " << placed << " within one step |";
      cliff["orders"] = per_order;
      cliff["orders_within_one_step"] = within;
    }
    md << "\n";
    cliffs.push_back(cliff);
  }
  // Where each point's predicted time goes (sweep/agentx_validation.h).
  md << "\n| point | TTFT pred. | front-end wait | front end | scheduler wait | first step | TPOT pred. | "
        "TPOT, decode rounds only | prefill share of busy | binding pool | input per output token |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const auto& b = r.pred.breakdown;
    auto at = [&](const char* k) { auto it = b.find(k); return it == b.end() ? 0.0 : it->second; };
    auto met = [&](const char* k) { auto it = r.pred.metrics.find(k); return it == r.pred.metrics.end() ? 0.0 : it->second; };
    const auto pub_ipo = input_per_output(r.p->published), pred_ipo = input_per_output(r.pred.metrics);
    std::string ipo = pred_ipo ? num(*pred_ipo) : "-";
    if (pub_ipo) ipo = num(*pub_ipo) + " / " + ipo;
    char line[640];
    std::snprintf(line, sizeof line, "| %s | %.0f ms | %.0f | %.0f | %.0f | %.0f | %.2f ms | %.2f | %.0f %% | %s | %s |\n",
                  r.p->id.c_str(), met("ttft_mean_ms"), at("ttft_front_end_wait_ms"), at("ttft_front_end_ms"),
                  at("ttft_scheduler_wait_ms"), at("ttft_first_step_ms"), met("tpot_mean_ms"), at("tpot_decode_only_ms"),
                  100 * at("prefill_share_of_busy"), r.pred.binding_pool.empty() ? "-" : r.pred.binding_pool.c_str(),
                  ipo.c_str());
    md << line;
  }
  std::printf("%s", md.str().c_str());
  std::printf("\nPredicted %zu points in %.0f s of CPU (%d threads, %.0f s of serving each)\n", rows.size(), cpu, jobs,
              o.duration_s);

  nlohmann::ordered_json j = {{"source", set.source}, {"duration_s", o.duration_s}, {"cpu_seconds", cpu},
                              {"sample_orders", o.sample_orders},
                              {"corpus_override", o.corpus.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(o.corpus)},
                              {"corpus_files", po.corpus_files}};
  j["points"] = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    nlohmann::ordered_json pj = {{"id", r.p->id}, {"series", r.p->series}, {"family", set.series_of(*r.p).family},
                                 {"split", set.series_of(*r.p).split}, {"concurrency", r.p->concurrency},
                                 {"past_published_cliff", sweep::past_published_cliff(set, *r.p)},
                                 {"published", r.p->published}, {"predicted", r.pred.metrics}, {"error", r.error},
                                 {"breakdown", r.pred.breakdown}, {"binding_pool", r.pred.binding_pool},
                                 {"requests", r.pred.requests},
                                 {"cpu_seconds", r.pred.cpu_seconds}};
    if (!r.pred.failure.empty()) pj["failure"] = r.pred.failure;
    if (const auto ipo = input_per_output(r.pred.metrics)) {
      const auto pub = input_per_output(r.p->published);
      pj["input_per_output"] = {{"published", pub ? nlohmann::ordered_json(*pub) : nlohmann::ordered_json(nullptr)},
                                {"predicted", *ipo}};
    }
    if (!r.sampled.empty()) {
      nlohmann::ordered_json sj = nlohmann::ordered_json::object();
      for (const auto& [m, range] : r.sampled) sj[m] = {range.first, range.second};
      pj["sampled_range"] = sj;
    }
    if (!r.sampled_failures.empty()) pj["sampled_failures"] = r.sampled_failures;
    j["points"].push_back(pj);
  }
  auto mapes = [&](const std::map<std::string, std::map<std::string, std::vector<double>>>& g) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& [k, errs] : g)
      for (const auto& [m, e] : errs) out[k][m] = {{"mape_percent", sim::mape_percent(e)}, {"points", e.size()}};
    return out;
  };
  j["mape_by_split"] = mapes(by_split);
  j["mape_by_family_held_out"] = mapes(by_family);
  j["mape_by_series"] = mapes(by_series);
  j["rerun_spread"] = spread;
  j["cliffs"] = cliffs;
  if (!o.json_out.empty()) write_file_atomically(o.json_out, j.dump(1) + "\n");
  if (!o.markdown_out.empty()) write_file_atomically(o.markdown_out, md.str());

  bool failed = false;
  for (const auto& r : rows)
    if (!r.pred.failure.empty()) {
      std::fprintf(stderr, "sim validate --agentx: point %s was not predicted: %s\n", r.p->id.c_str(),
                   r.pred.failure.c_str());
      failed = true;
    }
  if (o.check) {
    const std::map<std::string, double> limits = {
        {"total_tok_s_gpu", o.max_total_tput_mape}, {"ttft_mean_ms", o.max_ttft_mape}, {"tpot_mean_ms", o.max_tpot_mape}};
    for (const auto& [fam, errs] : by_family)
      for (const auto& [m, limit] : limits)
        if (auto it = errs.find(m); it != errs.end() && sim::mape_percent(it->second) > limit) {
          std::fprintf(stderr, "sim validate --agentx: held-out %s MAPE of family %s is %.1f %% (limit %.1f %%)\n",
                       m.c_str(), fam.c_str(), sim::mape_percent(it->second), limit);
          failed = true;
        }
  }
  return failed ? 1 : 0;
}

}  // namespace agentperf::cli
