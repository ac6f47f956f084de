#include "report/gpu_telemetry.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>

#include "common/error.h"

namespace agentperf::report {
using json = nlohmann::json;

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One CSV line: comma separated, fields trimmed, "double quotes" allowed.
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cur += '"', ++i;
      else if (c == '"') quoted = false;
      else cur += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

// "[N/A]", "[Not Supported]", "N/A", "" and "-": no value.
bool missing(const std::string& v) {
  return v.empty() || v == "-" || lower(v) == "n/a" || lower(v) == "nan" || (v.front() == '[' && v.back() == ']');
}

// Memory units, in GiB.
std::optional<double> gib_per(const std::string& unit) {
  const std::string u = lower(unit);
  if (u == "mib" || u == "mb") return 1.0 / 1024;  // nvidia-smi's MiB; "MB" columns of scripts hold the same
  if (u == "gib") return 1.0;
  if (u == "gb") return 1e9 / 1073741824.0;
  if (u == "kib") return 1.0 / 1048576;
  if (u == "b") return 1.0 / 1073741824.0;
  return std::nullopt;
}

enum class Metric { Power, Util, Mem };

// A metric value, with or without its unit ("312.45 W", "45 %", "1234 MiB").
// mem_scale: GiB per unit when the value names none. Returns the error.
std::string read_metric(const std::string& text, Metric m, double mem_scale, std::optional<double>& out) {
  out.reset();
  if (missing(text)) return "";
  const char* s = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || !std::isfinite(v)) return "'" + text + "' is not a number";
  const std::string unit = trim(end);
  switch (m) {
    case Metric::Power:
      if (!unit.empty() && unit != "W") return "'" + text + "' is not a number of watts";
      out = v;
      break;
    case Metric::Util:
      if (!unit.empty() && unit != "%") return "'" + text + "' is not a percentage";
      out = v;
      break;
    case Metric::Mem: {
      if (unit.empty()) {
        out = v * mem_scale;
        break;
      }
      const auto g = gib_per(unit);
      if (!g) return "'" + text + "': unknown memory unit '" + unit + "' (MiB, GiB, MB, GB)";
      out = v * *g;
      break;
    }
  }
  return "";
}

// Days from 1970-01-01 of a proleptic Gregorian date (no time zone involved).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

void add_sample(GpuTelemetry& t, std::map<std::string, std::size_t>& index, const std::string& key,
                const std::string& label, GpuSample s) {
  auto it = index.find(key);
  if (it == index.end()) {
    it = index.emplace(key, t.gpus.size()).first;
    t.gpus.push_back({key, label, {}});
  }
  t.gpus[it->second].samples.push_back(s);
}

void finish(GpuTelemetry& t) {
  for (auto& g : t.gpus)
    std::stable_sort(g.samples.begin(), g.samples.end(), [](const auto& a, const auto& b) { return a.t_ns < b.t_ns; });
}

}  // namespace

