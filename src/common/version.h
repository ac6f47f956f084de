#pragma once
#include <string_view>

namespace agentperf {
std::string_view version() noexcept;
}
