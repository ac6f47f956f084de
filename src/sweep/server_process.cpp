#include "sweep/server_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <thread>
#include <vector>

#include "common/error.h"
#include "net/http_client.h"

namespace agentperf::sweep {
namespace {

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended (status " + std::to_string(status) + ")";
}

}  // namespace

ServerProcess::ServerProcess(const std::string& command, const std::map<std::string, std::string>& env,
                             const std::string& log_path)
    : log_path_(log_path) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError("cannot open server log '" + log_path + "': " + std::strerror(errno));
  // Build everything the child needs before fork (no allocation after it).
  std::vector<std::string> env_kv;
  for (const auto& [k, v] : env) env_kv.push_back(k + "=" + v);
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(fd);
    throw UserError(std::string("cannot start the server: fork failed: ") + std::strerror(errno));
  }
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    for (const auto& kv : env_kv) ::putenv(const_cast<char*>(kv.c_str()));
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ::setpgid(pid_, pid_);  // also from the parent: no race with the first signal
  ::close(fd);
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && !ended_) stop(std::chrono::seconds(10));
}

std::optional<std::string> ServerProcess::ended() {
  if (ended_ || pid_ <= 0) return ended_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) ended_ = describe_status(status);
  return ended_;
}

std::string ServerProcess::stop(std::chrono::milliseconds grace) {
  if (auto e = ended()) {
    ::kill(-pid_, SIGKILL);  // leftovers of the group, if any
    return *e;
  }
  ::kill(-pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto e = ended()) {
      ::kill(-pid_, SIGKILL);
      return *e + " after SIGTERM";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  ended_ = describe_status(status) + " (SIGKILL after " + std::to_string(grace.count()) + " ms of SIGTERM)";
  return *ended_;
}

std::string ServerProcess::log_tail(std::size_t lines) const {
  std::ifstream in(log_path_);
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

std::string wait_until_ready(ServerProcess& server, const std::string& base_url, std::chrono::milliseconds timeout,
                      const std::function<void(const std::string&)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  std::string last = "no answer yet";
  auto next_note = start + std::chrono::seconds(10);
  for (;;) {
    if (auto e = server.ended())
      throw UserError("server " + *e + " before it was ready (" + last + "); last lines of " + server.log_path() + ":\n" +
                      server.log_tail(20));
    const auto health = net::http_get_once(base_url + "/health", std::chrono::milliseconds(2000));
    if (!health.error && health.status == 200) {
      const auto models = net::http_get_once(base_url + "/v1/models", std::chrono::milliseconds(2000));
      if (!models.error && models.status == 200) return models.body;
      last = models.error ? "/v1/models: " + models.error->message : "/v1/models answered " + std::to_string(models.status);
    } else {
      last = health.error ? "/health: " + health.error->message : "/health answered " + std::to_string(health.status);
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - start > timeout)
      throw UserError("server not ready after " + std::to_string(timeout.count() / 1000) + " s (" + last +
                      "); last lines of " + server.log_path() + ":\n" + server.log_tail(20));
    if (progress && now >= next_note) {
      progress("waiting for the server (" + last + ")");
      next_note = now + std::chrono::seconds(10);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

int free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw UserError(std::string("cannot find a free port: ") + std::strerror(errno));
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace agentperf::sweep