std::optional<std::int64_t> parse_timestamp_ns(const std::string& raw) {
  const std::string text = trim(raw);
  if (text.empty()) return std::nullopt;
  // A number: seconds since the epoch, or ms / us / ns by magnitude; exact
  // in decimal (a double holds 16 of a time's 19 digits).
  if (const auto dot = text.find('.'); text.find_first_not_of("0123456789.") == std::string::npos &&
                                       text.find('.', dot == std::string::npos ? dot : dot + 1) == std::string::npos &&
                                       dot != 0 && text.size() <= 20) {
    const std::string whole = text.substr(0, dot), frac = dot == std::string::npos ? "" : text.substr(dot + 1);
    const std::int64_t i = std::strtoll(whole.c_str(), nullptr, 10);
    const std::int64_t scale = i >= 100000000000000000LL ? 1 : i >= 100000000000000LL ? 1000 : i >= 100000000000LL ? 1000000 : 1000000000;
    std::int64_t f = 0, unit = scale;
    for (char c : frac) {
      unit /= 10;
      if (unit == 0) break;
      f += (c - '0') * unit;
    }
    return i * scale + f;
  }
  {
    const char* s = text.c_str();
    char* end = nullptr;
    const double v = std::strtod(s, &end);
    if (end != s && *end == '\0') {
      if (!std::isfinite(v) || v < 0) return std::nullopt;
      if (v >= 1e17) {  // ns: keep every digit of an integer
        const long long n = std::strtoll(s, &end, 10);
        return *end == '\0' ? static_cast<std::int64_t>(n) : static_cast<std::int64_t>(v);
      }
      const double scale = v >= 1e14 ? 1e3 : v >= 1e11 ? 1e6 : 1e9;
      return static_cast<std::int64_t>(std::llround(v * scale));
    }
  }
  // A date and time: YYYY/MM/DD or YYYY-MM-DD, then ' ' or 'T', HH:MM:SS[.frac][zone].
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, used = 0;
  char s1 = 0, s2 = 0, sep = 0;
  if (std::sscanf(text.c_str(), "%4d%c%2d%c%2d%c%2d:%2d:%2d%n", &y, &s1, &mo, &s2, &d, &sep, &h, &mi, &sec, &used) != 9)
    return std::nullopt;
  if (!((s1 == '/' && s2 == '/') || (s1 == '-' && s2 == '-')) || (sep != ' ' && sep != 'T')) return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  std::size_t at = static_cast<std::size_t>(used);
  std::int64_t frac_ns = 0;
  if (at < text.size() && text[at] == '.') {
    ++at;
    std::int64_t scale = 100000000;
    const std::size_t digits = at;
    for (; at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])); ++at, scale /= 10)
      frac_ns += (text[at] - '0') * scale;
    if (at == digits) return std::nullopt;
  }
  const std::string zone = trim(text.substr(at));
  const std::int64_t civil_s = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
                               h * 3600 + mi * 60 + sec;
  std::int64_t epoch_s = 0;
  if (zone.empty()) {
    // No zone (nvidia-smi): the local time of this machine (TZ applies).
    std::tm tm{};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    tm.tm_isdst = -1;
    const std::time_t tt = std::mktime(&tm);
    if (tt == static_cast<std::time_t>(-1)) return std::nullopt;
    epoch_s = static_cast<std::int64_t>(tt);
  } else if (zone == "Z" || zone == "UTC") {
    epoch_s = civil_s;
  } else {
    int zh = 0, zm = 0;
    const char sign = zone[0];
    if ((sign != '+' && sign != '-') ||
        !(std::sscanf(zone.c_str() + 1, "%2d:%2d", &zh, &zm) == 2 || std::sscanf(zone.c_str() + 1, "%2d%2d", &zh, &zm) == 2))
      return std::nullopt;
    epoch_s = civil_s - (sign == '+' ? 1 : -1) * (zh * 3600 + zm * 60);
  }
  return epoch_s * 1000000000 + frac_ns;
}

