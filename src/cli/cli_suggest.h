// "Did you mean": a command line that CLI11 refused because of a mistyped
// command or flag gets the nearest real one, instead of CLI11's "A
// subcommand is required" or "The following arguments were not expected:
// 8 --concurency", which name neither the mistake nor the fix.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace agentperf::cli {

// Levenshtein distance (insertions, deletions, substitutions).
std::size_t edit_distance(const std::string& a, const std::string& b);

// The closest of `candidates` to `word`, if close enough to be a typo
// (distance at most max(1, |word| / 3)), or one of them starts with it.
std::optional<std::string> closest_name(const std::string& word, const std::vector<std::string>& candidates);

// Walks `args` (argv without the program name) through `app`'s commands and
// returns a one-line message for the first unknown command or flag, with the
// nearest real one; nullopt when every command and flag is known.
std::optional<std::string> explain_unknown_argument(CLI::App& app, const std::vector<std::string>& args);

}  // namespace agentperf::cli
