#include "preflight/checkpoint.h"

#include <openssl/evp.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "preflight/safetensors.h"

namespace agentperf::preflight {
namespace fs = std::filesystem;

namespace {

std::string sha256_file(const fs::path& p, std::string& error) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    error = "cannot open";
    return {};
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    EVP_DigestUpdate(ctx, buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) error = "read error";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

bool read_every_byte(const fs::path& p, std::uint64_t expected, std::string& error) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> buf(1 << 20);
  std::uint64_t total = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    total += static_cast<std::uint64_t>(in.gcount());
  }
  if (in.bad()) error = "read error after " + std::to_string(total) + " bytes";
  else if (total != expected) error = "read " + std::to_string(total) + " of " + std::to_string(expected) + " bytes";
  return error.empty();
}

std::map<std::string, std::string> read_checksums(const std::string& path, std::vector<std::string>& reasons) {
  std::map<std::string, std::string> sums;
  std::ifstream in(path);
  if (!in) {
    reasons.push_back("cannot read --checksums file '" + path + "'");
    return sums;
  }
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string digest, name;
    if (!(ls >> digest >> name)) continue;
    if (!name.empty() && name[0] == '*') name.erase(0, 1);
    sums[fs::path(name).filename().string()] = digest;
  }
  return sums;
}

// Why a shard name from the index is not a plain relative path inside the
// checkpoint directory, or "" when it is. Checked on the name alone, before
// anything is opened: an index is input, and "../../etc/passwd" must not be
// read (let alone parsed) because an index named it. Symlinks are not
// resolved: Hugging Face cache snapshots are symlinks into ../../blobs by
// design, and the name, not the link target, is what the index controls.
std::string shard_path_problem(const std::string& name) {
  if (name.empty()) return "is empty";
  const fs::path p(name);
  if (p.has_root_name() || p.has_root_directory()) return "is an absolute path";
  for (const auto& part : p)
    if (part == "..") return "climbs out with '..'";
  return "";
}

}  // namespace

std::vector<std::string> candidate_dirs(const std::string& root, const std::string& model) {
  std::vector<std::string> out;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) out.push_back(p.string());
  };
  if (model.empty()) {
    add(root);
    return out;
  }
  const fs::path r(root);
  add(r / model);
  const auto slash = model.find('/');
  if (slash != std::string::npos) add(r / model.substr(slash + 1));
  // The Hugging Face cache names "Org/Name" as models--Org--Name.
  const std::string cache =
      "models--" + (slash != std::string::npos ? model.substr(0, slash) + "--" + model.substr(slash + 1) : model);
  std::vector<fs::path> snaps;
  std::error_code ec;
  if (fs::is_directory(r / cache / "snapshots", ec))
    for (const auto& e : fs::directory_iterator(r / cache / "snapshots")) snaps.push_back(e.path());
  std::sort(snaps.begin(), snaps.end(), [](const fs::path& a, const fs::path& b) {
    std::error_code e1, e2;
    return fs::last_write_time(a, e1) > fs::last_write_time(b, e2);
  });
  for (const auto& s : snaps) add(s);
  if (out.empty()) add(r);  // the root may be the checkpoint itself
  return out;
}

