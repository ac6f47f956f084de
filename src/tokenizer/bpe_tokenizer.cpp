#include "tokenizer/bpe_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <simdjson.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <climits>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "common/error.h"

namespace agentperf::tokenizer {
namespace {

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// GPT-2's reversible map from bytes to printable code points.
std::array<std::uint32_t, 256> byte_to_codepoint() {
  std::array<std::uint32_t, 256> map{};
  std::array<bool, 256> direct{};
  for (int b = '!'; b <= '~'; ++b) direct[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) direct[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) direct[b] = true;
  std::uint32_t next = 256;
  for (int b = 0; b < 256; ++b) map[b] = direct[b] ? static_cast<std::uint32_t>(b) : next++;
  return map;
}

struct AddedToken {
  std::string content;
  TokenId id;
};

std::string pcre_error(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<char*>(buf);
}

}  // namespace

struct BpeTokenizer::Impl {
  std::string source;
  std::unordered_map<std::string, TokenId> vocab;
  std::vector<std::string> id_to_token;  // vocabulary strings (added tokens: their content)
  std::vector<bool> is_added;
  std::unordered_map<std::uint64_t, std::pair<std::int32_t, TokenId>> merges;  // (a,b) -> (rank, merged)
  std::array<TokenId, 256> byte_token{};
  std::unordered_map<std::uint32_t, std::uint8_t> codepoint_to_byte;
  std::vector<AddedToken> added;              // sorted longest first within a first byte
  std::array<std::vector<std::size_t>, 256> added_by_first{};
  bool nfc = false;
  pcre2_code* re = nullptr;

  ~Impl() {
    if (re) pcre2_code_free(re);
  }

  [[noreturn]] void fail(const std::string& what) const { throw UserError(source + ": " + what); }

  static std::uint64_t pair_key(TokenId a, TokenId b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
  }

  void bpe(std::string_view piece, std::vector<TokenId>& out) const {
    std::vector<TokenId> syms;
    syms.reserve(piece.size());
    for (unsigned char c : piece) syms.push_back(byte_token[c]);
    while (syms.size() > 1) {
      std::int32_t best_rank = INT32_MAX;
      TokenId best_a = 0, best_b = 0, best_m = 0;
      for (std::size_t i = 0; i + 1 < syms.size(); ++i) {
        auto it = merges.find(pair_key(syms[i], syms[i + 1]));
        if (it != merges.end() && it->second.first < best_rank) {
          best_rank = it->second.first;
          best_a = syms[i];
          best_b = syms[i + 1];
          best_m = it->second.second;
        }
      }
      if (best_rank == INT32_MAX) break;
      std::size_t w = 0;
      for (std::size_t i = 0; i < syms.size();) {
        if (i + 1 < syms.size() && syms[i] == best_a && syms[i + 1] == best_b) {
          syms[w++] = best_m;
          i += 2;
        } else {
          syms[w++] = syms[i++];
        }
      }
      syms.resize(w);
    }
    out.insert(out.end(), syms.begin(), syms.end());
  }

