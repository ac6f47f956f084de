// The trace loader's progress (LoadOptions::progress) with an injected
// clock: MB of the files read of their sizes on disk (a directory of Weka
// files, a Mooncake file), traces made for synth:PRESET, and the final line
// with the traces and requests kept.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "metrics/progress.h"
#include "trace/synth.h"
#include "trace/trace_loader.h"

using namespace agentperf;
namespace fs = std::filesystem;

namespace {

// Every clock read is one second later; a line whenever one is due.
struct Recorder {
  std::int64_t now = 0;
  std::string out;
  ProgressOutput output() {
    ProgressOutput o;
    o.tty = false;
    o.file_interval_s = 1;
    o.clock = [this] { return now += 1'000'000'000; };
    o.write = [this](std::string_view s) { out += s; };
    return o;
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> v;
    std::size_t at = 0;
    for (std::size_t nl; (nl = out.find('\n', at)) != std::string::npos; at = nl + 1) v.push_back(out.substr(at, nl - at));
    return v;
  }
};

fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("agentperf_trace_progress_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string mb(std::uintmax_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(bytes) / 1e6);
  return b;
}

}  // namespace

TEST(TraceProgress, ADirectoryCountsMegabytesReadOfItsFiles) {
  const auto dir = temp_dir("dir");
  // Three files of two AgentX-shaped traces each (~1.4 MB a trace: two
  // 1 MiB reads or more per file).
  const auto so = trace::synth_preset("cc-weka-256k");
  std::int64_t requests = 0;
  std::uintmax_t bytes = 0;
  for (int f = 0; f < 3; ++f) {
    const auto path = dir / ("part" + std::to_string(f) + ".jsonl");
    std::ofstream out(path);
    for (int i = 0; i < 2; ++i) {
      const auto t = trace::synthesize_trace(so, 2 * f + i);
      requests += t.request_count();
      out << trace::to_json_line(t) << "\n";
    }
    out.close();
    bytes += fs::file_size(path);
  }
  Recorder rec;
  CountProgress p("agentperf: loading traces", rec.output());
  trace::LoadOptions lo;
  lo.progress = &p;
  trace::LoadStats st;
  const auto traces = trace::load_traces(dir.string(), "auto", lo, &st);
  ASSERT_EQ(traces.size(), 6u);
  const auto lines = rec.lines();
  ASSERT_GE(lines.size(), 4u) << rec.out;
  const std::string total = mb(bytes);
  const std::regex progress("agentperf: loading traces: ([0-9.]+)/" + total + " MB \\(([0-9]+)%\\) \\| [0-9.]+ MB/s( \\| ETA [0-9.]+s)?");
  double last = -1;
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, progress)) << lines[i];
    const double done = std::stod(m[1]);
    EXPECT_GE(done, last) << lines[i];
    last = done;
    if (done < std::stod(total)) {
      EXPECT_TRUE(m[3].matched) << "an ETA while bytes are left: " << lines[i];
    }
  }
  EXPECT_EQ(lines.back().substr(0, lines.back().find(" in ")),
            "agentperf: loading traces: finished " + total + "/" + total + " MB");
  EXPECT_NE(lines.back().find("; 6 traces (" + std::to_string(requests) + " requests)"), std::string::npos) << lines.back();

  // Filters: the final line says what was kept of what was read.
  Recorder rec2;
  CountProgress p2("agentperf: loading traces", rec2.output());
  lo.progress = &p2;
  lo.num_dataset_entries = 4;
  (void)trace::load_traces(dir.string(), "weka", lo, &st);
  ASSERT_FALSE(rec2.lines().empty());
  EXPECT_NE(rec2.lines().back().find("; 4 traces (" + std::to_string(st.requests_kept) + " requests) kept of 6 (" +
                                     std::to_string(requests) + ")"),
            std::string::npos)
      << rec2.out;
  fs::remove_all(dir);
}

TEST(TraceProgress, AMooncakeFileAndASyntheticCorpus) {
  const auto dir = temp_dir("mooncake");
  const auto path = dir / "rows.jsonl";
  {
    std::ofstream out(path);
    // 3 MB of rows over 50 sessions: a few 1 MiB reads.
    for (int i = 0; out.tellp() < 3'000'000; ++i) {
      out << "{\"timestamp\": " << i * 10 << ", \"input_length\": 5120, \"output_length\": 64, \"hash_ids\": [";
      for (int h = 0; h < 10; ++h) out << (h ? "," : "") << i * 10 + h;
      out << "], \"session_id\": \"s" << i % 50 << "\"}\n";
    }
  }
  Recorder rec;
  CountProgress p("agentperf: loading traces", rec.output());
  trace::LoadOptions lo;
  lo.progress = &p;
  trace::LoadStats st;
  const auto traces = trace::load_traces(path.string(), "auto", lo, &st);
  EXPECT_EQ(traces.size(), 50u);
  const auto lines = rec.lines();
  ASSERT_GE(lines.size(), 3u) << rec.out;
  const std::string total = mb(fs::file_size(path));
  EXPECT_TRUE(std::regex_match(lines[0], std::regex("agentperf: loading traces: [0-9.]+/" + total +
                                                    " MB \\([0-9]+%\\) \\| [0-9.]+ MB/s \\| ETA [0-9.]+s")))
      << lines[0];
  EXPECT_EQ(lines.back().substr(0, lines.back().find(" in ")), "agentperf: loading traces: finished " + total + "/" + total + " MB");
  EXPECT_NE(lines.back().find("; 50 traces (" + std::to_string(st.requests_kept) + " requests)"), std::string::npos)
      << lines.back();

  // synth:PRESET counts the traces it makes.
  Recorder syn;
  CountProgress ps("agentperf: loading traces", syn.output());
  trace::LoadOptions so;
  so.progress = &ps;
  so.num_dataset_entries = 5;
  (void)trace::load_traces("synth:cc-weka-256k", "auto", so, &st);
  const auto sl = syn.lines();
  ASSERT_EQ(sl.size(), 6u) << syn.out;  // one a trace (the clock moves 1 s a read), then the final line
  EXPECT_TRUE(std::regex_match(sl[0], std::regex("agentperf: loading traces: 1/5 traces \\(20%\\) \\| [0-9.]+ traces/s \\| ETA 4\\.0s")))
      << sl[0];
  EXPECT_TRUE(std::regex_match(sl[3], std::regex("agentperf: loading traces: 4/5 traces \\(80%\\) .*ETA 1\\.0s"))) << sl[3];
  EXPECT_EQ(sl[4], "agentperf: loading traces: 5/5 traces (100%) | 1.0 traces/s") << "no ETA once all are done";
  EXPECT_EQ(sl[5].substr(0, sl[5].find(" in ")), "agentperf: loading traces: finished 5/5 traces");
  EXPECT_NE(sl[5].find("; 5 traces (" + std::to_string(st.requests_kept) + " requests)"), std::string::npos) << sl[5];
  fs::remove_all(dir);
}
