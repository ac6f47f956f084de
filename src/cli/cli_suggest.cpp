#include "cli/cli_suggest.h"

#include <CLI/CLI.hpp>

#include <algorithm>

namespace agentperf::cli {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_name(const std::string& word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = std::max<std::size_t>(1, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (word.size() >= 3 && c.rfind(word, 0) == 0) d = std::min<std::size_t>(d, 1);  // a prefix of a real name
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

namespace {

std::string path_of(const CLI::App* app) {
  std::string p;
  for (const CLI::App* a = app; a && a->get_parent(); a = a->get_parent()) p = a->get_name() + (p.empty() ? "" : " " + p);
  return "agentperf" + (p.empty() ? "" : " " + p);
}

std::vector<std::string> long_flags(const CLI::App* app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app->get_options([](const CLI::Option*) { return true; }))
    for (const auto& n : o->get_lnames()) out.push_back("--" + n);
  for (const CLI::Option* o : app->get_options([](const CLI::Option*) { return true; }))
    for (const auto& n : o->get_fnames()) out.push_back("--" + n);
  return out;
}

std::vector<std::string> command_names(const CLI::App* app) {
  std::vector<std::string> out;
  for (const CLI::App* s : const_cast<CLI::App*>(app)->get_subcommands([](CLI::App*) { return true; }))
    out.push_back(s->get_name());
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::optional<std::string> explain_unknown_argument(CLI::App& app, const std::vector<std::string>& args) {
  CLI::App* cur = &app;
  for (const auto& arg : args) {
    if (arg == "--") break;
    if (arg.size() > 2 && arg.rfind("--", 0) == 0) {
      const std::string name = arg.substr(0, arg.find('='));
      const auto flags = long_flags(cur);
      if (std::find(flags.begin(), flags.end(), name) != flags.end()) continue;
      std::string msg = "unknown flag " + name + " for `" + path_of(cur) + "`";
      if (auto near = closest_name(name, flags)) msg += "; did you mean " + *near + "?";
      return msg + " (`" + path_of(cur) + " --help` lists them)";
    }
    if (arg.rfind("-", 0) == 0) continue;  // a short flag or a negative number: CLI11's own message
    const auto commands = command_names(cur);
    if (commands.empty()) continue;  // a value or a positional argument
    if (std::find(commands.begin(), commands.end(), arg) != commands.end()) {
      cur = cur->get_subcommand(arg);
      continue;
    }
    // A word where a command is expected (a command that takes values
    // before its subcommand does not exist here).
    std::string msg = "unknown command '" + arg + "' for `" + path_of(cur) + "`";
    if (auto near = closest_name(arg, commands)) msg += "; did you mean '" + *near + "'?";
    return msg + " (commands: " + joined(commands) + ")";
  }
  return std::nullopt;
}

}  // namespace agentperf::cli
