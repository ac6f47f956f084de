#include "common/version.h"

namespace agentperf {
std::string_view version() noexcept { return "0.1.0"; }
}