  // Pieces of one pre-tokenized span, with a per-thread cache of results.
  void encode_piece(std::string_view piece, std::vector<TokenId>& out) const {
    thread_local std::unordered_map<const Impl*, std::unordered_map<std::string, std::vector<TokenId>>> caches;
    auto& cache = caches[this];
    if (auto it = cache.find(std::string(piece)); it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
    std::vector<TokenId> ids;
    bpe(piece, ids);
    if (cache.size() > 200000) cache.clear();
    cache.emplace(std::string(piece), ids);
    out.insert(out.end(), ids.begin(), ids.end());
  }

  void encode_ordinary(std::string_view text, std::vector<TokenId>& out) const {
    if (text.empty()) return;
    std::string normalized;
    if (nfc) {
      bool ascii = true;
      for (unsigned char c : text) ascii = ascii && c < 0x80;
      if (!ascii) {
        utf8proc_uint8_t* dst = nullptr;
        const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                    static_cast<utf8proc_ssize_t>(text.size()), &dst,
                                    static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
        if (n >= 0) {
          normalized.assign(reinterpret_cast<char*>(dst), static_cast<std::size_t>(n));
          text = normalized;
        }
        std::free(dst);
      }
    }
    thread_local std::unordered_map<const Impl*, pcre2_match_data*> match_data;
    auto& md = match_data[this];
    if (!md) md = pcre2_match_data_create_from_pattern(re, nullptr);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    const PCRE2_SIZE len = text.size();
    PCRE2_SIZE pos = 0;
    while (pos < len) {
      const int rc = pcre2_jit_match(re, subject, len, pos, 0, md, nullptr);
      if (rc < 0) {
        encode_piece(text.substr(pos), out);  // no further match: the rest is one piece
        return;
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      if (ov[0] > pos) encode_piece(text.substr(pos, ov[0] - pos), out);  // an unmatched gap (Isolated)
      if (ov[1] == ov[0]) {
        // Empty match: step over one UTF-8 character.
        PCRE2_SIZE next = ov[1] + 1;
        while (next < len && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) ++next;
        encode_piece(text.substr(ov[1], next - ov[1]), out);
        pos = next;
        continue;
      }
      encode_piece(text.substr(ov[0], ov[1] - ov[0]), out);
      pos = ov[1];
    }
  }
};

BpeTokenizer::BpeTokenizer() : impl_(std::make_unique<Impl>()) {}
BpeTokenizer::~BpeTokenizer() = default;
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;

BpeTokenizer BpeTokenizer::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read tokenizer file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return from_json(ss.str(), path);
}

namespace {
// Token ids index dense tables (id -> string, is-added flags), so an id
// sizes an allocation: 2^40 would ask for terabytes. Real vocabularies are
// ~150k-260k; 2^24 leaves ample room (docs/input-limits-files.md).
constexpr std::int64_t kMaxTokenId = std::int64_t{1} << 24;
const std::string kIdBound = "expected an id in [0, 16777216) (vocabularies are bounded at 2^24 tokens)";
}  // namespace

BpeTokenizer BpeTokenizer::from_json(std::string_view json, const std::string& source) {
  BpeTokenizer t;
  Impl& d = *t.impl_;
  d.source = source;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc))
    d.fail(std::string("not valid JSON (") + simdjson::error_message(err) + ")");
  auto type_of = [](simdjson::dom::element e) {
    std::string_view s;
    if (e["type"].get_string().get(s)) return std::string("(no type)");
    return std::string(s);
  };

  // normalizer: null, NFC, or a Sequence of NFC
  simdjson::dom::element norm;
  if (doc["normalizer"].get(norm) == simdjson::SUCCESS && !norm.is_null()) {
    const std::string nt = type_of(norm);
    if (nt == "NFC") {
      d.nfc = true;
    } else if (nt == "Sequence") {
      simdjson::dom::array seq;
      if (norm["normalizers"].get_array().get(seq)) d.fail("normalizer Sequence without 'normalizers'");
      for (auto n : seq) {
        if (type_of(n) != "NFC") d.fail("unsupported normalizer '" + type_of(n) + "' (supported: NFC)");
        d.nfc = true;
      }
    } else {
      d.fail("unsupported normalizer '" + nt + "' (supported: NFC, Sequence of NFC)");
    }
  }

  // pre_tokenizer: Sequence[Split(Regex, Isolated), ByteLevel(use_regex=false)] or ByteLevel(use_regex=true)
  std::string pattern;
  simdjson::dom::element pre;
  if (doc["pre_tokenizer"].get(pre) || pre.is_null()) d.fail("missing 'pre_tokenizer' (a byte-level BPE needs one)");
  std::vector<simdjson::dom::element> steps;
  if (type_of(pre) == "Sequence") {
    simdjson::dom::array seq;
    if (pre["pretokenizers"].get_array().get(seq)) d.fail("pre_tokenizer Sequence without 'pretokenizers'");
    for (auto s : seq) steps.push_back(s);
  } else {
    steps.push_back(pre);
  }
  bool byte_level = false;
  for (auto s : steps) {
    const std::string st = type_of(s);
    if (st == "Split") {
      std::string_view behavior, regex;
      if (s["behavior"].get_string().get(behavior) || behavior != "Isolated")
        d.fail("unsupported Split behavior '" + std::string(behavior) + "' (supported: Isolated)");
      bool invert = false;
      if (s["invert"].get_bool().get(invert) == simdjson::SUCCESS && invert) d.fail("unsupported Split with invert: true");
      if (s["pattern"]["Regex"].get_string().get(regex)) d.fail("unsupported Split pattern (supported: {\"Regex\": ...})");
      pattern = std::string(regex);
    } else if (st == "ByteLevel") {
      bool prefix = false, use_regex = true;
      // Absent (or not a boolean): the defaults above. (The error codes are
      // compared: GCC does not let a (void) cast drop warn_unused_result.)
      if (s["add_prefix_space"].get_bool().get(prefix) != simdjson::SUCCESS) prefix = false;
      if (s["use_regex"].get_bool().get(use_regex) != simdjson::SUCCESS) use_regex = true;
      if (prefix) d.fail("unsupported ByteLevel add_prefix_space: true");
      if (use_regex && pattern.empty())
        pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";  // GPT-2
      byte_level = true;
    } else {
      d.fail("unsupported pre_tokenizer '" + st + "' (supported: Split, ByteLevel)");
    }
  }
  if (!byte_level) d.fail("pre_tokenizer has no ByteLevel step: only byte-level BPE is supported");
  if (pattern.empty()) d.fail("pre_tokenizer has no split regex");

