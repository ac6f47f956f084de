// numpy.random.default_rng(seed), bit for bit: the draws AIPerf makes with
// numpy, reproduced in C++ so a replay can pick the same trajectory start
// points (t*) AIPerf would for the same --random-seed and trace ids.
//
// What numpy does, step by step
// =============================
// Sources read: numpy/numpy at 1f90bbb55e65e7de68921bc3f1a2d94492fdf689
// (2.6.0.dev0): numpy/random/bit_generator.pyx, numpy/random/_pcg64.pyx,
// numpy/random/src/pcg64/pcg64.h and pcg64.c, numpy/random/_common.pxd and
// _common.pyx, numpy/random/_generator.pyx,
// numpy/random/src/distributions/distributions.c. The same algorithm is in
// Debian's numpy 1.24.2, against which tests/common/numpy_random_test.cpp
// checks this file; numpy has kept these streams stable since 1.17.
//
// 1. default_rng(seed) with an integer seed is Generator(PCG64(seed)), and
//    PCG64(seed) hands the integer to SeedSequence(seed) (BitGenerator's
//    constructor does that for anything that is not already a SeedSequence).
//
// 2. SeedSequence turns the Python int into 32-bit words, least significant
//    word first (_int_to_uint32_array): 0 gives one word [0]; otherwise the
//    int is cut into words until nothing is left, so no word above the top
//    non-zero one is kept (2^64 + 1 is [1, 0, 1]; 2^63 is [0, 0x80000000]).
//    A negative int is rejected. A uint32 numpy array is taken as it is,
//    trailing zero words included: the span constructor below is that case.
//    No spawn key, so nothing is appended to those words.
//
// 3. The words are mixed into a pool of 4 uint32 (mix_entropy), all
//    arithmetic mod 2^32 and hash_const starting at INIT_A = 0x43b0d7e5:
//      hashmix(v): v ^= hash_const; hash_const *= MULT_A (0x931e8875);
//                  v *= hash_const; v ^= v >> 16; return v
//      mix(x, y):  r = 0xca01f9dd * x - 0x4973f715 * y; r ^= r >> 16
//    a. pool[i] = hashmix(word[i]) for i < 4 (hashmix(0) past the end);
//    b. for src in 0..3, for dst in 0..3, src != dst:
//         pool[dst] = mix(pool[dst], hashmix(pool[src]));
//    c. every word past the fourth: for dst in 0..3:
//         pool[dst] = mix(pool[dst], hashmix(word[k])).
//    One hash_const runs through a, b and c in that order.
//
// 4. PCG64 asks generate_state(4, uint64): 8 uint32 words, hash_const
//    starting at INIT_B = 0x8b51f9dd, the pool read cyclically:
//      w = pool[i % 4]; w ^= hash_const; hash_const *= MULT_B (0x58f38ded);
//      w *= hash_const; w ^= w >> 16
//    and pairs of words read little-endian as uint64:
//      u64[k] = w[2k] | w[2k+1] << 32.
//
// 5. pcg64_set_seed(seed = u64[0..1], inc = u64[2..3]) builds the 128-bit
//    values with the FIRST word high: s = u64[0] << 64 | u64[1],
//    i = u64[2] << 64 | u64[3]; then pcg_setseq_128_srandom_r:
//      state = 0; inc = (i << 1) | 1; step(); state += s; step();
//    where step() is state = state * M + inc (mod 2^128), M the 128-bit
//    multiplier 2549297995355413924 * 2^64 + 4865540595714422341.
//
// 6. next_uint64 (pcg_setseq_128_xsl_rr_64_random_r) steps FIRST, then
//    outputs XSL-RR of the new state: rotr64(hi ^ lo, state >> 122).
//
// 7. Generator.random() is next_double: (next_uint64() >> 11) * 2^-53
//    (uint64_to_double in _common.pxd), a multiple of 2^-53 in [0, 1).
//    (next_uint32, used by integer draws, halves a uint64 and keeps the
//    other half: not needed here and not implemented.)
//
// 8. Generator.uniform(low, high) with scalar floats: range = high - low;
//    a non-finite range raises OverflowError ("high - low range exceeds
//    valid bounds"); a range whose sign bit is set (negative, or -0.0)
//    raises ValueError ("high - low < 0"); otherwise it returns
//    random_uniform = low + range * next_double(), one draw, even when
//    range is 0. No clamping: low + range * u can round up to high.
//    The product is rounded before the sum (no fused multiply-add); numpy's
//    baseline x86-64 build has none, and uniform() below forbids it.
//
// AIPerf's per-trace seed
// =======================
// ai-dynamo/aiperf, src/aiperf/timing/trajectory_source.py, at
// 1d2548494465205c387e5b9d3dfc75dd96c4604a (the same two functions, word for
// word, at 757a509a66250c7d529cf1a8a813f3df7212a27d and in later versions):
//
//   def _seed_for_trace(base_seed: int, trace_id: str) -> int:
//       h = hashlib.sha256(f"{base_seed}:{trace_id}".encode()).digest()
//       return int.from_bytes(h[:8], "big")
//
//   def _seed_for_trace_lane(base_seed: int, trace_id: str, lane_index: int) -> int:
//       h = hashlib.sha256(f"{base_seed}:{trace_id}:{lane_index}".encode()).digest()
//       return int.from_bytes(h[:8], "big")
//
// So the seed is the first 8 bytes of the digest, big-endian: < 2^64, not a
// 256-bit integer. TrajectorySource._build_timestamped_trajectory then does
//
//   start_ms, end_ms = bounds          # min/max turn timestamp_ms over the
//   duration_ms = end_ms - start_ms    # root and all its subagents
//   seed = (_seed_for_trace(self._random_seed, root_id)
//           if lane_index is None
//           else _seed_for_trace_lane(self._random_seed, root_id, lane_index))
//   rng = np.random.default_rng(seed)
//   lo = start_ms + self._start_min_ratio * duration_ms
//   hi = start_ms + self._start_max_ratio * duration_ms
//   if hi < lo:
//       hi = lo
//   t_star_ms = float(lo if hi == lo else rng.uniform(lo, hi))
//
// with random_seed = config.random_seed if not None else 0
// (phase_orchestrator.py). At 1d25484 a trace's first lane uses
// _seed_for_trace (lane_index None) and wrap-fill lanes (concurrency > pool)
// use _seed_for_trace_lane with the absolute lane index; in the newest
// stored version (_build_trajectory_for_lane) every lane uses
// _seed_for_trace_lane(random_seed, cid, lane). Both are offered below.
// The start ratios come from the config (trajectory_start_min/max_ratio);
// the constructor defaults were 0.0/0.7 at 757a509 and 0.25/0.75 later.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agentperf {

