#include "eval/gsm8k.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "common/error.h"

namespace agentperf::eval {

// lm-eval's gsm8k filters drop commas, "$" and a trailing "." before the
// exact match; nothing else is normalized ("42.0" is not "42").
std::string normalize_number(std::string s) {
  std::string out;
  for (char c : s)
    if (c != ',' && c != '$' && c != ' ') out += c;
  while (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

std::optional<std::string> extract_strict(const std::string& response) {
  static const std::regex re(R"(#### (\-?[0-9\.\,]+))");
  std::smatch m;
  if (!std::regex_search(response, m, re)) return std::nullopt;
  return normalize_number(m[1].str());
}

std::optional<std::string> extract_flexible(const std::string& response) {
  static const std::regex re(R"((-?[$0-9.,]{2,})|(-?[0-9]+))");
  std::optional<std::string> last;
  for (auto it = std::sregex_iterator(response.begin(), response.end(), re); it != std::sregex_iterator(); ++it) {
    const std::string s = normalize_number((*it)[0].str());
    bool digit = false;
    for (char c : s) digit = digit || (c >= '0' && c <= '9');
    if (digit) last = s;
  }
  return last;
}

std::vector<Gsm8kItem> load_gsm8k(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read GSM8K file '" + path + "'");
  std::vector<Gsm8kItem> items;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n);
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw UserError(where + ": not a JSON object");
    for (const char* f : {"question", "answer"})
      if (!j.contains(f) || !j[f].is_string()) throw UserError(where + ": missing string field '" + std::string(f) + "'");
    Gsm8kItem item{j["question"], j["answer"], {}};
    auto target = extract_strict(item.answer);
    if (!target) throw UserError(where + ": 'answer' has no final '#### N' line");
    item.target = *target;
    items.push_back(std::move(item));
  }
  if (items.empty()) throw UserError("'" + path + "' holds no questions");
  return items;
}

std::string completion_prompt(const std::vector<Gsm8kItem>& shots, const Gsm8kItem& item) {
  std::string p;
  for (const auto& s : shots) p += "Question: " + s.question + "\nAnswer: " + s.answer + "\n\n";
  p += "Question: " + item.question + "\nAnswer:";
  return p;
}

std::vector<std::pair<std::string, std::string>> chat_messages(const std::vector<Gsm8kItem>& shots,
                                                               const Gsm8kItem& item) {
  std::vector<std::pair<std::string, std::string>> m;
  for (const auto& s : shots) {
    m.emplace_back("user", "Question: " + s.question + "\nAnswer:");
    m.emplace_back("assistant", s.answer);
  }
  m.emplace_back("user", "Question: " + item.question + "\nAnswer:");
  return m;
}

Score score(const Gsm8kItem& item, const std::string& response) {
  Score s;
  s.strict_answer = extract_strict(response);
  s.flexible_answer = extract_flexible(response);
  s.strict = s.strict_answer && *s.strict_answer == item.target;
  s.flexible = s.flexible_answer && *s.flexible_answer == item.target;
  return s;
}

}  // namespace agentperf::eval
