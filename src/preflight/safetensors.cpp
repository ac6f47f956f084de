#include "preflight/safetensors.h"

#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace agentperf::preflight {

int dtype_bytes(const std::string& d) {
  static const std::map<std::string, int> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1}, {"I16", 2}, {"U16", 2},
      {"F16", 2},  {"BF16", 2}, {"I32", 4}, {"U32", 4},    {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8}};
  auto it = sizes.find(d);
  return it == sizes.end() ? 0 : it->second;
}

SafetensorsReport check_safetensors(const std::string& path) {
  SafetensorsReport r;
  r.path = path;
  auto fail = [&](std::string why) {
    r.problems.push_back(std::move(why));
    return r;
  };
  std::error_code ec;
  r.file_bytes = std::filesystem::file_size(path, ec);
  if (ec) return fail("cannot stat: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot open for reading");
  unsigned char len_bytes[8];
  if (!in.read(reinterpret_cast<char*>(len_bytes), 8)) return fail("shorter than the 8-byte header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  r.header_bytes = n;
  if (n == 0 || n > 100'000'000) return fail("header length " + std::to_string(n) + " is not plausible");
  if (8 + n > r.file_bytes)
    return fail("truncated: header of " + std::to_string(n) + " bytes but the file has " + std::to_string(r.file_bytes));
  std::string header(n, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n))) return fail("cannot read the header");
  r.data_bytes = r.file_bytes - 8 - n;

  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(header).get(doc)) return fail(std::string("header is not valid JSON (") + simdjson::error_message(err) + ")");
  simdjson::dom::object obj;
  if (doc.get_object().get(obj)) return fail("header is not a JSON object");
  for (auto [key, value] : obj) {
    const std::string name(key);
    if (name == "__metadata__") continue;
    simdjson::dom::object t;
    if (value.get_object().get(t)) {
      r.problems.push_back("tensor '" + name + "': not an object");
      continue;
    }
    TensorInfo info;
    std::string_view dtype;
    simdjson::dom::array shape, offsets;
    if (t["dtype"].get_string().get(dtype) || t["shape"].get_array().get(shape) ||
        t["data_offsets"].get_array().get(offsets) || offsets.size() != 2) {
      r.problems.push_back("tensor '" + name + "': needs dtype, shape and data_offsets [begin, end]");
      continue;
    }
    info.dtype = std::string(dtype);
    std::uint64_t elements = 1;
    bool bad_shape = false, overflow = false;
    for (auto d : shape) {
      std::int64_t v;
      if (d.get_int64().get(v) || v < 0) bad_shape = true;
      else {
        info.shape.push_back(v);
        // Checked: [2^40, 2^40] wraps to 0 elements, which would then
        // "match" empty data_offsets.
        overflow = overflow || __builtin_mul_overflow(elements, static_cast<std::uint64_t>(v), &elements);
      }
    }
    std::uint64_t b = 0, e = 0;
    if (bad_shape || offsets.at(0).get_uint64().get(b) || offsets.at(1).get_uint64().get(e)) {
      r.problems.push_back("tensor '" + name + "': shape and offsets must be non-negative integers");
      continue;
    }
    info.begin = b;
    info.end = e;
    const int size = dtype_bytes(info.dtype);
    std::uint64_t bytes = 0;
    overflow = overflow || __builtin_mul_overflow(elements, static_cast<std::uint64_t>(std::max(size, 1)), &bytes);
    if (size == 0) r.problems.push_back("tensor '" + name + "': unknown dtype '" + info.dtype + "'");
    if (overflow) {
      std::string dims;
      for (auto v : info.shape) dims += (dims.empty() ? "" : ", ") + std::to_string(v);
      r.problems.push_back("tensor '" + name + "': shape [" + dims + "] of " + info.dtype +
                           " is more than 2^64 bytes (the size overflows 64 bits); expected at most the file's " +
                           std::to_string(r.data_bytes) + " data bytes");
    } else if (e < b) r.problems.push_back("tensor '" + name + "': data_offsets end before they begin");
    else if (size && bytes != e - b)
      r.problems.push_back("tensor '" + name + "': " + info.dtype + " x " + std::to_string(elements) + " elements = " +
                           std::to_string(bytes) + " bytes, but data_offsets span " +
                           std::to_string(e - b));
    if (e > r.data_bytes)
      r.problems.push_back("tensor '" + name + "': data ends at byte " + std::to_string(e) + " but the file holds only " +
                           std::to_string(r.data_bytes) + " data bytes (truncated?)");
    r.tensors.emplace(name, std::move(info));
  }
  // The tensors must tile the data region exactly.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  for (const auto& [name, t] : r.tensors) spans.emplace_back(t.begin, t.end);
  std::sort(spans.begin(), spans.end());
  std::uint64_t at = 0;
  for (const auto& [b, e] : spans) {
    if (b != at) {
      r.problems.push_back(b > at ? "gap in the data region at byte " + std::to_string(at)
                                  : "tensors overlap at byte " + std::to_string(b));
      break;
    }
    at = e;
  }
  if (r.problems.empty() && at != r.data_bytes)
    r.problems.push_back(std::to_string(r.data_bytes - std::min(at, r.data_bytes)) + " bytes after the last tensor");
  r.ok = r.problems.empty();
  return r;
}

}  // namespace agentperf::preflight
