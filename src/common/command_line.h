// Reading one flag's value out of a server command line, for every layer
// that reads launch commands (recipes' generated servers, InferenceX
// launchers' flags, the published commands of the validation sets).
#pragma once
#include <optional>
#include <string>

namespace agentperf {

// The value after `flag` in a server command line ("--flag V" or
// "--flag=V"), up to the next space; nullopt when the flag is absent (a
// longer flag that starts with it does not count).
std::optional<std::string> command_flag_value(const std::string& command, const std::string& flag);

// The positive integer a command passes to `flag`; 0 when it passes none,
// or a value that does not start with a positive integer (a launcher's
// unexpanded "$CONC").
int command_flag_positive_int(const std::string& command, const std::string& flag);

}  // namespace agentperf
