// A throwaway self-signed certificate for 127.0.0.1/localhost, made with
// OpenSSL at run time, so TLS tests need no files.
#pragma once
#include <string>

namespace agentperf::testserver {

struct PemPair {
  std::string cert;
  std::string key;
};

PemPair make_self_signed_cert();

}  // namespace agentperf::testserver
