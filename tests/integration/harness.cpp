#include "integration/harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/text_file.h"
#include "support/shell_run.h"

namespace agentperf::itest {
namespace {

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended (status " + std::to_string(status) + ")";
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `cmd` through /bin/sh; stdout and stderr separately (stderr via a file).
struct ShellOutput {
  int code = -1;
  std::string out, err;
};
ShellOutput shell(const std::string& cmd) {
  const auto err_path = std::filesystem::temp_directory_path() /
                        ("agentperf_itest_sh_" + std::to_string(::getpid()) + ".err");
  const std::string full = cmd + " 2>" + shell_quote(err_path.string());
  const auto run = agentperf::test_support::run_shell(full);
  ShellOutput r;
  r.code = run.code;
  r.out = run.output;
  std::ifstream e(err_path);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  std::filesystem::remove(err_path);
  return r;
}

std::string dechunk(const std::string& body) {
  std::string out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    const auto eol = body.find("\r\n", pos);
    if (eol == std::string::npos) break;
    const std::size_t n = std::strtoul(body.substr(pos, eol - pos).c_str(), nullptr, 16);
    if (n == 0) break;
    out += body.substr(eol + 2, n);
    pos = eol + 2 + n + 2;
  }
  return out;
}

}  // namespace

const LlamaBuild& llama_build() {
  static std::once_flag once;
  static LlamaBuild b;
  std::call_once(once, [] {
    const char* env_server = std::getenv("LLAMA_SERVER");
    const char* env_peers = std::getenv("AGENTPERF_PEERS_DIR");
    const bool configured = (env_server && *env_server) || (env_peers && *env_peers);
    const auto r = shell(std::string("bash ") + shell_quote(AGENTPERF_LLAMA_SERVER_SCRIPT));
    if (r.code != 0) {
      const std::string why = trim(r.err).empty() ? "exit status " + std::to_string(r.code) : trim(r.err);
      if (r.code == 3 || !configured)
        b.skip_reason =
            std::string(configured ? "llama.cpp's llama-server is not usable as configured"
                                   : "the llama.cpp peer source is absent (neither AGENTPERF_PEERS_DIR nor "
                                     "LLAMA_SERVER is set)") +
            ", so this real-engine test is skipped. To run it, set AGENTPERF_PEERS_DIR to a folder holding "
            "build-llama-server.sh and llama.cpp-<commit>-server.tar.xz (built once into "
            "$AGENTPERF_CACHE_DIR, default /var/cache/agentperf), or LLAMA_SERVER=/path/to/llama-server and "
            "LLAMA_MODEL=/path/to/model.gguf to use an existing build; see docs/testing.md. "
            "scripts/llama-server.sh said: " + why;
      else
        b.failure = "scripts/llama-server.sh failed (" + std::to_string(r.code) + "): " + why;
      return;
    }
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) {
      const auto eq = line.find('=');
      if (eq != std::string::npos) b.values[line.substr(0, eq)] = trim(line.substr(eq + 1));
    }
    b.server = b.values["LLAMA_SERVER"];
    b.model = b.values["LLAMA_MODEL"];
    if (b.server.empty() || b.model.empty()) b.failure = "scripts/llama-server.sh printed no LLAMA_SERVER/LLAMA_MODEL:\n" + r.out;
  });
  return b;
}

Process::Process(const std::vector<std::string>& argv, const std::filesystem::path& log_path) : log_path_(log_path) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open " + log_path.string() + ": " + std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(1);  // the parent died before prctl
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::execv(args[0], args.data());
    _exit(127);
  }
  ::setpgid(pid_, pid_);
  ::close(fd);
}

Process::~Process() { stop(); }

std::optional<std::string> Process::ended() {
  if (ended_ || pid_ <= 0) return ended_;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) ended_ = describe_status(status);
  return ended_;
}

