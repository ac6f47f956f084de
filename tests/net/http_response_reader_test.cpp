// The client's HTTP/1.1 response reader on hand-written responses, each fed
// whole, byte by byte and in uneven pieces: framing, keep-alive and the
// protocol errors a misbehaving server produces.
#include "net/http_response_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using agentperf::net::HttpResponseReader;

namespace {

struct Read {
  std::string body;
  std::string leftover;  // bytes past the end of the message
  bool head = false, done = false, failed = false;
  std::string error;
};

// Feeds `wire` in pieces of `piece` bytes (0: whole), then a close if asked.
Read read(const std::string& wire, std::size_t piece, bool close_at_end, HttpResponseReader& r) {
  Read out;
  std::size_t at = 0;
  while (at < wire.size()) {
    const std::size_t n = piece == 0 ? wire.size() : std::min(piece, wire.size() - at);
    std::string_view in(wire.data() + at, n);
    at += n;
    while (!in.empty() && !r.done() && !r.failed()) out.body += r.next(in);
    if (r.done() || r.failed()) {
      out.leftover = std::string(in) + wire.substr(at);
      break;
    }
  }
  if (close_at_end) r.on_close();
  out.head = r.head_complete();
  out.done = r.done();
  out.failed = r.failed();
  out.error = r.error();
  return out;
}

// The same response read three ways must give the same result.
Read read_all_ways(const std::string& wire, bool close_at_end = false) {
  HttpResponseReader whole;
  const Read a = read(wire, 0, close_at_end, whole);
  for (std::size_t piece : {1u, 3u, 7u}) {
    HttpResponseReader r;
    const Read b = read(wire, piece, close_at_end, r);
    EXPECT_EQ(b.body, a.body) << "piece " << piece;
    EXPECT_EQ(b.done, a.done) << "piece " << piece;
    EXPECT_EQ(b.failed, a.failed) << "piece " << piece;
    EXPECT_EQ(b.leftover, a.leftover) << "piece " << piece;
    EXPECT_EQ(r.status(), whole.status());
    EXPECT_EQ(r.keep_alive(), whole.keep_alive());
  }
  return a;
}

}  // namespace

TEST(HttpResponseReader, ContentLengthBody) {
  const std::string wire = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":\"xyz\"}";
  HttpResponseReader r;
  const Read got = read(wire, 0, false, r);
  EXPECT_TRUE(got.done);
  EXPECT_EQ(got.body, "{\"a\":\"xyz\"}");
  EXPECT_EQ(r.status(), 200);
  EXPECT_EQ(r.reason(), "OK");
  EXPECT_EQ(r.field("content-type"), "application/json");
  EXPECT_EQ(r.field("CONTENT-TYPE"), "application/json");
  EXPECT_TRUE(r.keep_alive());
  EXPECT_EQ(r.body_bytes(), 11u);
  EXPECT_EQ(r.bytes_seen(), wire.size());
  read_all_ways(wire);
}

TEST(HttpResponseReader, ChunkedBodyWithExtensionsAndTrailersIsDechunked) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n"
      "6\r\ndata: \r\n"
      "A;name=value\r\n{\"x\":12}\n\n\r\n"
      "2\r\n\r\n\r\n"
      "0\r\nX-Trailer: t\r\n\r\n";
  const Read got = read_all_ways(wire);
  EXPECT_TRUE(got.done);
  EXPECT_FALSE(got.failed) << got.error;
  EXPECT_EQ(got.body, "data: {\"x\":12}\n\n\r\n");
  EXPECT_TRUE(got.leftover.empty());
}

TEST(HttpResponseReader, BareLineFeedsAreAccepted) {
  const Read got = read_all_ways("HTTP/1.1 200 OK\nContent-Length: 2\n\nhi");
  EXPECT_TRUE(got.done);
  EXPECT_EQ(got.body, "hi");
}

TEST(HttpResponseReader, BodyUntilCloseEndsOnlyAtTheCloseAndIsNeverReused) {
  const std::string wire = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nsome text";
  HttpResponseReader open;
  const Read before_close = read(wire, 0, false, open);
  EXPECT_FALSE(before_close.done);
  EXPECT_EQ(before_close.body, "some text");
  const Read got = read_all_ways(wire, true);
  EXPECT_TRUE(got.done);
  EXPECT_EQ(got.body, "some text");
  HttpResponseReader r;
  read(wire, 0, true, r);
  EXPECT_FALSE(r.keep_alive());
}

