// Helpers of the real-engine integration tests (docs/testing.md): locating
// llama.cpp's llama-server through scripts/llama-server.sh, child processes
// that die with the test, a blocking HTTP/1.1 client for probes, and the
// agentperf CLI.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace agentperf::itest {

// What scripts/llama-server.sh printed (KEY=VALUE lines), or why it could not.
struct LlamaBuild {
  std::map<std::string, std::string> values;  // LLAMA_SERVER, LLAMA_MODEL, ...
  std::string server;                          // LLAMA_SERVER
  std::string model;                           // LLAMA_MODEL
  std::string skip_reason;                     // non-empty: no source configured (the tests skip)
  std::string failure;                         // non-empty: a source is configured but it failed (the tests fail)
};

// Runs the script once per process (later calls return the same answer).
const LlamaBuild& llama_build();

// A child process in its own process group, killed (the whole group) when
// this object goes, and by the kernel if the test process dies first
// (PR_SET_PDEATHSIG). stdout and stderr go to `log_path`.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::filesystem::path& log_path);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  // The exit description once it has ended, else nullopt.
  std::optional<std::string> ended();
  // SIGTERM to the group, SIGKILL after `grace`.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));
  std::string log() const;
  std::string log_tail(std::size_t lines = 25) const;
  const std::filesystem::path& log_path() const { return log_path_; }

 private:
  pid_t pid_ = -1;
  std::filesystem::path log_path_;
  std::optional<std::string> ended_;
};

struct HttpResult {
  int status = 0;                                // 0: no answer (see error)
  std::map<std::string, std::string> headers;    // lower-case names
  std::string body;                              // de-chunked
  std::string error;
};

// One request on a fresh connection (Connection: close), read to the end.
HttpResult http_request(int port, const std::string& method, const std::string& target, const std::string& body = {},
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));

// Polls GET /health until it answers 200; false (with the reason in `why`)
// on timeout or when the process ends first.
bool wait_healthy(Process& p, int port, std::chrono::milliseconds timeout, std::string& why);

// Waits until the process's log contains `marker` followed by a port number
// and returns it; 0 (with the reason in `why`) on timeout or exit.
int wait_for_logged_port(Process& p, const std::string& marker, std::chrono::milliseconds timeout, std::string& why);

// llama-server on 127.0.0.1 and an ephemeral port, healthy on return (else
// `error` says why, with the log's tail).
struct LlamaServerOptions {
  int ctx = 4096;       // -c: KV cache tokens, shared by the slots
  int parallel = 4;     // -np: slots
  int threads = 1;      // -t / -tb
  std::vector<std::string> extra;
};
struct RunningServer {
  std::unique_ptr<Process> process;
  int port = 0;
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};
std::optional<RunningServer> start_llama_server(const LlamaBuild& build, const LlamaServerOptions& opt,
                                                const std::filesystem::path& log_path, std::string& error);

// The agentperf binary under test, run to completion (killed after
// `timeout_s`): exit status and stdout+stderr.
struct CliResult {
  int code = -1;
  std::string output;
};
CliResult run_cli(const std::string& args, int timeout_s = 180);

// Scratch folders under $TMPDIR/agentperf_itest_<pid>/ (fresh per name);
// remove_scratch() removes them all.
std::filesystem::path scratch_dir(const std::string& name);
void remove_scratch();

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path);
nlohmann::json read_json(const std::filesystem::path& path);

// Sum of a Prometheus counter over its label sets (0 when absent).
double prometheus_sum(const std::string& text, const std::string& name);

}  // namespace agentperf::itest
