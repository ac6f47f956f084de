// NumpyPcg64 and AIPerf's per-trace t* against numpy itself: the golden
// values are made at test time by tests/common/numpy_random_golden.py under
// Debian's python3-numpy (AGENTPERF_NUMPY_PYTHON: found at configure time,
// or taken from the environment variable of that name).
// Without it the Golden test FAILS, saying so; the static table below still
// checks values computed once with numpy 1.24.2 (/usr/bin/python3).
#include "common/numpy_random.h"
#include "support/shell_run.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <openssl/sha.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace agentperf {
namespace {

using json = nlohmann::json;

std::string fmt17(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g (%a)", v, v);
  return buf;
}

double from_hex(const json& j) {
  const std::string s = j.get<std::string>();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') throw std::runtime_error("bad hex float " + s);
  return v;
}

std::string u128_decimal(unsigned __int128 v) {
  if (v == 0) return "0";
  std::string s;
  while (v != 0) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  return s;
}

#define EXPECT_SAME_DOUBLE(actual, expected, what)                                    \
  EXPECT_TRUE((actual) == (expected)) << (what) << ": got " << fmt17(actual)          \
                                      << ", numpy " << fmt17(expected)

// ---- values computed once with numpy 1.24.2 (/usr/bin/python3) ----

TEST(NumpyRandom, StaticTableFromNumpy) {
  // np.random.default_rng(42).random()
  EXPECT_SAME_DOUBLE(NumpyPcg64(42).random(), 0x1.8c43f79a2db24p-1, "default_rng(42).random()");
  // np.random.default_rng(2**128 + 3).uniform(-5.5, 2.25)
  EXPECT_SAME_DOUBLE(NumpyPcg64::from_decimal("340282366920938463463374607431768211459").uniform(-5.5, 2.25),
                     -0x1.2e3bbb802ecdcp+2, "default_rng(2**128+3).uniform(-5.5, 2.25)");
  // np.random.default_rng(2**64 + 1).bit_generator.random_raw()
  EXPECT_EQ(NumpyPcg64::from_decimal("18446744073709551617").next_uint64(), 12770225960447442859ULL);
  // np.random.default_rng(int.from_bytes(sha256(b"agentperf").digest(), "big")).random()
  std::array<std::uint8_t, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>("agentperf"), 9, digest.data());
  EXPECT_SAME_DOUBLE(NumpyPcg64::from_big_endian_bytes(digest).random(), 0x1.e62ef8034de9cp-3,
                     "default_rng(sha256 big-endian).random()");
  // AIPerf: _seed_for_trace_lane(42, "trace-0", 0), t* over [0.25, 0.75] of
  // [1717000000000, 1717000900000] ms.
  EXPECT_EQ(aiperf_seed_for_trace_lane(42, "trace-0", 0), 7007677630276216842ULL);
  EXPECT_SAME_DOUBLE(aiperf_t_star_ms(42, "trace-0", 0, 1717000000000.0, 1717000900000.0, 0.25, 0.75),
                     0x1.8fc532cf66cf1p+40, "aiperf t* (42, trace-0, lane 0)");
}

TEST(NumpyRandom, SeedWordsAreNumpys) {
  EXPECT_EQ(numpy_words_of_u64(0), std::vector<std::uint32_t>{0});
  EXPECT_EQ(numpy_words_of_u64(1ULL << 63), (std::vector<std::uint32_t>{0, 0x80000000u}));
  EXPECT_EQ(numpy_words_of_decimal("18446744073709551617"), (std::vector<std::uint32_t>{1, 0, 1}));
  // numpy's own docstring example for _coerce_to_uint32_array
  EXPECT_EQ(numpy_words_of_decimal("1234567890123456789012345678901234567890"),
            (std::vector<std::uint32_t>{3460238034u, 2898026390u, 3235640248u, 2697535605u, 3u}));
  const std::uint8_t be[] = {0, 0, 0x01, 0x02, 0x03};
  EXPECT_EQ(numpy_words_of_big_endian(be), (std::vector<std::uint32_t>{0x00010203u}));
  EXPECT_EQ(numpy_words_of_little_endian(be), (std::vector<std::uint32_t>{0x02010000u, 0x03u}));
  EXPECT_THROW(numpy_words_of_decimal("-1"), std::invalid_argument);
  EXPECT_THROW(numpy_words_of_decimal(""), std::invalid_argument);
}

TEST(NumpyRandom, UniformRejectsWhatNumpyRejects) {
  NumpyPcg64 g(1);
  EXPECT_THROW(g.uniform(3.0, 1.0), std::invalid_argument);   // ValueError: high - low < 0
  EXPECT_THROW(g.uniform(0.0, -0.0), std::invalid_argument);  // -0.0 has its sign bit set
  EXPECT_THROW(g.uniform(-1e308, 1e308), std::overflow_error);
  EXPECT_EQ(g.uniform(1.0, 1.0), 1.0);
}

// ---- golden values made now by numpy ----

struct PythonRun {
  std::string output;
  int status = -1;
};

// The python found at configure time; the AGENTPERF_NUMPY_PYTHON environment
// variable overrides it.
std::string numpy_python() {
  const char* env = std::getenv("AGENTPERF_NUMPY_PYTHON");
  return env != nullptr && *env != '\0' ? env : AGENTPERF_NUMPY_PYTHON;
}

