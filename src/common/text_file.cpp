#include "common/text_file.h"

#include <deque>
#include <fstream>

namespace agentperf {

std::string quoted_tail(const std::filesystem::path& path, std::size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (last.size() > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += "  | " + l + "\n";
  return out;
}

}  // namespace agentperf