GpuTelemetry read_gpu_metrics_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read GPU metrics '" + path + "'");
  GpuTelemetry t;
  t.file = path;
  std::string line;
  std::size_t n = 0;
  std::vector<std::string> header_raw;
  while (header_raw.empty() && std::getline(in, line)) {
    ++n;
    if (!trim(line).empty() && trim(line)[0] != '#') header_raw = split_csv(line);
  }
  if (header_raw.empty()) throw UserError(path + ": empty (expected a CSV header such as nvidia-smi's)");
  // Column names without their "[unit]", lower case.
  struct Col {
    int at = -1;
    std::string name, unit;
  };
  std::vector<Col> cols;
  for (std::size_t i = 0; i < header_raw.size(); ++i) {
    std::string h = header_raw[i], unit;
    if (const auto b = h.find('['); b != std::string::npos) {
      const auto e = h.find(']', b);
      unit = trim(h.substr(b + 1, e == std::string::npos ? std::string::npos : e - b - 1));
      h = h.substr(0, b);
    }
    cols.push_back({static_cast<int>(i), lower(trim(h)), unit});
  }
  auto find = [&](std::initializer_list<const char*> names) -> const Col* {
    for (const char* want : names)
      for (const auto& c : cols)
        if (c.name == want) return &c;
    return nullptr;
  };
  const Col* ts = find({"timestamp", "timestamp_ns", "timestamp_unix", "timestamp_s", "time"});
  const Col* idx = find({"index", "gpu_index", "gpu"});
  const Col* uuid = find({"uuid", "gpu_uuid"});
  const Col* host = find({"hostname", "host"});
  const Col* power = find({"power.draw", "power.draw.average", "power.draw.instant", "gpu_power_usage", "power_w",
                           "power_draw_w", "power"});
  const Col* util = find({"utilization.gpu", "gpu_utilization", "gpu_util_percent", "util_gpu_percent",
                          "utilization_gpu"});
  const Col* mem = find({"memory.used", "gpu_memory_used", "memory_used_mib", "memory_used_mb", "memory_used_gib",
                         "memory_used_gb"});
  if (!ts)
    throw UserError(path + ":" + std::to_string(n) +
                    ": no timestamp column (expected timestamp or timestamp_ns, as nvidia-smi --query-gpu=timestamp,... writes)");
  if (!power && !util && !mem)
    throw UserError(path + ":" + std::to_string(n) +
                    ": no GPU metric column (expected power.draw, utilization.gpu or memory.used, as nvidia-smi "
                    "--query-gpu=timestamp,index,power.draw,utilization.gpu,memory.used --format=csv writes)");
  // Memory in GiB from the column's unit: its [unit], else what its name says.
  double mem_scale = 1.0 / 1024;  // nvidia-smi's MiB
  if (mem) {
    if (!mem->unit.empty()) {
      const auto g = gib_per(mem->unit);
      if (!g) throw UserError(path + ":" + std::to_string(n) + ": column '" + header_raw[static_cast<std::size_t>(mem->at)] +
                              "': unknown memory unit '" + mem->unit + "' (MiB, GiB, MB, GB)");
      mem_scale = *g;
    } else if (mem->name == "gpu_memory_used" || mem->name == "memory_used_gb") {
      mem_scale = 1e9 / 1073741824.0;  // AIPerf's GB
    } else if (mem->name == "memory_used_gib") {
      mem_scale = 1.0;
    }
  }
  const std::string header_line = line;
  std::map<std::string, std::size_t> index;
  while (std::getline(in, line)) {
    ++n;
    const std::string tl = trim(line);
    if (tl.empty() || tl[0] == '#' || line == header_line) continue;  // blank, comment, a repeated header
    const auto f = split_csv(line);
    const std::string where = path + ":" + std::to_string(n);
    if (f.size() < header_raw.size())
      throw UserError(where + ": " + std::to_string(f.size()) + " fields, the header has " + std::to_string(header_raw.size()));
    auto field = [&](const Col* c) { return f[static_cast<std::size_t>(c->at)]; };
    auto col_name = [&](const Col* c) { return header_raw[static_cast<std::size_t>(c->at)]; };
    GpuSample s;
    const auto when = parse_timestamp_ns(field(ts));
    if (!when)
      throw UserError(where + ": column '" + col_name(ts) + "': '" + field(ts) +
                      "' is not a time (expected 2026/12/03 19:44:56.286, ISO 8601 or seconds since the epoch)");
    s.t_ns = ts->name == "timestamp_ns" ? static_cast<std::int64_t>(std::strtoll(field(ts).c_str(), nullptr, 10)) : *when;
    for (auto [c, m, out] : {std::tuple{power, Metric::Power, &s.power_w}, std::tuple{util, Metric::Util, &s.util_pct},
                             std::tuple{mem, Metric::Mem, &s.mem_gib}}) {
      if (!c) continue;
      const std::string err = read_metric(field(c), m, mem_scale, *out);
      if (!err.empty()) throw UserError(where + ": column '" + col_name(c) + "': " + err);
    }
    std::string gpu = idx ? field(idx) : std::string("0");
    if (idx && gpu.find_first_not_of("0123456789") != std::string::npos)
      throw UserError(where + ": column '" + col_name(idx) + "': '" + gpu + "' is not a GPU index");
    const std::string h = host ? field(host) : std::string();
    const std::string key = (h.empty() ? "" : h + "/") + (uuid && !field(uuid).empty() ? field(uuid) : gpu);
    add_sample(t, index, key, (h.empty() ? "" : h + " ") + "GPU " + gpu, s);
  }
  finish(t);
  return t;
}

