// An outgoing HTTP request, free of Asio types so request building stays
// out of the Asio translation units.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace agentperf::net {

using Header = std::pair<std::string, std::string>;

// A request body kept as segments that are written in order with one
// gathered write, so shared prompt prefixes are never copied per request.
struct HttpRequest {
  std::string method = "POST";
  std::string path = "/";
  std::vector<Header> headers;
  std::vector<std::shared_ptr<const std::string>> body;
  std::size_t body_size() const {
    std::size_t n = 0;
    for (const auto& s : body) n += s->size();
    return n;
  }
};

}  // namespace agentperf::net
