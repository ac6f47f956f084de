// Validation of one .safetensors file: an 8-byte little-endian header
// length N, N bytes of JSON {name: {dtype, shape, data_offsets}}, then the
// tensor data. A valid file has a parseable header, known dtypes, offsets
// inside the data region, each tensor's byte length equal to dtype size x
// the product of its shape, and tensors that tile the data region with no
// gaps or overlaps (the safetensors library's own rule).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace agentperf::preflight {

struct TensorInfo {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // relative to the data region
};

struct SafetensorsReport {
  std::string path;
  bool ok = false;
  std::vector<std::string> problems;  // empty when ok
  std::map<std::string, TensorInfo> tensors;
  std::uint64_t header_bytes = 0, data_bytes = 0, file_bytes = 0;
};

// Reads only the header (and the file size); never the tensor data.
SafetensorsReport check_safetensors(const std::string& path);

// Bytes per element of a safetensors dtype, or 0 if unknown.
int dtype_bytes(const std::string& dtype);

}  // namespace agentperf::preflight