GpuTelemetry read_aiperf_gpu_telemetry(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read GPU telemetry '" + path + "'");
  GpuTelemetry t;
  t.file = path;
  std::map<std::string, std::size_t> index;
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (trim(line).empty()) continue;
    const std::string where = path + ":" + std::to_string(n);
    const auto r = json::parse(line, nullptr, false);
    if (r.is_discarded() || !r.is_object()) throw UserError(where + ": not a JSON object (expected AIPerf's TelemetryRecord)");
    if (!r.contains("timestamp_ns") || !r["timestamp_ns"].is_number_integer())
      throw UserError(where + ": timestamp_ns: missing or not an integer");
    if (!r.contains("telemetry_data") || !r["telemetry_data"].is_object())
      throw UserError(where + ": telemetry_data: missing or not an object");
    const auto& d = r["telemetry_data"];
    GpuSample s;
    s.t_ns = r["timestamp_ns"].get<std::int64_t>();
    auto num = [&](const char* key, std::optional<double>& out, double scale) {
      if (!d.contains(key) || d[key].is_null()) return;
      if (!d[key].is_number()) throw UserError(where + ": telemetry_data." + key + ": not a number");
      out = d[key].get<double>() * scale;
    };
    num("gpu_power_usage", s.power_w, 1);
    num("gpu_utilization", s.util_pct, 1);
    num("gpu_memory_used", s.mem_gib, 1e9 / 1073741824.0);  // GB
    if (!s.power_w) num("amd_power", s.power_w, 1);
    if (!s.util_pct) num("amd_gfx_activity", s.util_pct, 1);
    if (!s.mem_gib) num("amd_memory_used", s.mem_gib, 1e9 / 1073741824.0);
    std::string gpu = "0";
    if (r.contains("gpu_index")) {
      if (!r["gpu_index"].is_number_integer()) throw UserError(where + ": gpu_index: not an integer");
      gpu = std::to_string(r["gpu_index"].get<int>());
    }
    const std::string host = r.contains("hostname") && r["hostname"].is_string() ? r["hostname"].get<std::string>() : "";
    const std::string url = r.contains("dcgm_url") && r["dcgm_url"].is_string() ? r["dcgm_url"].get<std::string>() : "";
    const std::string key = r.contains("gpu_uuid") && r["gpu_uuid"].is_string() ? r["gpu_uuid"].get<std::string>() : url + "/" + gpu;
    add_sample(t, index, key, (host.empty() ? "" : host + " ") + "GPU " + gpu, s);
  }
  finish(t);
  return t;
}

GpuTelemetry read_gpu_telemetry(const std::string& path) {
  const std::string p = lower(path);
  if (p.size() >= 6 && p.compare(p.size() - 6, 6, ".jsonl") == 0) return read_aiperf_gpu_telemetry(path);
  return read_gpu_metrics_csv(path);
}

std::optional<MeanPower> mean_power(const GpuTelemetry& t, std::int64_t from_ns, std::int64_t to_ns, std::string* why) {
  MeanPower mp;
  for (const auto& g : t.gpus) {
    double sum = 0;
    std::size_t k = 0, any = 0;
    for (const auto& s : g.samples) {
      if (!s.power_w) continue;
      ++any;
      if (s.t_ns < from_ns || s.t_ns > to_ns) continue;
      sum += *s.power_w;
      ++k;
    }
    if (any == 0) continue;
    if (k == 0) {
      if (why) *why = g.label + " has no power sample within the profiling window";
      return std::nullopt;
    }
    mp.total_w += sum / static_cast<double>(k);
    mp.samples += k;
    ++mp.gpus;
  }
  if (mp.gpus == 0) {
    if (why) *why = "no power samples";
    return std::nullopt;
  }
  return mp;
}

json telemetry_series(const GpuTelemetry& t, std::int64_t t0_ns, double duration_s, std::size_t max_points) {
  json gpus = json::array();
  for (const auto& g : t.gpus) {
    std::vector<const GpuSample*> in;
    for (const auto& s : g.samples) {
      const double x = static_cast<double>(s.t_ns - t0_ns) / 1e9;
      if (x >= -1 && x <= duration_s + 1) in.push_back(&s);
    }
    if (in.empty()) continue;
    const std::size_t k = std::max<std::size_t>(1, (in.size() + max_points - 1) / max_points);
    json ts = json::array(), p = json::array(), u = json::array(), m = json::array();
    auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
    for (std::size_t i = 0; i < in.size(); i += k) {
      ts.push_back(static_cast<double>(in[i]->t_ns - t0_ns) / 1e9);
      p.push_back(opt(in[i]->power_w));
      u.push_back(opt(in[i]->util_pct));
      m.push_back(opt(in[i]->mem_gib));
    }
    gpus.push_back({{"label", g.label}, {"t", ts}, {"power_w", p}, {"util_pct", u}, {"mem_gib", m}});
  }
  return gpus;
}

}  // namespace agentperf::report
