// The one "is this pooled keep-alive socket still usable" test, shared by the
// load generator's HTTP client (net/http_client) and the router's backend
// pool (route/backend_pool). Servers close idle keep-alive sockets (uvicorn
// after 5 s), so a socket is reused only if it has been idle no longer than
// the limit and a non-blocking MSG_PEEK shows the peer has neither closed it
// nor written unsolicited bytes to it.
#pragma once
#include <cstdint>

namespace agentperf::net {

// fd: the socket's native handle (< 0: closed); idle_ns: how long it sat in
// the pool; limit_ns: the longest idle time allowed.
bool pooled_socket_usable(int fd, std::int64_t idle_ns, std::int64_t limit_ns);

}  // namespace agentperf::net
