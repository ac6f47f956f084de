#include "cli/checkpoint_command.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "preflight/checkpoint.h"

namespace agentperf::cli {

struct CheckpointCommand {
  CLI::App* cmd = nullptr;
  preflight::CheckpointOptions opts;
  bool json = false;
};

std::shared_ptr<CheckpointCommand> add_checkpoint_command(CLI::App& app) {
  auto cc = std::make_shared<CheckpointCommand>();
  cc->cmd = app.add_subcommand("checkpoint",
                               "Find a valid model checkpoint among candidate directories, checking every shard");
  cc->cmd->add_option("--model", cc->opts.model, "Model id (Org/Name); empty: each candidate is a checkpoint directory");
  cc->cmd->add_option("--candidates", cc->opts.candidates,
                      "Candidate roots in order of preference (node-local NVMe first, shared filesystem last)")
      ->required()->delimiter(',');
  cc->cmd->add_flag("--read-all", cc->opts.read_all, "Also read every byte of every shard");
  cc->cmd->add_option("--checksums", cc->opts.checksums, "sha256sum-format file to verify the shards against")
      ->check(CLI::ExistingFile);
  cc->cmd->add_flag("--json", cc->json, "Print the result as JSON");
  return cc;
}

int execute_checkpoint_command(CheckpointCommand& cc) {
  if (!cc.cmd->parsed()) return -1;
  const auto r = preflight::locate_checkpoint(cc.opts);
  if (cc.json) {
    nlohmann::ordered_json j;
    j["chosen"] = r.chosen ? nlohmann::ordered_json(*r.chosen) : nlohmann::ordered_json(nullptr);
    j["tried"] = nlohmann::ordered_json::array();
    for (const auto& c : r.tried)
      j["tried"].push_back({{"path", c.path}, {"ok", c.ok}, {"shards", c.shards}, {"tensors", c.tensors},
                            {"bytes", c.bytes}, {"reasons", c.reasons}});
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    for (const auto& c : r.tried) {
      if (c.ok) {
        std::printf("ok        %s (%lld shards, %lld tensors, %.2f GB)\n", c.path.c_str(), static_cast<long long>(c.shards),
                    static_cast<long long>(c.tensors), static_cast<double>(c.bytes) / 1e9);
        continue;
      }
      std::printf("rejected  %s\n", c.path.c_str());
      const std::size_t shown = std::min<std::size_t>(c.reasons.size(), 10);
      for (std::size_t i = 0; i < shown; ++i) std::printf("            %s\n", c.reasons[i].c_str());
      if (c.reasons.size() > shown) std::printf("            ... and %zu more\n", c.reasons.size() - shown);
    }
    if (r.chosen) std::printf("checkpoint: %s\n", r.chosen->c_str());
  }
  if (!r.chosen) {
    std::fprintf(stderr, "agentperf: error: no valid checkpoint%s among %zu candidate location(s)\n",
                 cc.opts.model.empty() ? "" : (" of " + cc.opts.model).c_str(), cc.opts.candidates.size());
    return 2;
  }
  return 0;
}

}  // namespace agentperf::cli