TEST(HttpResponseReader, KeepAliveFollowsTheVersionAndTheConnectionField) {
  auto keep = [](const std::string& head) {
    HttpResponseReader r;
    read(head + "Content-Length: 0\r\n\r\n", 0, false, r);
    EXPECT_TRUE(r.done()) << head;
    return r.keep_alive();
  };
  EXPECT_TRUE(keep("HTTP/1.1 200 OK\r\n"));
  EXPECT_FALSE(keep("HTTP/1.1 200 OK\r\nConnection: close\r\n"));
  EXPECT_FALSE(keep("HTTP/1.1 200 OK\r\nConnection: Upgrade, Close\r\n"));
  EXPECT_FALSE(keep("HTTP/1.0 200 OK\r\n"));
  EXPECT_TRUE(keep("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n"));
}

TEST(HttpResponseReader, InterimAnswersAreSkipped) {
  const Read got = read_all_ways("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx");
  EXPECT_TRUE(got.done);
  EXPECT_EQ(got.body, "x");
  HttpResponseReader r;
  read("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx", 0, false, r);
  EXPECT_EQ(r.status(), 201);
}

TEST(HttpResponseReader, NoBodyFor204And304) {
  for (const char* status : {"204 No Content", "304 Not Modified"}) {
    const Read got = read_all_ways(std::string("HTTP/1.1 ") + status + "\r\nContent-Length: 5\r\n\r\n");
    EXPECT_TRUE(got.done) << status;
    EXPECT_TRUE(got.body.empty()) << status;
  }
}

TEST(HttpResponseReader, BytesPastTheMessageAreLeftUnread) {
  const Read got = read_all_ways("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA");
  EXPECT_TRUE(got.done);
  EXPECT_EQ(got.body, "ok");
  EXPECT_EQ(got.leftover, "EXTRA");
}

TEST(HttpResponseReader, AnEarlyCloseLeavesTheMessageIncomplete) {
  for (const std::string wire : {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
                                 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
                                 "HTTP/1.1 200 OK\r\nContent-Le"}) {
    const Read got = read_all_ways(wire, true);
    EXPECT_FALSE(got.done) << wire;
    EXPECT_FALSE(got.failed) << wire;
  }
}

TEST(HttpResponseReader, ProtocolErrorsAreNamed) {
  struct Case {
    std::string wire, says;
    bool in_body = false;  // the head was good; the body's framing was not
  };
  const std::vector<Case> cases = {
      {"SSH-2.0-OpenSSH_9.2\r\n\r\n", "bad status line 'SSH-2.0-OpenSSH_9.2'"},
      {"HTTP/1.1 2x0 OK\r\n\r\n", "bad status line"},
      {"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "bad header line 'no colon here'"},
      {"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n", "folded header line"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n", "invalid Content-Length '12x'"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "invalid Content-Length"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "invalid chunk size line 'zz'", true},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", "longer than its size", true},
  };
  for (const auto& c : cases) {
    const Read got = read_all_ways(c.wire);
    EXPECT_TRUE(got.failed) << c.wire;
    // A head that failed to parse is not a head: the client reports it as
    // an invalid response, not as a body error.
    EXPECT_EQ(got.head, c.in_body) << c.wire;
    EXPECT_NE(got.error.find(c.says), std::string::npos) << c.wire << " -> " << got.error;
  }
}

TEST(HttpResponseReader, AHeadOverTheLimitIsAnErrorNotUnboundedMemory) {
  std::string wire = "HTTP/1.1 200 OK\r\n";
  while (wire.size() <= HttpResponseReader::kHeadLimit) wire += "X-Filler: " + std::string(100, 'f') + "\r\n";
  HttpResponseReader r;
  const Read got = read(wire, 4096, false, r);
  EXPECT_TRUE(got.failed);
  EXPECT_NE(got.error.find("larger than 64 KiB"), std::string::npos) << got.error;
}
