// Open-file budget of a run. Every request in flight holds a socket, and a
// run that runs out gets EMFILE from socket(2) mid-run (with `ulimit -Sn
// 1024`, `-c 2000` gave 1,970 errors that said "Operation canceled"). So a
// measuring command raises its soft RLIMIT_NOFILE to the hard limit at
// start (what a shell's `ulimit -n unlimited-ish` would do, and what many
// servers do), and refuses a load that cannot fit, naming the limit and the
// fix, before anything is sent.
#pragma once
#include <cstdint>
#include <string>

namespace agentperf {

// Raises the soft limit to the hard limit; returns the soft limit now in force.
std::uint64_t raise_open_file_limit();

// Throws UserError (exit 2) when `sockets` (plus `spare` for files, the
// metrics scraper and the resolver) exceed the soft limit after raising it.
// `what` names the flag: "--concurrency 2000".
void check_open_file_budget(std::uint64_t sockets, const std::string& what, std::uint64_t spare = 64);

}  // namespace agentperf
