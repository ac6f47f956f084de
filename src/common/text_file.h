// Reading the end of a text file, for error messages that quote a server's
// log ("last lines of server.log: ..."): the sweep's server processes and
// the integration tests' engines.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>

namespace agentperf {

// The last `lines` lines of `path`, each as "  | <line>\n"; empty when the
// file is missing or empty.
std::string quoted_tail(const std::filesystem::path& path, std::size_t lines);

}  // namespace agentperf