PythonRun run_golden_script() {
  const std::string cmd = "'" + numpy_python() + "' '" + AGENTPERF_NUMPY_GOLDEN_SCRIPT + "' 2>&1";
  const auto run = agentperf::test_support::run_shell(cmd);
  PythonRun r;
  r.status = run.code;
  r.output = run.output;
  return r;
}

TEST(NumpyRandom, GoldenFromNumpyAtTestTime) {
  const PythonRun run = run_golden_script();
  ASSERT_EQ(run.status, 0) << "numpy golden values could not be made: " << numpy_python() << " "
                           << AGENTPERF_NUMPY_GOLDEN_SCRIPT << " exited " << run.status
                           << ". This test needs Debian's python3-numpy (scripts/setup.sh installs it). Output:\n"
                           << run.output;
  std::vector<json> lines;
  std::size_t pos = 0;
  while (pos < run.output.size()) {
    std::size_t end = run.output.find('\n', pos);
    if (end == std::string::npos) end = run.output.size();
    // (stderr is mixed in for the failure message; only JSON lines count)
    if (end > pos && run.output[pos] == '{') lines.push_back(json::parse(run.output.substr(pos, end - pos)));
    pos = end + 1;
  }
  ASSERT_GE(lines.size(), 2u);
  ASSERT_TRUE(lines[0].contains("numpy_version")) << lines[0].dump();
  const std::string sha_message = lines[0]["sha_message"].get<std::string>();
  std::array<std::uint8_t, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(sha_message.data()), sha_message.size(), digest.data());
  const std::vector<std::uint32_t> sha_be = numpy_words_of_big_endian(digest);
  const std::vector<std::uint32_t> sha_le = numpy_words_of_little_endian(digest);

  int seeds = 0, aiperf_cases = 0;
  for (std::size_t li = 1; li < lines.size(); ++li) {
    const json& line = lines[li];
    if (line.contains("seed")) {
      ++seeds;
      const std::string seed = line["seed"].get<std::string>();
      SCOPED_TRACE("numpy " + lines[0]["numpy_version"].get<std::string>() + ", seed " + seed);
      const std::vector<std::uint32_t> words = numpy_words_of_decimal(seed);
      // The sha256 seeds must come out the same through the byte helpers.
      if (words == sha_be) {
        EXPECT_EQ(NumpyPcg64::from_big_endian_bytes(digest).next_uint64(), NumpyPcg64(words).next_uint64());
      }
      if (words == sha_le) {
        EXPECT_EQ(NumpyPcg64::from_little_endian_bytes(digest).next_uint64(), NumpyPcg64(words).next_uint64());
      }

      const NumpyPcg64 fresh(words);
      EXPECT_EQ(u128_decimal(fresh.state()), line["state"].get<std::string>());
      EXPECT_EQ(u128_decimal(fresh.increment()), line["inc"].get<std::string>());
      NumpyPcg64 raw(words);
      for (const json& r : line["raw"]) EXPECT_EQ(std::to_string(raw.next_uint64()), r.get<std::string>());
      NumpyPcg64 draws(words);
      for (const json& r : line["random"]) EXPECT_SAME_DOUBLE(draws.random(), from_hex(r), "random()");
      for (const json& u : line["uniform"]) {
        const double lo = from_hex(u[0]), hi = from_hex(u[1]);
        NumpyPcg64 g(words);
        for (const json& r : u[2])
          EXPECT_SAME_DOUBLE(g.uniform(lo, hi), from_hex(r), "uniform(" + fmt17(lo) + ", " + fmt17(hi) + ")");
      }
    } else if (line.contains("aiperf")) {
      ++aiperf_cases;
      const json& a = line["aiperf"];
      const std::uint64_t base_seed = std::stoull(a["base_seed"].get<std::string>());
      const std::string trace_id = a["trace_id"].get<std::string>();
      const std::optional<std::uint64_t> lane =
          a["lane"].is_null() ? std::nullopt : std::optional<std::uint64_t>(a["lane"].get<std::uint64_t>());
      SCOPED_TRACE("aiperf base_seed " + std::to_string(base_seed) + ", trace " + trace_id +
                   (lane ? ", lane " + std::to_string(*lane) : ""));
      const std::uint64_t seed =
          lane ? aiperf_seed_for_trace_lane(base_seed, trace_id, *lane) : aiperf_seed_for_trace(base_seed, trace_id);
      EXPECT_EQ(std::to_string(seed), a["seed"].get<std::string>());
      const double t = aiperf_t_star_ms(base_seed, trace_id, lane, from_hex(a["start_ms"]), from_hex(a["end_ms"]),
                                        from_hex(a["min_ratio"]), from_hex(a["max_ratio"]));
      EXPECT_SAME_DOUBLE(t, from_hex(a["t_star_ms"]), "t*");
    } else {
      ADD_FAILURE() << "unexpected golden line: " << line.dump();
    }
  }
  EXPECT_EQ(seeds, 10);
  EXPECT_EQ(aiperf_cases, 7);
}

}  // namespace
}  // namespace agentperf
