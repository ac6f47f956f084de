// http(s)://host[:port][/base] parsing for targets.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace agentperf::net {

struct Url {
  bool tls = false;
  std::string host;
  std::uint16_t port = 0;
  std::string path;  // always starts with '/', no trailing '/' unless it is just "/"

  std::string origin() const;  // scheme://host:port
  std::string host_header() const;
};

// Throws UserError naming the url and what is wrong. A url without a scheme
// is taken as http:// (what users type for local servers).
Url parse_url(std::string_view text);

// Joins a base path ("/" or "/prefix") with an endpoint ("/v1/completions").
std::string join_path(std::string_view base, std::string_view endpoint);

}  // namespace agentperf::net
