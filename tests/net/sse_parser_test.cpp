#include "net/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using agentperf::net::SseEvent;
using agentperf::net::SseParser;

namespace {
std::int64_t g_fake_now = 0;
std::int64_t fake_clock() noexcept { return ++g_fake_now; }

struct Seen {
  std::string type, data;
  std::int64_t ts;
};

std::vector<Seen> feed_all(SseParser& p, const std::vector<std::string>& pieces) {
  std::vector<Seen> out;
  for (const auto& piece : pieces) {
    EXPECT_TRUE(p.feed(piece, [&](const SseEvent& e) { out.push_back({std::string(e.type), std::string(e.data), e.ts_ns}); }));
  }
  return out;
}
}  // namespace

TEST(SseParser, EventsSplitAtEveryByteBoundaryParseIdentically) {
  const std::string stream =
      "data: {\"a\":1}\n\n: keep-alive comment\r\n\r\nevent: error\r\ndata: boom\r\n\r\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n";
  SseParser whole;
  auto expected = feed_all(whole, {stream});
  ASSERT_EQ(expected.size(), 4u);
  EXPECT_EQ(expected[0].data, "{\"a\":1}");
  EXPECT_EQ(expected[1].type, "error");
  EXPECT_EQ(expected[1].data, "boom");
  EXPECT_EQ(expected[2].data, "line1\nline2");
  EXPECT_EQ(expected[3].data, "[DONE]");
  for (std::size_t cut = 1; cut < stream.size(); ++cut) {
    SseParser p;
    auto got = feed_all(p, {stream.substr(0, cut), stream.substr(cut)});
    ASSERT_EQ(got.size(), expected.size()) << "cut at " << cut;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].type, expected[i].type) << "cut at " << cut;
      EXPECT_EQ(got[i].data, expected[i].data) << "cut at " << cut;
    }
  }
}

TEST(SseParser, OneByteAtATime) {
  const std::string stream = "data: x\r\n\r\ndata: y\r\r";
  SseParser p;
  std::vector<std::string> pieces;
  for (char c : stream) pieces.emplace_back(1, c);
  auto got = feed_all(p, pieces);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].data, "x");
  EXPECT_EQ(got[1].data, "y");
}

TEST(SseParser, LoneCrAtEndOfReadFollowedByLfIsOneLineEnd) {
  SseParser p;
  // "\r" ends the first read, "\n" starts the second: one line end, so the
  // blank line that dispatches comes only with the second "\r\n".
  auto got = feed_all(p, {"data: a\r", "\n", "\r\n"});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].data, "a");
}

TEST(SseParser, EachEventInOneReadGetsItsOwnTimestamp) {
  g_fake_now = 100;
  SseParser p(&fake_clock);
  auto got = feed_all(p, {"data: 1\n\ndata: 2\n\ndata: 3\n\n"});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_LT(got[0].ts, got[1].ts);
  EXPECT_LT(got[1].ts, got[2].ts);
}

TEST(SseParser, CommentsAndUnknownFieldsAreIgnored) {
  SseParser p;
  auto got = feed_all(p, {": ping\n\nretry: 100\nfoo: bar\nid: 7\ndata: z\n\n"});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].data, "z");
  EXPECT_EQ(p.comment_count(), 1u);
}

TEST(SseParser, FieldWithoutSpaceAndEmptyData) {
  SseParser p;
  auto got = feed_all(p, {"data:nospace\n\ndata:\n\n"});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].data, "nospace");
  EXPECT_EQ(got[1].data, "");
}

TEST(SseParser, ReportsPartialEventAtEnd) {
  SseParser p;
  auto got = feed_all(p, {"data: complete\n\ndata: half"});
  EXPECT_EQ(got.size(), 1u);
  EXPECT_TRUE(p.has_partial_event());
}

TEST(SseParser, RejectsOversizedEvent) {
  SseParser p(&agentperf::monotonic_ns, 1024);
  std::string big = "data: " + std::string(4096, 'x');
  EXPECT_FALSE(p.feed(big, [](const SseEvent&) {}));
}