void Process::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return;
  if (!ended()) {
    ::kill(-pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (!ended() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!ended()) {
      ::kill(-pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      ended_ = describe_status(status);
    }
  }
  ::kill(-pid_, SIGKILL);  // anything left in the group
}

std::string Process::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Process::log_tail(std::size_t lines) const { return quoted_tail(log_path_, lines); }

HttpResult http_request(int port, const std::string& method, const std::string& target, const std::string& body,
                        std::chrono::milliseconds timeout) {
  HttpResult r;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    r.error = std::string("connect: ") + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return r;
  }
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                    "\r\nConnection: close\r\n";
  if (!body.empty() || method == "POST")
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  for (std::size_t sent = 0; sent < req.size();) {
    const auto n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      r.error = std::string("send: ") + std::strerror(errno);
      ::close(fd);
      return r;
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string raw;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::array<char, 16384> buf{};
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.error = "timed out";
      break;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const auto n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    raw.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  const auto head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    if (r.error.empty()) r.error = "no complete response head (" + std::to_string(raw.size()) + " bytes)";
    return r;
  }
  std::istringstream head(raw.substr(0, head_end));
  std::string line;
  std::getline(head, line);
  if (line.size() > 12) r.status = std::atoi(line.c_str() + 9);
  while (std::getline(head, line)) {
    const auto colon = line.find(':');
    if (colon != std::string::npos) r.headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  r.body = raw.substr(head_end + 4);
  if (lower(r.headers["transfer-encoding"]) == "chunked") r.body = dechunk(r.body);
  return r;
}

bool wait_healthy(Process& p, int port, std::chrono::milliseconds timeout, std::string& why) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last = "no answer yet";
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto e = p.ended()) {
      why = "it " + *e + " before /health answered 200 (" + last + "); " + p.log_path().string() + ":\n" + p.log_tail();
      return false;
    }
    const auto h = http_request(port, "GET", "/health", {}, std::chrono::milliseconds(2000));
    if (h.status == 200) return true;
    last = h.status ? "/health answered " + std::to_string(h.status) + " " + h.body : h.error;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  why = "/health not 200 after " + std::to_string(timeout.count() / 1000) + " s (" + last + "); " +
        p.log_path().string() + ":\n" + p.log_tail();
  return false;
}

int wait_for_logged_port(Process& p, const std::string& marker, std::chrono::milliseconds timeout, std::string& why) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const std::string log = p.log();
    const auto at = log.find(marker);
    if (at != std::string::npos) {
      const int port = std::atoi(log.c_str() + at + marker.size());
      if (port > 0) return port;
    }
    if (auto e = p.ended()) {
      why = "it " + *e + " before it logged its port; " + p.log_path().string() + ":\n" + p.log_tail();
      return 0;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      why = "no '" + marker + "' in its log after " + std::to_string(timeout.count() / 1000) + " s; " +
            p.log_path().string() + ":\n" + p.log_tail();
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::optional<RunningServer> start_llama_server(const LlamaBuild& build, const LlamaServerOptions& opt,
                                                const std::filesystem::path& log_path, std::string& error) {
  // --port 0: llama-server binds an ephemeral port and logs it
  // ("HTTP server is listening, hostname: 127.0.0.1, port: N, ..."), so there
  // is no race with other processes for a port picked in advance.
  RunningServer s;
  std::vector<std::string> argv = {build.server, "-m", build.model, "--host", "127.0.0.1", "--port", "0",
                                   "-c", std::to_string(opt.ctx), "-np", std::to_string(opt.parallel),
                                   "-t", std::to_string(opt.threads), "-tb", std::to_string(opt.threads),
                                   "--metrics", "--no-warmup"};
  argv.insert(argv.end(), opt.extra.begin(), opt.extra.end());
  s.process = std::make_unique<Process>(argv, log_path);
  s.port = wait_for_logged_port(*s.process, "HTTP server is listening, hostname: 127.0.0.1, port: ",
                                std::chrono::seconds(30), error);
  if (s.port == 0 || !wait_healthy(*s.process, s.port, std::chrono::seconds(60), error)) {
    error = "llama-server (" + build.server + ") did not start: " + error;
    return std::nullopt;
  }
  return s;
}

CliResult run_cli(const std::string& args, int timeout_s) {
  // `timeout` so that a hung client fails the test instead of the ctest timeout.
  const std::string cmd = "timeout -k 5 " + std::to_string(timeout_s) + " " + shell_quote(AGENTPERF_CLI_PATH) + " " +
                          args + " 2>&1";
  const auto run = agentperf::test_support::run_shell(cmd);
  CliResult r;
  r.code = run.code;
  r.output = run.output;
  return r;
}

std::filesystem::path scratch_root() {
  return std::filesystem::temp_directory_path() / ("agentperf_itest_" + std::to_string(::getpid()));
}

void remove_scratch() {
  std::error_code ec;
  std::filesystem::remove_all(scratch_root(), ec);
}

std::filesystem::path scratch_dir(const std::string& name) {
  auto d = scratch_root() / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (!trim(line).empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json();
  return nlohmann::json::parse(in);
}

double prometheus_sum(const std::string& text, const std::string& name) {
  double sum = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.compare(0, name.size(), name) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != ' ' && next != '{') continue;
    const auto sp = line.rfind(' ');
    if (sp != std::string::npos) sum += std::strtod(line.c_str() + sp + 1, nullptr);
  }
  return sum;
}

}  // namespace agentperf::itest
