#include "net/url.h"

#include <gtest/gtest.h>

#include "common/error.h"

using agentperf::UserError;
using agentperf::net::join_path;
using agentperf::net::parse_url;

TEST(Url, ParsesSchemeHostPortAndPath) {
  auto u = parse_url("https://api.example.com:8443/base/");
  EXPECT_TRUE(u.tls);
  EXPECT_EQ(u.host, "api.example.com");
  EXPECT_EQ(u.port, 8443);
  EXPECT_EQ(u.path, "/base");
  EXPECT_EQ(u.host_header(), "api.example.com:8443");
}

TEST(Url, DefaultsPortBySchemeAndAcceptsBareHost) {
  EXPECT_EQ(parse_url("http://localhost").port, 80);
  EXPECT_EQ(parse_url("https://localhost").port, 443);
  auto bare = parse_url("127.0.0.1:8000");
  EXPECT_FALSE(bare.tls);
  EXPECT_EQ(bare.port, 8000);
  EXPECT_EQ(bare.path, "/");
}

TEST(Url, ParsesIpv6Literal) {
  auto u = parse_url("http://[::1]:9000/v1");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 9000);
  EXPECT_EQ(u.host_header(), "[::1]:9000");
}

TEST(Url, RejectsBadInputWithReason) {
  try {
    parse_url("ftp://x");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported scheme 'ftp'"), std::string::npos);
  }
  EXPECT_THROW(parse_url("http://host:99999"), UserError);
  EXPECT_THROW(parse_url("http://host:abc"), UserError);
  EXPECT_THROW(parse_url("http://"), UserError);
}

TEST(Url, JoinsPaths) {
  EXPECT_EQ(join_path("/", "/v1/completions"), "/v1/completions");
  EXPECT_EQ(join_path("/proxy", "/v1/models"), "/proxy/v1/models");
  EXPECT_EQ(join_path("/proxy/", "v1"), "/proxy/v1");
}
