#include "sweep/server_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/text_file.h"
#include "common/run_control.h"
#include "net/http_client.h"

namespace agentperf::sweep {
namespace {

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended (status " + std::to_string(status) + ")";
}

// The signals the supervisor waits for (sigtimedwait) instead of handling.
sigset_t supervisor_signals() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&s, sig);
  return s;
}

// Everything below runs in a fork of a multi-threaded process: system calls
// only (no allocation, no locks, no stdio).

std::int64_t monotonic_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

void say_raw(const char* msg) { [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, std::strlen(msg)); }

// Ends the supervisor the way the server ended, so that the sweep's waitpid
// sees the server's own status or signal.
[[noreturn]] void exit_like(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);  // the server may have dumped one; no second
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    ::kill(::getpid(), sig);
    ::sigprocmask(SIG_UNBLOCK, &s, nullptr);
    ::_exit(128 + sig);
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 255);
}

// The supervisor (see server_process.h). Entered right after fork with the
// supervisor signals blocked (the parent blocked them around fork, so none
// can be lost before this point).
[[noreturn]] void supervise(pid_t sweep, int log_fd, char* const* argv, char* const* envp, std::int64_t grace_ms) {
  ::setpgid(0, 0);
  // The server's output goes to the log, and so does the supervisor's: it
  // must not hold the sweep's stdout or stderr (a pipe a caller reads to EOF).
  ::dup2(log_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  const int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0 && devnull != STDIN_FILENO) {
    ::dup2(devnull, STDIN_FILENO);
    ::close(devnull);
  }
  // Nothing else of the sweep's (its sockets, the store, the log's own fd):
  // the server must not keep them open.
  ::close_range(3, ~0U, 0);
  // SIGTERM when the sweep dies, however it dies. It may have died before
  // this call (then no signal comes): the getppid() test below covers that,
  // as the prctl(2) man page advises.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  const pid_t self = ::getpid();
  const pid_t server = ::fork();
  if (server < 0) {
    say_raw("agentperf sweep: cannot start the server: fork failed\n");
    ::_exit(127);
  }
  if (server == 0) {
    // Backstop: were the supervisor killed on its own, nobody would watch the group.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != self) ::_exit(127);
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE}) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve("/bin/sh", argv, envp);
    say_raw("agentperf sweep: cannot start the server: exec /bin/sh failed\n");
    ::_exit(127);
  }
  const sigset_t wait_for = supervisor_signals();
  // A stop sent to the group before the server existed reached only the
  // supervisor: pass it on. (Sent after the fork, the server has it too,
  // still blocked until its exec: the two merge into one.)
  const timespec now{0, 0};
  siginfo_t early;
  for (int sig; (sig = ::sigtimedwait(&wait_for, &early, &now)) > 0;)
    if (sig != SIGCHLD) ::kill(server, sig);
  bool orphaned = false;
  std::int64_t kill_at = 0;
  for (;;) {
    int status = 0;
    if (::waitpid(server, &status, WNOHANG) == server && !orphaned) exit_like(status);
    // SIGTERM from the sweep's stop() reaches the server directly (it is sent
    // to the group); the supervisor acts only once the sweep is gone.
    if (!orphaned && ::getppid() != sweep) {
      orphaned = true;
      say_raw("agentperf sweep: the sweep is gone; stopping the server's process group\n");
      ::kill(-self, SIGTERM);  // blocked here: only the others see it
      kill_at = monotonic_ms() + grace_ms;
    }
    // Orphaned, the supervisor stays for the whole grace even after the
    // server's exit: the server's children may still be there. Then the
    // group goes, the supervisor with it.
    if (orphaned && monotonic_ms() >= kill_at) ::kill(-self, SIGKILL);
    timespec tick{0, 100'000'000};
    siginfo_t info;
    ::sigtimedwait(&wait_for, &info, &tick);
  }
}

}  // namespace

ServerProcess::ServerProcess(const std::string& command, const std::map<std::string, std::string>& env,
                             const std::string& log_path, std::chrono::milliseconds orphan_grace)
    : log_path_(log_path) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError("cannot open server log '" + log_path + "': " + std::strerror(errno));
  // Build everything the children need before fork (no allocation after it).
  std::map<std::string, std::string> merged;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : env) merged[k] = v;
  merged.emplace("PYTHONUNBUFFERED", "1");
  std::vector<std::string> env_kv;
  for (const auto& [k, v] : merged) env_kv.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& kv : env_kv) envp.push_back(kv.data());
  envp.push_back(nullptr);
  std::string sh = "sh", dash_c = "-c", cmd = command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};

  const sigset_t blocked = supervisor_signals();
  sigset_t old;
  ::pthread_sigmask(SIG_BLOCK, &blocked, &old);
  const pid_t sweep = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) supervise(sweep, fd, argv, envp.data(), orphan_grace.count());
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid_ < 0) {
    ::close(fd);
    throw UserError(std::string("cannot start the server: fork failed: ") + std::strerror(fork_errno));
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

std::string ServerProcess::log_tail(std::size_t lines) const { return quoted_tail(log_path_, lines); }

std::string wait_until_ready(ServerProcess& server, const std::string& base_url, std::chrono::milliseconds timeout,
                      const std::function<void(const std::string&)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  std::string last = "no answer yet";
  auto next_note = start + std::chrono::seconds(10);
  for (;;) {
    if (stop_requested())
      throw UserError("stopped while waiting for the server to be ready (" + stop_reason() + ")");
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
