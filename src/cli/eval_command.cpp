#include "cli/eval_command.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_numbers.h"
#include "load/profile_config.h"
#include "cli/profile_command.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "eval/eval_runner.h"
#include "load/load_runner.h"

namespace agentperf::cli {

struct EvalCommand {
  CLI::App* gsm8k = nullptr;
  eval::EvalConfig cfg;
  ProfileCliText text;
  std::string dataset, fewshot_file, output, metric = "flexible";
  int fewshot = 5;
  int limit = 0;
  double threshold = 0;
  double max_error_rate = 0;
};

std::shared_ptr<EvalCommand> add_eval_command(CLI::App& app) {
  auto ec = std::make_shared<EvalCommand>();
  auto* eval = app.add_subcommand("eval", "Accuracy checks against an endpoint");
  eval->require_subcommand(1);
  ec->gsm8k = eval->add_subcommand("gsm8k", "Few-shot GSM8K (lm-eval's strict and flexible exact match)");
  ec->text.endpoint_type = defaults::kEndpoint;
  add_target_options(*ec->gsm8k, ec->cfg.client, ec->text);
  add_client_options(*ec->gsm8k, ec->cfg.client);
  auto* g = "GSM8K";
  ec->gsm8k->add_option("--dataset", ec->dataset, "JSONL with question/answer per line (the GSM8K test split format)")
      ->required()->check(CLI::ExistingFile)->group(g);
  ec->gsm8k->add_option("--fewshot", ec->fewshot, "Worked examples before each question")
      ->transform(int_in(0, 1000))->capture_default_str()->group(g);
  ec->gsm8k->add_option("--fewshot-file", ec->fewshot_file,
                        "Examples to take the shots from (default: the dataset's first N, then not scored)")
      ->check(CLI::ExistingFile)->group(g);
  ec->gsm8k->add_option("--limit", ec->limit, "Score only the first N questions")->transform(int_in(0, 1000000000))->group(g);
  ec->gsm8k->add_option("-c,--concurrency", ec->cfg.concurrency, "Requests in flight")
      ->transform(int_in(1, limits::max_concurrency))->capture_default_str()->group(g);
  ec->gsm8k->add_option("--max-tokens", ec->cfg.max_tokens, "Generation length cap")
      ->transform(tokens_in(1, limits::max_tokens))->capture_default_str()->group(g);
  ec->gsm8k->add_option("--threshold", ec->threshold, "Exit 1 when the accuracy is below this (e.g. 0.94)")
      ->check(real_in(0, 1))->capture_default_str()->group(g);
  ec->gsm8k->add_option("--max-error-rate", ec->max_error_rate,
                        "Share of questions whose request may fail (they count as wrong answers); above it the check "
                        "fails with exit 1")
      ->check(real_in(0, 1))->capture_default_str()->group(g);
  ec->gsm8k->add_option("--metric", ec->metric, "Which accuracy the threshold applies to")
      ->check(CLI::IsMember({"flexible", "strict"}))->capture_default_str()->group(g);
  ec->gsm8k->add_option("-o,--output", ec->output, "Write results JSON (scores and every answer) here")->group(g);
  return ec;
}

int execute_eval_command(EvalCommand& ec) {
  if (!ec.gsm8k->parsed()) return -1;
  finish_client_options(ec.cfg.client, ec.text);
  auto items = eval::load_gsm8k(ec.dataset);
  std::vector<eval::Gsm8kItem> shots;
  if (!ec.fewshot_file.empty()) {
    auto pool = eval::load_gsm8k(ec.fewshot_file);
    if (static_cast<int>(pool.size()) < ec.fewshot)
      throw UserError("--fewshot-file has " + std::to_string(pool.size()) + " examples, fewer than --fewshot " +
                      std::to_string(ec.fewshot));
    shots.assign(pool.begin(), pool.begin() + ec.fewshot);
  } else if (ec.fewshot > 0) {
    if (static_cast<int>(items.size()) <= ec.fewshot)
      throw UserError("--dataset has " + std::to_string(items.size()) + " questions: not enough for " +
                      std::to_string(ec.fewshot) + " shots and at least one question (give --fewshot-file)");
    shots.assign(items.begin(), items.begin() + ec.fewshot);
    items.erase(items.begin(), items.begin() + ec.fewshot);
  }
  if (ec.limit > 0 && static_cast<int>(items.size()) > ec.limit) items.resize(static_cast<std::size_t>(ec.limit));
  const std::string model = preflight_model(ec.cfg.client);
  auto res = eval::run_gsm8k(ec.cfg, items, shots, model);

  const double acc = ec.metric == "strict" ? res.strict : res.flexible;
  // Failed requests are wrong answers in the accuracy; beyond that, a run
  // with more failed requests than --max-error-rate measured the server's
  // failures, not the model: it fails whatever the accuracy.
  const double error_rate = items.empty() ? 0.0 : static_cast<double>(res.errors) / static_cast<double>(items.size());
  const bool accurate = acc >= ec.threshold;
  const bool few_errors = error_rate <= ec.max_error_rate;
  const bool pass = accurate && few_errors;
  std::printf("GSM8K %d-shot on %zu questions (%s): strict-match %.4f, flexible-extract %.4f, %zu errors\n",
              static_cast<int>(shots.size()), items.size(), model.c_str(), res.strict, res.flexible, res.errors);
  std::printf("%s: %s %.4f %s threshold %.4f", pass ? "PASS" : "FAIL", ec.metric.c_str(), acc, accurate ? ">=" : "<",
              ec.threshold);
  if (!few_errors)
    std::printf("; %zu of %zu requests failed (%.1f%%), above --max-error-rate %.4f", res.errors, items.size(),
                100 * error_rate, ec.max_error_rate);
  std::printf("\n");
  if (!ec.output.empty()) {
    nlohmann::ordered_json j;
    j["task"] = "gsm8k";
    j["model"] = model;
    j["fewshot"] = shots.size();
    j["questions"] = items.size();
    j["accuracy"] = {{"strict_match", res.strict}, {"flexible_extract", res.flexible}};
    j["errors"] = res.errors;
    j["error_rate"] = error_rate;
    j["threshold"] = {{"metric", ec.metric}, {"value", ec.threshold}, {"max_error_rate", ec.max_error_rate}, {"pass", pass}};
    j["answers"] = nlohmann::ordered_json::array();
    for (const auto& r : res.records) {
      j["answers"].push_back({{"index", r.index},
                              {"target", items[r.index].target},
                              {"strict", r.score.strict_answer ? nlohmann::ordered_json(*r.score.strict_answer) : nullptr},
                              {"flexible", r.score.flexible_answer ? nlohmann::ordered_json(*r.score.flexible_answer) : nullptr},
                              {"correct", r.score.flexible},
                              {"error", r.error ? nlohmann::ordered_json(r.error->message) : nullptr},
                              {"response", r.response}});
    }
    write_file_atomically(ec.output, j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
  }
  return pass ? 0 : 1;
}

}  // namespace agentperf::cli