  simdjson::dom::element dec;
  if (doc["decoder"].get(dec) == simdjson::SUCCESS && !dec.is_null() && type_of(dec) != "ByteLevel")
    d.fail("unsupported decoder '" + type_of(dec) + "' (supported: ByteLevel)");

  simdjson::dom::object model;
  if (doc["model"].get_object().get(model)) d.fail("missing 'model'");
  std::string_view mtype;
  if (model["type"].get_string().get(mtype) || mtype != "BPE")
    d.fail("unsupported model type '" + std::string(mtype) + "' (supported: BPE)");
  bool flag = false;
  if (model["byte_fallback"].get_bool().get(flag) == simdjson::SUCCESS && flag)
    d.fail("unsupported model.byte_fallback: true");
  simdjson::dom::element dropout;
  if (model["dropout"].get(dropout) == simdjson::SUCCESS && !dropout.is_null()) d.fail("unsupported model.dropout");
  std::string_view affix;
  if (model["continuing_subword_prefix"].get_string().get(affix) == simdjson::SUCCESS && !affix.empty())
    d.fail("unsupported model.continuing_subword_prefix");

  simdjson::dom::object vocab;
  if (model["vocab"].get_object().get(vocab)) d.fail("missing 'model.vocab'");
  for (auto [key, value] : vocab) {
    std::int64_t id;
    if (value.get_int64().get(id) || id < 0) d.fail("model.vocab entry '" + std::string(key) + "' has no integer id");
    if (id >= kMaxTokenId)
      d.fail("model.vocab entry '" + std::string(key) + "' has id " + std::to_string(id) + ", " + kIdBound);
    d.vocab.emplace(std::string(key), static_cast<TokenId>(id));
    if (static_cast<std::size_t>(id) >= d.id_to_token.size()) d.id_to_token.resize(static_cast<std::size_t>(id) + 1);
    d.id_to_token[static_cast<std::size_t>(id)] = std::string(key);
  }
  const auto cps = byte_to_codepoint();
  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(s, cps[b]);
    auto it = d.vocab.find(s);
    if (it == d.vocab.end()) d.fail("model.vocab lacks the byte-level token for byte " + std::to_string(b));
    d.byte_token[b] = it->second;
    d.codepoint_to_byte[cps[b]] = static_cast<std::uint8_t>(b);
  }
  simdjson::dom::array merges;
  if (model["merges"].get_array().get(merges)) d.fail("missing 'model.merges'");
  std::int32_t rank = 0;
  for (auto m : merges) {
    std::string a, b;
    std::string_view s;
    simdjson::dom::array pair;
    if (m.get_string().get(s) == simdjson::SUCCESS) {
      const auto sp = s.find(' ');
      if (sp == std::string_view::npos) d.fail("model.merges entry " + std::to_string(rank) + " is not 'a b'");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.get_array().get(pair) == simdjson::SUCCESS && pair.size() == 2) {
      std::string_view x, y;
      if (pair.at(0).get_string().get(x) || pair.at(1).get_string().get(y))
        d.fail("model.merges entry " + std::to_string(rank) + " is not a pair of strings");
      a = x;
      b = y;
    } else {
      d.fail("model.merges entry " + std::to_string(rank) + " is neither 'a b' nor [a, b]");
    }
    auto ia = d.vocab.find(a), ib = d.vocab.find(b), im = d.vocab.find(a + b);
    if (ia == d.vocab.end() || ib == d.vocab.end() || im == d.vocab.end())
      d.fail("model.merges entry " + std::to_string(rank) + " ('" + a + "', '" + b + "') uses tokens not in the vocab");
    d.merges.emplace(Impl::pair_key(ia->second, ib->second), std::make_pair(rank, im->second));
    ++rank;
  }

  simdjson::dom::array added;
  if (doc["added_tokens"].get_array().get(added) == simdjson::SUCCESS) {
    for (auto a : added) {
      std::string_view content;
      std::int64_t id;
      if (a["content"].get_string().get(content) || a["id"].get_int64().get(id))
        d.fail("added_tokens entry without content/id");
      if (id < 0 || id >= kMaxTokenId)
        d.fail("added_tokens entry '" + std::string(content) + "' has id " + std::to_string(id) + ", " + kIdBound);
      bool lstrip = false, rstrip = false, single = false;
      if (a["lstrip"].get_bool().get(lstrip) != simdjson::SUCCESS) lstrip = false;
      if (a["rstrip"].get_bool().get(rstrip) != simdjson::SUCCESS) rstrip = false;
      if (a["single_word"].get_bool().get(single) != simdjson::SUCCESS) single = false;
      if (lstrip || rstrip || single)
        d.fail("unsupported added token '" + std::string(content) + "' with lstrip/rstrip/single_word");
      if (content.empty()) continue;
      d.added.push_back({std::string(content), static_cast<TokenId>(id)});
      if (static_cast<std::size_t>(id) >= d.id_to_token.size()) d.id_to_token.resize(static_cast<std::size_t>(id) + 1);
      d.id_to_token[static_cast<std::size_t>(id)] = std::string(content);
    }
  }
  d.is_added.assign(d.id_to_token.size(), false);
  for (const auto& a : d.added) d.is_added[static_cast<std::size_t>(a.id)] = true;
  std::sort(d.added.begin(), d.added.end(),
            [](const AddedToken& x, const AddedToken& y) { return x.content.size() > y.content.size(); });
  for (std::size_t i = 0; i < d.added.size(); ++i)
    d.added_by_first[static_cast<unsigned char>(d.added[i].content[0])].push_back(i);

  int errcode = 0;
  PCRE2_SIZE erroff = 0;
  d.re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                       PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &errcode, &erroff, nullptr);
  if (!d.re) d.fail("the pre_tokenizer regex does not compile: " + pcre_error(errcode) + " at offset " + std::to_string(erroff));
  if (int rc = pcre2_jit_compile(d.re, PCRE2_JIT_COMPLETE); rc != 0)
    d.fail("the pre_tokenizer regex cannot be JIT-compiled: " + pcre_error(rc));
  return t;
}

