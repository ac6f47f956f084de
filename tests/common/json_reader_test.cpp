#include "common/json_reader.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "common/error.h"

namespace agentperf {
namespace {

using json = nlohmann::json;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

const json kDoc = json::parse(R"({
  "name": "h200", "count": 3, "ratio": 0.5, "on": true,
  "limits": {"hbm": {"bytes": 1e9}},
  "points": [{"x": 1, "y": 0.5}, {"x": 2, "y": -1}]
})");

TEST(JsonReader, ReadsValuesAndFallbacks) {
  const JsonReader r(kDoc, "f.json");
  EXPECT_EQ(r.string("name"), "h200");
  EXPECT_EQ(r.integer("count", JsonRange::positive()), 3);
  EXPECT_DOUBLE_EQ(r.number("ratio", JsonRange::fraction()), 0.5);
  EXPECT_TRUE(r.boolean("on"));
  EXPECT_DOUBLE_EQ(r.number("limits.hbm.bytes"), 1e9);
  EXPECT_EQ(r.number_or("limits.hbm.rate", 7), 7);
  EXPECT_EQ(r.optional_number("absent"), std::nullopt);
  EXPECT_EQ(r.string_or("absent", "x"), "x");
  EXPECT_TRUE(r.has("limits.hbm"));
  EXPECT_FALSE(r.has("limits.nvlink"));
  const auto entries = r.object("limits").entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].first, "hbm");
  EXPECT_DOUBLE_EQ(entries[0].second.number("bytes"), 1e9);
}

TEST(JsonReader, MissingFieldNamesTheFullPath) {
  const JsonReader r(kDoc, "f.json");
  EXPECT_EQ(error_of([&] { r.number("limits.hbm.rate"); }),
            "f.json: field 'limits.hbm.rate': must be a number, got nothing (the field is missing)");
  EXPECT_EQ(error_of([&] { r.object("limits").object("hbm").string("kind"); }),
            "f.json: field 'limits.hbm.kind': must be a string, got nothing (the field is missing)");
}

TEST(JsonReader, WrongTypeShowsTheValue) {
  const JsonReader r(kDoc, "f.json");
  EXPECT_EQ(error_of([&] { r.number("name"); }), "f.json: field 'name': must be a number, got \"h200\"");
  EXPECT_EQ(error_of([&] { r.integer("ratio"); }), "f.json: field 'ratio': must be an integer, got 0.5");
  EXPECT_EQ(error_of([&] { r.boolean("count"); }), "f.json: field 'count': must be true or false, got 3");
  EXPECT_EQ(error_of([&] { r.array("limits"); }), "f.json: field 'limits': must be an array, got {\"hbm\":{\"bytes\":1000000000.0}}");
  // An intermediate that is not an object is named, not the leaf.
  EXPECT_EQ(error_of([&] { r.number("count.x"); }), "f.json: field 'count': must be an object, got 3");
}

TEST(JsonReader, OutOfRangeNamesTheBounds) {
  const JsonReader r(kDoc, "f.json");
  EXPECT_EQ(error_of([&] { r.number("ratio", JsonRange::between(1, 8)); }), "f.json: field 'ratio': must be in [1, 8], got 0.5");
  EXPECT_EQ(error_of([&] { r.integer("count", JsonRange{-1e300, 2}); }), "f.json: field 'count': must be in [-1e+300, 2], got 3");
  EXPECT_EQ(error_of([&] { r.check("derived", 0, JsonRange::positive()); }), "f.json: field 'derived': must be > 0, got 0");
  EXPECT_EQ(error_of([&] { r.check("derived", 0, JsonRange::fraction()); }), "f.json: field 'derived': must be in (0, 1], got 0");
}

TEST(JsonReader, ArrayElementsCarryTheirIndex) {
  const JsonReader r(kDoc, "f.json");
  const JsonReader points = r.array("points", true);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_DOUBLE_EQ(points.at(0).number("y", JsonRange::positive()), 0.5);
  EXPECT_EQ(error_of([&] { points.at(1).number("y", JsonRange::positive()); }),
            "f.json: field 'points[1].y': must be > 0, got -1");
  const json empty = json::parse(R"({"a": {"b": []}})");
  EXPECT_EQ(error_of([&] { JsonReader(empty, "e.json").object("a").array("b", true); }),
            "e.json: field 'a.b': must be a non-empty array, got []");
}

TEST(JsonReader, RejectsUnknownKeys) {
  const JsonReader r(kDoc, "f.json");
  EXPECT_EQ(error_of([&] { r.reject_unknown_keys({"bytes"}, "limits.hbm"); }), "(no error)");
  EXPECT_EQ(error_of([&] { r.reject_unknown_keys({"name", "count"}, "points.0"); }),
            "f.json: field 'points': must be an object, got [{\"x\":1,\"y\":0.5},{\"x\":2,\"y\":-1}]");
  EXPECT_EQ(error_of([&] { r.object("limits").reject_unknown_keys({"nvlink"}); }),
            "f.json: field 'limits.hbm': must be one of the known keys (nvlink), got unknown key 'hbm'");
}

TEST(JsonReader, RootThatIsNotAnObject) {
  const json arr = json::array();
  EXPECT_EQ(error_of([&] { JsonReader(arr, "a.json").number("x"); }), "a.json: must be an object, got []");
}

}  // namespace
}  // namespace agentperf
