// numpy.random.default_rng bit for bit; see numpy_random.h for the steps
// and their sources.
#include "common/numpy_random.h"

#include <openssl/sha.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace agentperf {
namespace {

using u128 = unsigned __int128;

// numpy/random/bit_generator.pyx
constexpr std::uint32_t kInitA = 0x43b0d7e5;
constexpr std::uint32_t kMultA = 0x931e8875;
constexpr std::uint32_t kInitB = 0x8b51f9dd;
constexpr std::uint32_t kMultB = 0x58f38ded;
constexpr std::uint32_t kMixMultL = 0xca01f9dd;
constexpr std::uint32_t kMixMultR = 0x4973f715;
constexpr unsigned kXShift = 16;  // uint32 bits / 2
constexpr std::size_t kPoolSize = 4;

// numpy/random/src/pcg64/pcg64.h: PCG_DEFAULT_MULTIPLIER_{HIGH,LOW}
constexpr u128 kPcgMultiplier = (static_cast<u128>(2549297995355413924ULL) << 64) |
                                static_cast<u128>(4865540595714422341ULL);

std::uint32_t hashmix(std::uint32_t value, std::uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

std::uint32_t mix(std::uint32_t x, std::uint32_t y) {
  std::uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

std::uint64_t rotr64(std::uint64_t value, unsigned rot) {
  return (value >> rot) | (value << ((-rot) & 63u));
}

// The product rounded to double before anything is added to it: a volatile
// store keeps the compiler from fusing a * b + c into one FMA under any
// -ffp-contract setting, as Python (and numpy's baseline build) round twice.
double rounded_product(double a, double b) {
  volatile double p = a * b;
  return p;
}

std::vector<std::uint32_t> strip_high_zero_words(std::vector<std::uint32_t> words) {
  while (words.size() > 1 && words.back() == 0) words.pop_back();
  if (words.empty()) words.push_back(0);
  return words;
}

std::array<std::uint8_t, SHA256_DIGEST_LENGTH> sha256_of(std::string_view s) {
  std::array<std::uint8_t, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), digest.data());
  return digest;
}

std::uint64_t first8_big_endian(std::span<const std::uint8_t> digest) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) v = (v << 8) | digest[i];
  return v;
}

}  // namespace

std::array<std::uint32_t, 4> numpy_seed_sequence_pool(std::span<const std::uint32_t> entropy) {
  std::array<std::uint32_t, kPoolSize> pool{};
  std::uint32_t hash_const = kInitA;
  for (std::size_t i = 0; i < kPoolSize; ++i)
    pool[i] = hashmix(i < entropy.size() ? entropy[i] : 0u, hash_const);
  for (std::size_t src = 0; src < kPoolSize; ++src)
    for (std::size_t dst = 0; dst < kPoolSize; ++dst)
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], hash_const));
  for (std::size_t src = kPoolSize; src < entropy.size(); ++src)
    for (std::size_t dst = 0; dst < kPoolSize; ++dst)
      pool[dst] = mix(pool[dst], hashmix(entropy[src], hash_const));
  return pool;
}

std::array<std::uint64_t, 4> numpy_seed_sequence_state_u64(std::span<const std::uint32_t> entropy) {
  const std::array<std::uint32_t, kPoolSize> pool = numpy_seed_sequence_pool(entropy);
  std::array<std::uint32_t, 8> words{};
  std::uint32_t hash_const = kInitB;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::uint32_t v = pool[i % kPoolSize];
    v ^= hash_const;
    hash_const *= kMultB;
    v *= hash_const;
    v ^= v >> kXShift;
    words[i] = v;
  }
  std::array<std::uint64_t, 4> out{};
  for (std::size_t k = 0; k < out.size(); ++k)
    out[k] = static_cast<std::uint64_t>(words[2 * k]) | (static_cast<std::uint64_t>(words[2 * k + 1]) << 32);
  return out;
}

std::vector<std::uint32_t> numpy_words_of_little_endian(std::span<const std::uint8_t> bytes) {
  std::vector<std::uint32_t> words((bytes.size() + 3) / 4, 0);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    words[i / 4] |= static_cast<std::uint32_t>(bytes[i]) << (8 * (i % 4));
  return strip_high_zero_words(std::move(words));
}

std::vector<std::uint32_t> numpy_words_of_big_endian(std::span<const std::uint8_t> bytes) {
  std::vector<std::uint8_t> reversed(bytes.rbegin(), bytes.rend());
  return numpy_words_of_little_endian(reversed);
}

std::vector<std::uint32_t> numpy_words_of_u64(std::uint64_t n) {
  return strip_high_zero_words({static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(n >> 32)});
}

