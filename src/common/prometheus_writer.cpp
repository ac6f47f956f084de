#include "common/prometheus_writer.h"

#include <cstdio>

namespace agentperf {

std::string prometheus_escape_label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void PrometheusWriter::family(std::string_view name, std::string_view type, std::string_view help) {
  if (!help.empty()) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    for (char c : help) {
      if (c == '\\') out_ += "\\\\";
      else if (c == '\n') out_ += "\\n";
      else out_ += c;
    }
    out_ += '\n';
  }
  out_ += "# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PrometheusWriter::sample(std::string_view name, const PromLabels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_ += ',';
      out_ += labels[i].first;
      out_ += "=\"";
      out_ += prometheus_escape_label(labels[i].second);
      out_ += '"';
    }
    out_ += '}';
  }
  char num[64];
  std::snprintf(num, sizeof num, " %.17g\n", value);
  out_ += num;
}

void PrometheusWriter::single(std::string_view name, std::string_view type, std::string_view help,
                              const PromLabels& labels, double value) {
  family(name, type, help);
  sample(name, labels, value);
}

void PrometheusWriter::summary(std::string_view name, std::string_view help, const PromLabels& labels, double sum,
                               double count) {
  family(name, "summary", help);
  const std::string base(name);
  sample(base + "_sum", labels, sum);
  sample(base + "_count", labels, count);
}

}  // namespace agentperf
