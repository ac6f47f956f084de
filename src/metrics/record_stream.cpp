#include "metrics/record_stream.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "metrics/record_json.h"

namespace agentperf {

RecordStreamWriter::RecordStreamWriter(std::filesystem::path path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "w");
  if (!file_) throw UserError("cannot create '" + path_.string() + "': " + std::strerror(errno));
  thread_ = std::thread([this] { loop(); });
}

RecordStreamWriter::~RecordStreamWriter() { close(); }

void RecordStreamWriter::on_record(const RequestRecord& r) {
  {
    std::lock_guard lk(mu_);
    queue_.push_back(r);
  }
  cv_.notify_one();
}

void RecordStreamWriter::loop() {
  std::vector<RequestRecord> batch;
  std::string text;
  for (;;) {
    {
      std::unique_lock lk(mu_);
      // Write whatever is queued as soon as it is there: no timer holds a
      // finished record back (a SIGKILL then loses only what is being
      // serialised or was pushed in the last microseconds). Batching comes
      // by itself: records that finish while a batch is written go out
      // together in the next one.
      cv_.wait(lk, [&] { return closing_ || !queue_.empty(); });
      batch.swap(queue_);
      if (batch.empty() && closing_) return;
    }
    if (batch.empty()) continue;
    bool failed;
    {
      std::lock_guard lk(mu_);
      failed = error_.has_value();
    }
    if (!failed) {
      text.clear();
      for (const auto& r : batch) {
        append_record_json_line(text, r);
        text += '\n';
      }
      errno = 0;
      const bool ok = std::fwrite(text.data(), 1, text.size(), file_) == text.size() && std::fflush(file_) == 0;
      std::lock_guard lk(mu_);
      if (ok) {
        written_ += batch.size();
      } else {
        error_ = path_.string() + ": " + (errno ? std::strerror(errno) : "write failed");
      }
    }
    batch.clear();
  }
}

std::optional<std::string> RecordStreamWriter::close() {
  {
    std::lock_guard lk(mu_);
    if (!thread_.joinable() && !file_) return error_;
    closing_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  if (file_) {
    errno = 0;
    if (std::fclose(file_) != 0 && !error_) error_ = path_.string() + ": " + std::strerror(errno);
    file_ = nullptr;
  }
  return error_;
}

std::uint64_t RecordStreamWriter::lines_written() const {
  std::lock_guard lk(mu_);
  return written_;
}

std::optional<std::uint64_t> free_disk_bytes(const std::filesystem::path& dir) {
  struct statvfs st{};
  if (::statvfs(dir.c_str(), &st) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(st.f_bavail) * static_cast<std::uint64_t>(st.f_frsize);
}

std::uint64_t estimate_result_bytes(std::uint64_t requests, std::uint64_t output_tokens_per_request) {
  return requests * (2048 + 12 * output_tokens_per_request) + (1u << 20);
}

void check_free_disk(const std::filesystem::path& dir, std::uint64_t need, const std::string& what) {
  const auto free = free_disk_bytes(dir);
  if (!free || *free >= need) return;
  auto mb = [](std::uint64_t b) { return std::to_string((b + (1u << 20) - 1) >> 20) + " MB"; };
  throw UserError("only " + mb(*free) + " free on the file system of '" + dir.string() + "'; " + what + " need about " +
                  mb(need) + " (free some space or choose another --artifact-dir)");
}

}  // namespace agentperf
