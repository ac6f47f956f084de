#include "common/fd_limit.h"

#include <sys/resource.h>

#include "common/error.h"

namespace agentperf {

std::uint64_t raise_open_file_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit want = rl;
    want.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
  }
  return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<std::uint64_t>(rl.rlim_cur);
}

void check_open_file_budget(std::uint64_t sockets, const std::string& what, std::uint64_t spare) {
  const std::uint64_t limit = raise_open_file_limit();
  if (limit == UINT64_MAX || sockets + spare <= limit) return;
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  throw UserError(what + " needs about " + std::to_string(sockets + spare) + " open files (a socket per request in flight, " +
                  "plus " + std::to_string(spare) + "), but this process may open only " + std::to_string(limit) +
                  " (RLIMIT_NOFILE, hard limit " +
                  (rl.rlim_max == RLIM_INFINITY ? std::string("unlimited") : std::to_string(rl.rlim_max)) +
                  "); raise it (`ulimit -n " + std::to_string(sockets + spare) +
                  "` as root, or LimitNOFILE= in a systemd unit) or lower the load");
}

}  // namespace agentperf
