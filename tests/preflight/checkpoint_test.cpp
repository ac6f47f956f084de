// Checkpoint preflight on small safetensors files written here: valid,
// truncated, corrupted, inconsistent with their index.
#include "preflight/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>

#include "preflight/safetensors.h"

using namespace agentperf::preflight;
namespace fs = std::filesystem;

namespace {
struct Tensor {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
};

// Writes a safetensors file; `header_edit` may corrupt the header JSON.
void write_safetensors(const fs::path& p, const std::vector<Tensor>& tensors, std::int64_t drop_tail_bytes = 0,
                       const std::function<void(nlohmann::json&)>& header_edit = {}) {
  nlohmann::json h = nlohmann::json::object();
  std::uint64_t at = 0;
  for (const auto& t : tensors) {
    std::uint64_t n = static_cast<std::uint64_t>(dtype_bytes(t.dtype));
    for (auto d : t.shape) n *= static_cast<std::uint64_t>(d);
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {at, at + n}}};
    at += n;
  }
  h["__metadata__"] = {{"format", "pt"}};
  if (header_edit) header_edit(h);
  const std::string header = h.dump();
  std::ofstream out(p, std::ios::binary);
  const std::uint64_t len = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xFF));
  out << header;
  const std::int64_t data = static_cast<std::int64_t>(at) - drop_tail_bytes;
  for (std::int64_t i = 0; i < data; ++i) out.put(static_cast<char>(i & 0x7F));
}

