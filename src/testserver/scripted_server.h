// A real HTTP/1.1 server (Boost.Beast) that answers each request with a
// script: status, headers and body pieces written at set offsets from the
// moment the request was read. Tests use it to stream SSE on an exact
// schedule and to misbehave on purpose (garbage, truncation, idle closes);
// the client benchmark uses it to stream as fast as it can.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace agentperf::testserver {

struct ReceivedRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::int64_t received_ns = 0;
  std::uint64_t connection_id = 0;
  std::string header(const std::string& lower_name) const;
};

struct ScriptStep {
  std::chrono::nanoseconds at{0};  // offset from request receipt
  std::string bytes;
};

struct ScriptedResponse {
  enum class Framing {
    chunked,          // Transfer-Encoding: chunked, one chunk per step
    content_length,   // Content-Length = total of all steps
    close_delimited,  // no length; the body ends when the server closes
    raw,              // steps are written as-is: no status line, no framing
  };
  int status = 200;
  std::string reason = "OK";
  std::vector<std::pair<std::string, std::string>> headers;
  Framing framing = Framing::chunked;
  std::vector<ScriptStep> steps;
  bool close_after = false;  // close the connection once the response is written
  bool truncate = false;     // close after the steps without finishing the framing
};

using Handler = std::function<ScriptedResponse(const ReceivedRequest&)>;

struct ServerOptions {
  int threads = 1;
  // Close keep-alive sockets idle this long (uvicorn's default is 5 s).
  std::chrono::milliseconds idle_timeout{5000};
  // Keep, per X-Request-ID, the monotonic time each step's write started.
  bool record_write_times = false;
  // Serve HTTPS with this certificate chain and key (PEM); empty = HTTP.
  std::string tls_cert_pem;
  std::string tls_key_pem;
};

struct ServerStats {
  std::uint64_t connections = 0;
  std::uint64_t requests = 0;
  std::uint64_t idle_closes = 0;
};

class ScriptedServer {
 public:
  ScriptedServer(Handler handler, ServerOptions opts = {});
  ~ScriptedServer();
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  // Binds 127.0.0.1 on port (0 = ephemeral) and starts serving.
  void start(std::uint16_t port = 0);
  void stop();
  std::uint16_t port() const;
  std::string url() const;  // http://127.0.0.1:PORT

  ServerStats stats() const;
  std::vector<std::int64_t> write_times(const std::string& request_id) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace agentperf::testserver
