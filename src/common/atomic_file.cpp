#include "common/atomic_file.h"

#include <cerrno>
#include <cstring>

#include <fstream>

#include "common/error.h"

namespace agentperf {

void write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write) {
  const auto tmp = path.string() + ".partial";
  {
    errno = 0;
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw UserError("cannot write " + path.string() + ": " +
                      (errno ? std::string(std::strerror(errno)) : std::string("cannot open for writing")) +
                      (std::filesystem::is_directory(path.parent_path().empty() ? "." : path.parent_path())
                           ? ""
                           : " (the folder " + path.parent_path().string() + " does not exist)"));
    write(out);
    out.flush();
    if (!out) throw UserError("cannot write " + path.string() + ": write failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw UserError("cannot write " + path.string() + ": " + ec.message());
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  write_file_atomically(path, [&](std::ostream& out) { out << content; });
}

}  // namespace agentperf