fs::path temp(const std::string& name) {
  auto d = fs::temp_directory_path() / ("agentperf_ckpt_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A two-shard checkpoint with an index and a config.
void write_checkpoint(const fs::path& d) {
  std::ofstream(d / "config.json") << R"({"architectures":["Toy"]})";
  write_safetensors(d / "model-00001-of-00002.safetensors", {{"a", "BF16", {4, 8}}, {"b", "F32", {3}}});
  write_safetensors(d / "model-00002-of-00002.safetensors", {{"c", "F8_E4M3", {16}}});
  nlohmann::json idx = {{"metadata", {{"total_size", 4 * 8 * 2 + 3 * 4 + 16}}},
                        {"weight_map",
                         {{"a", "model-00001-of-00002.safetensors"},
                          {"b", "model-00001-of-00002.safetensors"},
                          {"c", "model-00002-of-00002.safetensors"}}}};
  std::ofstream(d / "model.safetensors.index.json") << idx.dump();
}

bool mentions(const CandidateResult& c, const std::string& what) {
  for (const auto& r : c.reasons)
    if (r.find(what) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST(Safetensors, ValidFileAndEachKindOfDamage) {
  const auto d = temp("files");
  write_safetensors(d / "ok.safetensors", {{"w", "F16", {2, 3}}, {"v", "I64", {5}}});
  auto ok = check_safetensors((d / "ok.safetensors").string());
  EXPECT_TRUE(ok.ok) << (ok.problems.empty() ? "" : ok.problems[0]);
  EXPECT_EQ(ok.tensors.size(), 2u);
  EXPECT_EQ(ok.data_bytes, 2u * 3 * 2 + 5 * 8);

  write_safetensors(d / "trunc.safetensors", {{"w", "F16", {64}}}, 10);
  auto trunc = check_safetensors((d / "trunc.safetensors").string());
  ASSERT_FALSE(trunc.ok);
  EXPECT_NE(trunc.problems[0].find("truncated"), std::string::npos) << trunc.problems[0];

  write_safetensors(d / "shape.safetensors", {{"w", "F16", {4}}}, 0,
                    [](nlohmann::json& h) { h["w"]["shape"] = {5}; });
  auto shape = check_safetensors((d / "shape.safetensors").string());
  ASSERT_FALSE(shape.ok);
  EXPECT_NE(shape.problems[0].find("5 elements = 10 bytes, but data_offsets span 8"), std::string::npos)
      << shape.problems[0];

  write_safetensors(d / "dtype.safetensors", {{"w", "F16", {4}}}, 0,
                    [](nlohmann::json& h) { h["w"]["dtype"] = "Q4"; });
  EXPECT_NE(check_safetensors((d / "dtype.safetensors").string()).problems[0].find("unknown dtype 'Q4'"), std::string::npos);

  write_safetensors(d / "gap.safetensors", {{"a", "U8", {4}}, {"b", "U8", {4}}}, 0, [](nlohmann::json& h) {
    h["b"]["data_offsets"] = {6, 10};
  });
  auto gap = check_safetensors((d / "gap.safetensors").string());
  ASSERT_FALSE(gap.ok);

  std::ofstream(d / "garbage.safetensors", std::ios::binary) << std::string("\x10\0\0\0\0\0\0\0{not json at all", 24);
  auto garbage = check_safetensors((d / "garbage.safetensors").string());
  ASSERT_FALSE(garbage.ok);
  EXPECT_NE(garbage.problems[0].find("not valid JSON"), std::string::npos) << garbage.problems[0];

  std::ofstream(d / "tiny.safetensors", std::ios::binary) << "abc";
  EXPECT_FALSE(check_safetensors((d / "tiny.safetensors").string()).ok);
  fs::remove_all(d);
}

TEST(Checkpoint, ValidShardedCheckpointPasses) {
  const auto d = temp("valid");
  write_checkpoint(d);
  CheckpointOptions o;
  o.read_all = true;
  auto c = validate_checkpoint_dir(d.string(), o);
  EXPECT_TRUE(c.ok) << (c.reasons.empty() ? "" : c.reasons[0]);
  EXPECT_EQ(c.shards, 2);
  EXPECT_EQ(c.tensors, 3);
  fs::remove_all(d);
}

TEST(Checkpoint, IndexInconsistenciesAreNamed) {
  const auto d = temp("index");
  write_checkpoint(d);
  fs::remove(d / "model-00002-of-00002.safetensors");
  write_safetensors(d / "model-00001-of-00002.safetensors", {{"a", "BF16", {4, 8}}, {"extra", "F32", {3}}});
  auto c = validate_checkpoint_dir(d.string(), {});
  ASSERT_FALSE(c.ok);
  EXPECT_TRUE(mentions(c, "model-00002-of-00002.safetensors: missing"));
  EXPECT_TRUE(mentions(c, "tensor 'b' listed in the index is absent"));
  EXPECT_TRUE(mentions(c, "tensor 'extra' is not in the index"));
  fs::remove(d / "config.json");
  EXPECT_TRUE(mentions(validate_checkpoint_dir(d.string(), {}), "config.json missing"));
  fs::remove_all(d);
}

TEST(Checkpoint, ChecksumsAreVerified) {
  const auto d = temp("sums");
  write_checkpoint(d);
  std::ofstream(d / "SHA256SUMS") << "0000  model-00001-of-00002.safetensors\n";
  CheckpointOptions o;
  o.checksums = (d / "SHA256SUMS").string();
  auto c = validate_checkpoint_dir(d.string(), o);
  ASSERT_FALSE(c.ok);
  EXPECT_TRUE(mentions(c, "model-00001-of-00002.safetensors: sha256"));
  EXPECT_TRUE(mentions(c, "model-00002-of-00002.safetensors: no checksum"));
  fs::remove_all(d);
}

TEST(Checkpoint, PrefersTheFirstValidCandidateAndSaysWhyOthersFailed) {
  const auto nvme = temp("nvme");
  const auto shared = temp("shared");
  // Node-local copy: truncated during a copy.
  fs::create_directories(nvme / "Org" / "Model");
  write_checkpoint(nvme / "Org" / "Model");
  write_safetensors(nvme / "Org" / "Model" / "model-00002-of-00002.safetensors", {{"c", "F8_E4M3", {16}}}, 5);
  // Shared filesystem: a Hugging Face cache snapshot.
  const auto snap = shared / "models--Org--Model" / "snapshots" / "abc123";
  fs::create_directories(snap);
  write_checkpoint(snap);
  CheckpointOptions o;
  o.model = "Org/Model";
  o.candidates = {nvme.string(), (nvme / "does-not-exist").string(), shared.string()};
  auto r = locate_checkpoint(o);
  ASSERT_TRUE(r.chosen.has_value());
  EXPECT_EQ(*r.chosen, snap.string());
  ASSERT_GE(r.tried.size(), 3u);
  EXPECT_FALSE(r.tried[0].ok);
  EXPECT_TRUE(mentions(r.tried[0], "truncated"));
  EXPECT_TRUE(mentions(r.tried[1], "no such directory"));
  fs::remove_all(nvme);
  fs::remove_all(shared);
}

// A shape whose element count overflows 64 bits used to wrap to 0 elements
// and "match" empty data_offsets; it is refused by name.
TEST(Safetensors, OverflowingShapeIsRefused) {
  const auto d = temp("overflow");
  write_safetensors(d / "huge.safetensors", {{"w", "BF16", {0}}}, 0, [](nlohmann::json& h) {
    h["w"]["shape"] = {std::int64_t{1} << 40, std::int64_t{1} << 40};
  });
  auto r = check_safetensors((d / "huge.safetensors").string());
  ASSERT_FALSE(r.ok);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("tensor 'w': shape [1099511627776, 1099511627776] of BF16 is more than 2^64 bytes"),
            std::string::npos) << r.problems[0];
  // The element count fits but the bytes do not (2^62 x 8).
  write_safetensors(d / "bytes.safetensors", {{"w", "F64", {0}}}, 0, [](nlohmann::json& h) {
    h["w"]["shape"] = {std::int64_t{1} << 62};
  });
  r = check_safetensors((d / "bytes.safetensors").string());
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.problems[0].find("is more than 2^64 bytes"), std::string::npos) << r.problems[0];
  fs::remove_all(d);
}

// A shard name that leaves the checkpoint directory is refused from the
// name alone: the file it names is never opened. Here the outside file is a
// valid shard, which used to be opened, parsed and accepted.
TEST(Checkpoint, IndexPathsOutsideTheDirectoryAreRefusedUnopened) {
  const auto root = temp("escape");
  const auto d = root / "ckpt";
  fs::create_directories(d);
  std::ofstream(d / "config.json") << R"({"architectures":["Toy"]})";
  write_safetensors(root / "outside.safetensors", {{"a", "U8", {4}}});
  write_safetensors(d / "model-00001.safetensors", {{"b", "U8", {4}}});
  nlohmann::json idx = {{"weight_map", {{"a", "../outside.safetensors"}, {"b", "model-00001.safetensors"}}}};
  std::ofstream(d / "model.safetensors.index.json") << idx.dump();
  auto c = validate_checkpoint_dir(d.string(), {});
  ASSERT_FALSE(c.ok);
  EXPECT_TRUE(mentions(c, "weight_map['a'] = '../outside.safetensors' climbs out with '..'")) << c.reasons[0];
  EXPECT_EQ(c.shards, 1);  // only the shard inside was opened
  EXPECT_EQ(c.tensors, 1);

  idx = {{"weight_map", {{"a", "../../../../etc/passwd"}, {"b", "/etc/passwd"}, {"c", "sub/../../x.safetensors"}}}};
  std::ofstream(d / "model.safetensors.index.json") << idx.dump();
  c = validate_checkpoint_dir(d.string(), {});
  ASSERT_FALSE(c.ok);
  EXPECT_EQ(c.shards, 0);
  EXPECT_TRUE(mentions(c, "'../../../../etc/passwd' climbs out with '..'"));
  EXPECT_TRUE(mentions(c, "'/etc/passwd' is an absolute path"));
  EXPECT_TRUE(mentions(c, "'sub/../../x.safetensors' climbs out"));
  for (const auto& why : c.reasons) EXPECT_EQ(why.find("passwd:"), std::string::npos) << why;  // never opened
  fs::remove_all(root);
}