std::vector<TokenId> BpeTokenizer::encode(std::string_view text) const {
  const Impl& d = *impl_;
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 1);
  std::size_t start = 0, i = 0;
  while (i < text.size()) {
    const auto& cands = d.added_by_first[static_cast<unsigned char>(text[i])];
    const AddedToken* hit = nullptr;
    for (std::size_t c : cands) {
      const auto& a = d.added[c];
      if (text.compare(i, a.content.size(), a.content) == 0) {
        hit = &a;
        break;
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    d.encode_ordinary(text.substr(start, i - start), out);
    out.push_back(hit->id);
    i += hit->content.size();
    start = i;
  }
  d.encode_ordinary(text.substr(start), out);
  return out;
}

std::size_t BpeTokenizer::count(std::string_view text) const { return encode(text).size(); }

std::string BpeTokenizer::decode(const std::vector<TokenId>& ids) const {
  const Impl& d = *impl_;
  std::string out;
  for (TokenId id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= d.id_to_token.size()) continue;
    const std::string& s = d.id_to_token[static_cast<std::size_t>(id)];
    if (d.is_added[static_cast<std::size_t>(id)]) {
      out += s;
      continue;
    }
    // Reverse the byte-level mapping, one code point at a time.
    std::size_t k = 0;
    while (k < s.size()) {
      utf8proc_int32_t cp = 0;
      const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + k),
                                      static_cast<utf8proc_ssize_t>(s.size() - k), &cp);
      if (n <= 0) break;
      auto it = d.codepoint_to_byte.find(static_cast<std::uint32_t>(cp));
      if (it != d.codepoint_to_byte.end()) out.push_back(static_cast<char>(it->second));
      k += static_cast<std::size_t>(n);
    }
  }
  return out;
}

std::size_t BpeTokenizer::vocab_size() const { return impl_->id_to_token.size(); }

std::string_view BpeTokenizer::token_string(TokenId id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= impl_->id_to_token.size()) return {};
  return impl_->id_to_token[static_cast<std::size_t>(id)];
}

std::optional<TokenId> BpeTokenizer::token_id(std::string_view s) const {
  auto it = impl_->vocab.find(std::string(s));
  if (it == impl_->vocab.end()) return std::nullopt;
  return it->second;
}

}  // namespace agentperf::tokenizer
