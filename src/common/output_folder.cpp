#include "common/output_folder.h"

#include "common/error.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/file.h>
#include <unistd.h>

namespace agentperf {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLockName = ".agentperf.lock";

std::string local_time(std::time_t t, const char* fmt) {
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, &tm);
  return buf;
}

// What the lock file says about its holder, on one line.
std::string holder_of(const fs::path& lock) {
  std::ifstream in(lock);
  std::string line, all;
  while (std::getline(in, line)) {
    if (!all.empty()) all += ", ";
    all += line;
  }
  return all.empty() ? "another agentperf run" : all;
}

}  // namespace

const std::vector<std::string>& OutputFolder::result_files() {
  static const std::vector<std::string> files = {"profile_export.jsonl", "profile_export_aiperf.json",
                                                 "profile_export_aiperf.csv", "server_metrics_timeline.jsonl",
                                                 "server_metrics_export.json", "inferencex_result.json"};
  return files;
}

OutputFolder::OutputFolder(const fs::path& dir, bool overwrite, const std::string& command) : dir_(dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError("cannot create output folder '" + dir.string() + "': " + ec.message());
  const fs::path lock = dir / kLockName;
  fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw UserError("cannot open '" + lock.string() + "': " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw UserError("output folder '" + dir.string() + "' is in use by another run (" + holder_of(lock) +
                      "); wait for it to end or choose another -o");
    throw UserError("cannot lock '" + lock.string() + "': " + std::strerror(err));
  }
  std::vector<std::string> found;
  // Results are regular files; a link or device a user put there on
  // purpose (e.g. the jsonl sent to a pipe) is neither refused nor removed.
  for (const auto& f : result_files())
    if (fs::is_regular_file(fs::symlink_status(dir / f, ec))) found.push_back(f);
  if (!found.empty() && !overwrite) {
    ::close(fd_);
    fd_ = -1;
    throw UserError("output folder '" + dir.string() + "' holds an earlier run's results (" + found.front() +
                    "); pass --overwrite to replace them, or choose another -o");
  }
  for (const auto& f : found) fs::remove(dir / f, ec);
  // Who holds the lock, for a second run's message (best effort).
  std::ostringstream who;
  who << "pid " << ::getpid() << ", started " << local_time(std::time(nullptr), "%Y-%m-%d %H:%M:%S") << ", "
      << (command.size() > 200 ? command.substr(0, 200) + "..." : command) << "\n";
  const std::string s = who.str();
  if (::ftruncate(fd_, 0) == 0) {
    const ssize_t n = ::pwrite(fd_, s.data(), s.size(), 0);
    (void)n;
  }
}

OutputFolder::~OutputFolder() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock; the file stays (removing it would race a waiting run)
}

fs::path default_run_folder(const fs::path& base, const std::string& model, const std::string& endpoint,
                            const std::string& load) {
  std::string m = model.empty() ? "model" : model;
  for (char& c : m)
    if (c == '/' || c == '\\' || c == ' ' || c == ':') c = '_';
  const std::string stem = m + "-openai-" + endpoint + "-" + load + "-" +
                           local_time(std::time(nullptr), "%Y%m%d-%H%M%S");
  fs::path p = base / stem;
  std::error_code ec;
  for (int i = 2; fs::exists(p, ec); ++i) p = base / (stem + "-" + std::to_string(i));
  return p;
}

void link_latest_run(const fs::path& base, const fs::path& folder) {
  std::error_code ec;
  const fs::path latest = base / "latest";
  if (fs::is_symlink(latest, ec) || !fs::exists(latest, ec)) {
    fs::remove(latest, ec);
    fs::create_directory_symlink(folder.filename(), latest, ec);
  }
}

}  // namespace agentperf
