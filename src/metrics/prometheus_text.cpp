#include "metrics/prometheus_text.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace agentperf {

std::vector<PromSample> parse_prometheus_text(std::string_view text, std::size_t* bad_lines) {
  std::vector<PromSample> out;
  std::size_t bad = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    PromSample s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = std::string(line.substr(0, i));
    if (i < line.size() && line[i] == '{') {
      ++i;
      bool ok = true;
      while (i < line.size() && line[i] != '}') {
        std::size_t eq = line.find('=', i);
        if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
          ok = false;
          break;
        }
        std::string key(line.substr(i, eq - i));
        std::string value;
        std::size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        if (j >= line.size()) {
          ok = false;
          break;
        }
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (!ok || i >= line.size()) {
        ++bad;
        continue;
      }
      ++i;  // '}'
    }
    while (i < line.size() && line[i] == ' ') ++i;
    std::string_view num = line.substr(i);
    if (auto sp = num.find(' '); sp != std::string_view::npos) num = num.substr(0, sp);  // drop the timestamp
    if (num.empty()) {
      ++bad;
      continue;
    }
    const std::string n(num);
    char* endp = nullptr;
    s.value = n == "+Inf" ? INFINITY : n == "-Inf" ? -INFINITY : std::strtod(n.c_str(), &endp);
    if (endp && *endp != '\0') {
      ++bad;
      continue;
    }
    if (s.name.size() > 7 && s.name.compare(s.name.size() - 7, 7, "_bucket") == 0) continue;
    out.push_back(std::move(s));
  }
  if (bad_lines) *bad_lines = bad;
  return out;
}

std::map<std::string, double> sum_by_name(const std::vector<PromSample>& samples) {
  std::map<std::string, double> out;
  for (const auto& s : samples)
    if (std::isfinite(s.value)) out[s.name] += s.value;
  return out;
}

}  // namespace agentperf
