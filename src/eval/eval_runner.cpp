#include "eval/eval_runner.h"

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include "common/asio_aliases.h"
#include "common/clock.h"
#include "net/http_client.h"

namespace agentperf::eval {
using namespace aio;

EvalResult run_gsm8k(const EvalConfig& cfg, const std::vector<Gsm8kItem>& items, const std::vector<Gsm8kItem>& shots,
                     const std::string& model) {
  asio::io_context io(1);
  const auto url = net::parse_url(cfg.client.url);
  net::HttpClient client(io, url, client_options(cfg.client));
  client.resolve();
  const bool chat = cfg.client.endpoint_type == EndpointType::chat;
  const std::string path = net::join_path(url.path, cfg.client.endpoint_path());
  EvalResult result;
  result.records.resize(items.size());
  std::size_t next = 0;

  auto worker = [&]() -> asio::awaitable<void> {
    while (next < items.size()) {
      const std::size_t i = next++;
      nlohmann::json body = {{"model", model},
                             {"max_tokens", cfg.max_tokens},
                             {"temperature", 0},
                             {"stream", false},
                             {"stop", {"Question:", "</s>", "<|im_end|>"}}};
      for (const auto& [k, v] : cfg.client.extra_inputs) body[k] = nlohmann::json::parse(v);
      if (chat) {
        body["messages"] = nlohmann::json::array();
        for (const auto& [role, content] : chat_messages(shots, items[i]))
          body["messages"].push_back({{"role", role}, {"content", content}});
      } else {
        body["prompt"] = completion_prompt(shots, items[i]);
      }
      net::HttpRequest req;
      req.path = path;
      if (!cfg.client.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + cfg.client.api_key);
      for (const auto& h : cfg.client.headers) req.headers.push_back(h);
      req.body.push_back(std::make_shared<const std::string>(body.dump()));
      RequestRecord rec;
      rec.capture_text = true;
      co_await client.send(req, rec, nullptr);
      EvalRecord& out = result.records[i];
      out.index = i;
      out.latency_s = static_cast<double>(rec.end_ns - rec.start_ns) / 1e9;
      out.error = rec.error;
      out.response = std::move(rec.output_text);
      if (!out.error) out.score = score(items[i], out.response);
    }
  };
  for (int w = 0; w < std::max(1, cfg.concurrency); ++w) co_spawn(io, worker(), asio::detached);
  io.run();

  std::size_t strict = 0, flexible = 0;
  for (const auto& r : result.records) {
    if (r.error) ++result.errors;
    strict += r.score.strict;
    flexible += r.score.flexible;
  }
  const double n = static_cast<double>(std::max<std::size_t>(1, items.size()));
  result.strict = static_cast<double>(strict) / n;
  result.flexible = static_cast<double>(flexible) / n;
  return result;
}

}  // namespace agentperf::eval
