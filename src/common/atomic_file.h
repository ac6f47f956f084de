// Writes a file whole or not at all: the content goes to "<path>.partial",
// which is renamed over the path only when every byte was written, so a
// result file that exists is complete.
#pragma once
#include <filesystem>
#include <functional>
#include <ostream>
#include <string_view>

namespace agentperf {

// Throws UserError naming the path and what failed.
void write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace agentperf