CandidateResult validate_checkpoint_dir(const std::string& dir, const CheckpointOptions& opts) {
  CandidateResult c;
  c.path = dir;
  const fs::path d(dir);
  std::error_code ec;
  if (!fs::exists(d / "config.json", ec)) c.reasons.push_back("config.json missing");

  std::map<std::string, std::set<std::string>> indexed;  // shard -> tensors the index puts there
  std::optional<std::uint64_t> total_size;
  std::vector<std::string> shards;
  const fs::path index = d / "model.safetensors.index.json";
  if (fs::exists(index, ec)) {
    std::ifstream in(index);
    std::stringstream ss;
    ss << in.rdbuf();
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    simdjson::dom::object map;
    if (parser.parse(ss.str()).get(doc) || doc["weight_map"].get_object().get(map)) {
      c.reasons.push_back("model.safetensors.index.json: not valid JSON with a 'weight_map' object");
      return c;
    }
    std::uint64_t ts;
    if (doc["metadata"]["total_size"].get_uint64().get(ts) == simdjson::SUCCESS) total_size = ts;
    for (auto [tensor, file] : map) {
      std::string_view f;
      if (file.get_string().get(f)) {
        c.reasons.push_back("model.safetensors.index.json: weight_map['" + std::string(tensor) + "'] is not a file name");
        continue;
      }
      if (const auto why = shard_path_problem(std::string(f)); !why.empty()) {
        c.reasons.push_back("model.safetensors.index.json: weight_map['" + std::string(tensor) + "'] = '" +
                            std::string(f) + "' " + why + " (shards must be files inside the checkpoint directory)");
        continue;
      }
      indexed[std::string(f)].insert(std::string(tensor));
    }
    if (map.size() == 0) c.reasons.push_back("model.safetensors.index.json: empty weight_map");
    for (const auto& [f, t] : indexed) shards.push_back(f);
  } else if (fs::exists(d / "model.safetensors", ec)) {
    shards.push_back("model.safetensors");
  } else {
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.path().extension() == ".safetensors") shards.push_back(e.path().filename().string());
    std::sort(shards.begin(), shards.end());
    if (shards.empty()) {
      c.reasons.push_back("no .safetensors files");
      return c;
    }
    if (shards.size() > 1) c.reasons.push_back(std::to_string(shards.size()) + " shards but no model.safetensors.index.json");
  }

  std::map<std::string, std::string> sums;
  if (!opts.checksums.empty()) sums = read_checksums(opts.checksums, c.reasons);
  std::uint64_t tensor_bytes = 0;
  for (const auto& shard : shards) {
    const fs::path p = d / shard;
    if (!fs::exists(p, ec)) {
      c.reasons.push_back(shard + ": missing");
      continue;
    }
    ++c.shards;
    const auto rep = check_safetensors(p.string());
    c.bytes += rep.file_bytes;
    for (const auto& why : rep.problems) c.reasons.push_back(shard + ": " + why);
    c.tensors += static_cast<std::int64_t>(rep.tensors.size());
    for (const auto& [name, t] : rep.tensors) tensor_bytes += t.end - t.begin;
    if (auto it = indexed.find(shard); it != indexed.end()) {
      for (const auto& want : it->second)
        if (!rep.tensors.count(want)) c.reasons.push_back(shard + ": tensor '" + want + "' listed in the index is absent");
      for (const auto& [name, t] : rep.tensors)
        if (!it->second.count(name)) c.reasons.push_back(shard + ": tensor '" + name + "' is not in the index");
    }
    if (opts.read_all && rep.ok) {
      std::string err;
      if (!read_every_byte(p, rep.file_bytes, err)) c.reasons.push_back(shard + ": " + err);
    }
    if (!sums.empty()) {
      auto it = sums.find(shard);
      if (it == sums.end()) {
        c.reasons.push_back(shard + ": no checksum in " + opts.checksums);
      } else {
        std::string err;
        const std::string got = sha256_file(p, err);
        if (!err.empty()) c.reasons.push_back(shard + ": " + err);
        else if (got != it->second) c.reasons.push_back(shard + ": sha256 " + got + " != expected " + it->second);
      }
    }
  }
  if (total_size && c.reasons.empty() && *total_size != tensor_bytes)
    c.reasons.push_back("index metadata.total_size " + std::to_string(*total_size) + " != " +
                        std::to_string(tensor_bytes) + " bytes of tensors in the shards");
  c.ok = c.reasons.empty();
  return c;
}

CheckpointResult locate_checkpoint(const CheckpointOptions& opts) {
  CheckpointResult r;
  for (const auto& root : opts.candidates) {
    const auto dirs = candidate_dirs(root, opts.model);
    if (dirs.empty()) {
      CandidateResult c;
      c.path = root;
      c.reasons.push_back("no such directory");
      r.tried.push_back(std::move(c));
      continue;
    }
    for (const auto& dir : dirs) {
      auto c = validate_checkpoint_dir(dir, opts);
      const bool ok = c.ok;
      r.tried.push_back(std::move(c));
      if (ok) {
        r.chosen = dir;
        return r;
      }
    }
  }
  return r;
}

}  // namespace agentperf::preflight
