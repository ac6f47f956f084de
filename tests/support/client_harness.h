// Drives one HttpClient on its own event loop for tests.
#pragma once
#include <boost/asio.hpp>
#include <chrono>
#include <string>

#include "net/http_client.h"
#include "net/url.h"

namespace agentperf::test_support {

struct ClientHarness {
  boost::asio::io_context io;
  net::HttpClient client;

  explicit ClientHarness(const std::string& url, net::ClientOptions opts = {})
      : client(io, net::parse_url(url), opts) {
    client.resolve();
  }

  RequestRecord send(const net::HttpRequest& req, net::InFlight* inflight = nullptr) {
    RequestRecord rec;
    boost::asio::co_spawn(io, client.send(req, rec, inflight), boost::asio::detached);
    io.restart();
    io.run();
    return rec;
  }
};

inline net::HttpRequest chat_request(const std::string& request_id = "req-1",
                                     const std::string& path = "/v1/chat/completions") {
  net::HttpRequest req;
  req.path = path;
  req.headers.emplace_back("X-Request-ID", request_id);
  req.body.push_back(std::make_shared<const std::string>(
      R"({"model":"m","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]})"));
  return req;
}

}  // namespace agentperf::test_support