// numpy's SeedSequence(entropy) with the default pool of 4 words and no
// spawn key (steps 2-3 above): the mixed pool.
std::array<std::uint32_t, 4> numpy_seed_sequence_pool(std::span<const std::uint32_t> entropy_words);

// SeedSequence(entropy).generate_state(4, np.uint64) (step 4).
std::array<std::uint64_t, 4> numpy_seed_sequence_state_u64(std::span<const std::uint32_t> entropy_words);

// The uint32 words numpy makes of a non-negative Python int given as bytes
// (int.from_bytes(bytes, "big") or "little"): least significant first, no
// zero words above the top non-zero one, [0] for zero.
std::vector<std::uint32_t> numpy_words_of_big_endian(std::span<const std::uint8_t> bytes);
std::vector<std::uint32_t> numpy_words_of_little_endian(std::span<const std::uint8_t> bytes);
std::vector<std::uint32_t> numpy_words_of_u64(std::uint64_t n);
// A non-negative decimal integer of any length (as numpy takes a seed
// string of decimal digits). Throws std::invalid_argument on anything else.
std::vector<std::uint32_t> numpy_words_of_decimal(std::string_view digits);

// numpy.random.default_rng(seed): PCG64 seeded through SeedSequence.
class NumpyPcg64 {
 public:
  // The seed as uint32 words, least significant first, taken as they are
  // (numpy's SeedSequence of a uint32 array). For a Python int, pass the
  // canonical words (numpy_words_of_*): a trailing zero word changes the
  // stream.
  explicit NumpyPcg64(std::span<const std::uint32_t> seed_words_le);
  explicit NumpyPcg64(std::uint64_t seed);  // default_rng(seed) for seed < 2^64

  // default_rng(int.from_bytes(bytes, "big")) / (..., "little"): e.g. a
  // whole 32-byte sha256 digest, or AIPerf's first 8 bytes (big-endian).
  static NumpyPcg64 from_big_endian_bytes(std::span<const std::uint8_t> bytes);
  static NumpyPcg64 from_little_endian_bytes(std::span<const std::uint8_t> bytes);
  static NumpyPcg64 from_decimal(std::string_view digits);

  std::uint64_t next_uint64();  // bit_generator.random_raw()
  double random();              // Generator.random(): [0, 1)
  // Generator.uniform(low, high). Throws std::overflow_error when high - low
  // is not finite and std::invalid_argument when it is negative or -0.0,
  // as numpy raises OverflowError / ValueError.
  double uniform(double low, double high);

  // bit_generator.state["state"]["state"] / ["inc"], for tests.
  unsigned __int128 state() const noexcept { return state_; }
  unsigned __int128 increment() const noexcept { return inc_; }

 private:
  unsigned __int128 state_ = 0;
  unsigned __int128 inc_ = 0;
};

// AIPerf's _seed_for_trace / _seed_for_trace_lane (quoted above):
// int.from_bytes(sha256(f"{base_seed}:{trace_id}[:{lane_index}]")[:8], "big").
// trace_id is taken as UTF-8 bytes (Python's str.encode()).
std::uint64_t aiperf_seed_for_trace(std::uint64_t base_seed, std::string_view trace_id);
std::uint64_t aiperf_seed_for_trace_lane(std::uint64_t base_seed, std::string_view trace_id,
                                         std::uint64_t lane_index);

// np.random.default_rng of the seed above: _seed_for_trace without a lane,
// _seed_for_trace_lane with one.
NumpyPcg64 aiperf_trace_rng(std::uint64_t base_seed, std::string_view trace_id,
                            std::optional<std::uint64_t> lane_index = std::nullopt);

// TrajectorySource._build_timestamped_trajectory's t*: start_ms/end_ms are
// the trace's min/max turn timestamp (ms, root and subagents together).
double aiperf_t_star_ms(std::uint64_t base_seed, std::string_view trace_id,
                        std::optional<std::uint64_t> lane_index, double start_ms, double end_ms,
                        double start_min_ratio, double start_max_ratio);

}  // namespace agentperf
