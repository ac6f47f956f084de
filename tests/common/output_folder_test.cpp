// The guarded result folder: one run at a time, and no silent overwrite.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/output_folder.h"

namespace fs = std::filesystem;
using agentperf::OutputFolder;
using agentperf::UserError;

namespace {
fs::path folder_temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("agentperf_of_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}
std::string error_of(const fs::path& dir, bool overwrite) {
  try {
    OutputFolder f(dir, overwrite, "agentperf profile -o x");
  } catch (const UserError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  return "";
}
}  // namespace

TEST(OutputFolder, ASecondHolderIsRefusedNamingTheFirstUntilItEnds) {
  const auto dir = folder_temp_dir("lock");
  {
    OutputFolder first(dir, false, "agentperf profile --url U -o run1");
    EXPECT_TRUE(fs::is_directory(dir));
    const std::string e = error_of(dir, true);  // even --overwrite never shares a folder in use
    EXPECT_NE(e.find("in use by another run"), std::string::npos) << e;
    EXPECT_NE(e.find("pid " + std::to_string(::getpid())), std::string::npos) << e;
    EXPECT_NE(e.find("-o run1"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;  // one line
  }
  // Released when the holder ends: the lock file left behind blocks nobody.
  EXPECT_EQ(error_of(dir, false), "");
  fs::remove_all(dir);
}

TEST(OutputFolder, AFolderWithResultsNeedsOverwriteWhichRemovesTheOldFiles) {
  const auto dir = folder_temp_dir("results");
  fs::create_directories(dir);
  std::ofstream(dir / "profile_export.jsonl") << "{}\n";
  std::ofstream(dir / "notes.txt") << "mine\n";
  const std::string e = error_of(dir, false);
  EXPECT_NE(e.find("holds an earlier run's results (profile_export.jsonl)"), std::string::npos) << e;
  EXPECT_NE(e.find("--overwrite"), std::string::npos) << e;
  EXPECT_TRUE(fs::exists(dir / "profile_export.jsonl"));  // refused: nothing touched
  EXPECT_EQ(error_of(dir, true), "");
  EXPECT_FALSE(fs::exists(dir / "profile_export.jsonl"));  // the earlier run's files are gone
  EXPECT_TRUE(fs::exists(dir / "notes.txt"));               // a user's own file is not
  fs::remove_all(dir);
}

TEST(OutputFolder, DefaultFoldersAreNamedAsAiperfNamesThemAndNeverMeet) {
  const auto base = folder_temp_dir("default");
  const fs::path a = agentperf::default_run_folder(base, "Qwen/Qwen3-8B", "chat", "concurrency8");
  const std::string name = a.filename().string();
  EXPECT_EQ(name.rfind("Qwen_Qwen3-8B-openai-chat-concurrency8-", 0), 0u) << name;
  fs::create_directories(a);
  const fs::path b = agentperf::default_run_folder(base, "Qwen/Qwen3-8B", "chat", "concurrency8");
  EXPECT_NE(a, b);  // the same second: a suffix, not the same folder
  fs::create_directories(b);
  agentperf::link_latest_run(base, b);
  EXPECT_TRUE(fs::is_symlink(base / "latest"));
  EXPECT_EQ(fs::canonical(base / "latest"), fs::canonical(b));
  agentperf::link_latest_run(base, a);  // moves with the newest run
  EXPECT_EQ(fs::canonical(base / "latest"), fs::canonical(a));
  fs::remove_all(base);
}
