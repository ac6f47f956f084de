// `agentperf checkpoint`: find a usable model checkpoint among candidate
// directories, tried in order (node-local NVMe first, the shared filesystem
// as fallback), validating every shard before choosing one.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace agentperf::preflight {

struct CheckpointOptions {
  std::string model;                    // "Org/Name" or "Name"; empty: each candidate is the checkpoint itself
  std::vector<std::string> candidates;  // in order of preference
  bool read_all = false;                // read every byte of every shard (catches I/O errors, holes)
  std::string checksums;                // sha256sum-format file to verify shards against
};

struct CandidateResult {
  std::string path;
  bool ok = false;
  std::vector<std::string> reasons;  // why it was rejected
  std::int64_t shards = 0, tensors = 0;
  std::uint64_t bytes = 0;
};

struct CheckpointResult {
  std::optional<std::string> chosen;
  std::vector<CandidateResult> tried;
};

// Directories a candidate root may hold the model in: the root itself,
// root/<Org/Name>, root/<Name>, and Hugging Face cache snapshots
// root/models--Org--Name/snapshots/* (newest first).
std::vector<std::string> candidate_dirs(const std::string& root, const std::string& model);

CandidateResult validate_checkpoint_dir(const std::string& dir, const CheckpointOptions& opts);
CheckpointResult locate_checkpoint(const CheckpointOptions& opts);

}  // namespace agentperf::preflight