std::vector<std::uint32_t> numpy_words_of_decimal(std::string_view digits) {
  if (digits.empty()) throw std::invalid_argument("numpy seed: empty decimal string");
  std::vector<std::uint32_t> words{0};
  for (const char c : digits) {
    if (c < '0' || c > '9')
      throw std::invalid_argument("numpy seed: not a non-negative decimal integer: " + std::string(digits));
    std::uint64_t carry = static_cast<std::uint64_t>(c - '0');
    for (std::uint32_t& w : words) {  // words = words * 10 + digit
      const std::uint64_t v = static_cast<std::uint64_t>(w) * 10 + carry;
      w = static_cast<std::uint32_t>(v);
      carry = v >> 32;
    }
    if (carry != 0) words.push_back(static_cast<std::uint32_t>(carry));
  }
  return strip_high_zero_words(std::move(words));
}

NumpyPcg64::NumpyPcg64(std::span<const std::uint32_t> seed_words_le) {
  const std::array<std::uint64_t, 4> v = numpy_seed_sequence_state_u64(seed_words_le);
  // pcg64_set_seed: the first uint64 of each pair is the high half.
  const u128 initstate = (static_cast<u128>(v[0]) << 64) | v[1];
  const u128 initseq = (static_cast<u128>(v[2]) << 64) | v[3];
  // pcg_setseq_128_srandom_r
  state_ = 0;
  inc_ = (initseq << 1) | 1;
  state_ = state_ * kPcgMultiplier + inc_;
  state_ += initstate;
  state_ = state_ * kPcgMultiplier + inc_;
}

NumpyPcg64::NumpyPcg64(std::uint64_t seed) : NumpyPcg64(std::span<const std::uint32_t>(numpy_words_of_u64(seed))) {}

NumpyPcg64 NumpyPcg64::from_big_endian_bytes(std::span<const std::uint8_t> bytes) {
  const std::vector<std::uint32_t> words = numpy_words_of_big_endian(bytes);
  return NumpyPcg64(std::span<const std::uint32_t>(words));
}

NumpyPcg64 NumpyPcg64::from_little_endian_bytes(std::span<const std::uint8_t> bytes) {
  const std::vector<std::uint32_t> words = numpy_words_of_little_endian(bytes);
  return NumpyPcg64(std::span<const std::uint32_t>(words));
}

NumpyPcg64 NumpyPcg64::from_decimal(std::string_view digits) {
  const std::vector<std::uint32_t> words = numpy_words_of_decimal(digits);
  return NumpyPcg64(std::span<const std::uint32_t>(words));
}

std::uint64_t NumpyPcg64::next_uint64() {
  // pcg_setseq_128_xsl_rr_64_random_r: step, then XSL-RR of the new state.
  state_ = state_ * kPcgMultiplier + inc_;
  const auto hi = static_cast<std::uint64_t>(state_ >> 64);
  const auto lo = static_cast<std::uint64_t>(state_);
  return rotr64(hi ^ lo, static_cast<unsigned>(state_ >> 122));
}

double NumpyPcg64::random() {
  return static_cast<double>(next_uint64() >> 11) * (1.0 / 9007199254740992.0);
}

double NumpyPcg64::uniform(double low, double high) {
  const double range = high - low;
  if (!std::isfinite(range)) throw std::overflow_error("high - low range exceeds valid bounds");
  if (std::signbit(range)) throw std::invalid_argument("high - low < 0");
  return low + rounded_product(range, random());
}

std::uint64_t aiperf_seed_for_trace(std::uint64_t base_seed, std::string_view trace_id) {
  std::string key = std::to_string(base_seed);
  key += ':';
  key += trace_id;
  return first8_big_endian(sha256_of(key));
}

std::uint64_t aiperf_seed_for_trace_lane(std::uint64_t base_seed, std::string_view trace_id,
                                         std::uint64_t lane_index) {
  std::string key = std::to_string(base_seed);
  key += ':';
  key += trace_id;
  key += ':';
  key += std::to_string(lane_index);
  return first8_big_endian(sha256_of(key));
}

NumpyPcg64 aiperf_trace_rng(std::uint64_t base_seed, std::string_view trace_id,
                            std::optional<std::uint64_t> lane_index) {
  return NumpyPcg64(lane_index ? aiperf_seed_for_trace_lane(base_seed, trace_id, *lane_index)
                               : aiperf_seed_for_trace(base_seed, trace_id));
}

double aiperf_t_star_ms(std::uint64_t base_seed, std::string_view trace_id,
                        std::optional<std::uint64_t> lane_index, double start_ms, double end_ms,
                        double start_min_ratio, double start_max_ratio) {
  const double duration_ms = end_ms - start_ms;
  const double lo = start_ms + rounded_product(start_min_ratio, duration_ms);
  double hi = start_ms + rounded_product(start_max_ratio, duration_ms);
  if (hi < lo) hi = lo;
  if (hi == lo) return lo;  // AIPerf draws nothing then
  NumpyPcg64 rng = aiperf_trace_rng(base_seed, trace_id, lane_index);
  return rng.uniform(lo, hi);
}

}  // namespace agentperf
