#include "net/url.h"

#include <charconv>

#include "common/error.h"

namespace agentperf::net {

std::string Url::origin() const {
  return std::string(tls ? "https://" : "http://") + host_header();
}

std::string Url::host_header() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  std::string h = ipv6 ? "[" + host + "]" : host;
  const bool default_port = (tls && port == 443) || (!tls && port == 80);
  if (!default_port) {
    h += ':';
    h += std::to_string(port);
  }
  return h;
}

Url parse_url(std::string_view text) {
  const std::string original(text);
  auto fail = [&](const std::string& why) -> Url {
    throw UserError("invalid URL '" + original + "': " + why +
                    " (expected http://host:port or https://host:port)");
  };
  Url url;
  if (auto p = text.find("://"); p != std::string_view::npos) {
    std::string_view scheme = text.substr(0, p);
    if (scheme == "https") url.tls = true;
    else if (scheme != "http") return fail("unsupported scheme '" + std::string(scheme) + "'");
    text.remove_prefix(p + 3);
  }
  std::string_view authority = text.substr(0, text.find('/'));
  std::string_view path = authority.size() < text.size() ? text.substr(authority.size()) : "/";
  if (authority.empty()) return fail("missing host");
  std::string_view port_text;
  if (authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return fail("unterminated IPv6 literal");
    url.host = std::string(authority.substr(1, close - 1));
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return fail("unexpected text after IPv6 literal");
      port_text = rest.substr(1);
    }
  } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    url.host = std::string(authority.substr(0, colon));
    port_text = authority.substr(colon + 1);
  } else {
    url.host = std::string(authority);
  }
  if (url.host.empty()) return fail("missing host");
  if (!port_text.empty()) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc{} || end != port_text.data() + port_text.size() || value == 0 || value > 65535)
      return fail("port '" + std::string(port_text) + "' is not a number in 1..65535");
    url.port = static_cast<std::uint16_t>(value);
  } else {
    url.port = url.tls ? 443 : 80;
  }
  if (auto q = path.find_first_of("?#"); q != std::string_view::npos) path = path.substr(0, q);
  std::string p(path);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  url.path = p;
  return url;
}

std::string join_path(std::string_view base, std::string_view endpoint) {
  std::string b(base);
  while (!b.empty() && b.back() == '/') b.pop_back();
  if (endpoint.empty() || endpoint.front() != '/') b += '/';
  b += endpoint;
  return b.empty() ? "/" : b;
}

}  // namespace agentperf::net
