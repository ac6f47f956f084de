#include "net/socket_freshness.h"

#include <sys/socket.h>

#include <cerrno>

namespace agentperf::net {

bool pooled_socket_usable(int fd, std::int64_t idle_ns, std::int64_t limit_ns) {
  if (fd < 0 || idle_ns > limit_ns) return false;
  char c;
  const ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n >= 0) return false;  // 0: closed by the peer; > 0: unsolicited bytes
  return errno == EAGAIN || errno == EWOULDBLOCK;
}

}  // namespace agentperf::net
