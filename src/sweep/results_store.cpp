#include "sweep/results_store.h"

#include <set>

#include <sqlite3.h>

#include <ctime>

#include "common/error.h"
#include "common/run_control.h"

namespace agentperf::sweep {
namespace {

// Column order of the points table; put() and read_row() follow it.
constexpr const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS points (
  sweep TEXT NOT NULL, exp_name TEXT NOT NULL, row_index INTEGER, tp INTEGER, conc INTEGER,
  kv_offloading TEXT, spec_decoding TEXT, status TEXT NOT NULL, mode TEXT, adaptive_added INTEGER,
  total_tput_per_gpu REAL, output_tput_per_gpu REAL, intvty_p50 REAL, e2e_norm_intvty_p50 REAL,
  ttft_p50_ms REAL, e2el_p50_s REAL, cache_hit REAL, requests INTEGER, errors INTEGER, valid INTEGER,
  diagnosis TEXT, result_dir TEXT, server_command TEXT, server_log TEXT, server_metrics TEXT,
  agentperf_version TEXT, started_at TEXT, finished_at TEXT,
  tput_ci_lo REAL, tput_ci_hi REAL, ttft_p50_ci_lo_ms REAL, ttft_p50_ci_hi_ms REAL, small_sample INTEGER,
  time_scale REAL, binding_pool TEXT,
  PRIMARY KEY (sweep, exp_name));
CREATE TABLE IF NOT EXISTS capacity_searches (
  search TEXT PRIMARY KEY, slos TEXT, capacity INTEGER, lowest_missing INTEGER, limiting_slo TEXT,
  at_max INTEGER, predicted_edge INTEGER, measured_points INTEGER, complete INTEGER, result_dir TEXT,
  agentperf_version TEXT, finished_at TEXT);
)";
constexpr const char* kCapacityColumns =
    "search, slos, capacity, lowest_missing, limiting_slo, at_max, predicted_edge, measured_points, complete, "
    "result_dir, agentperf_version, finished_at";
// Columns added after the first release: a store written before them gets
// them on open (ALTER TABLE ... ADD COLUMN), empty for its old rows.
constexpr const char* kAddedColumns[][2] = {{"tput_ci_lo", "REAL"},        {"tput_ci_hi", "REAL"},
                                             {"ttft_p50_ci_lo_ms", "REAL"}, {"ttft_p50_ci_hi_ms", "REAL"},
                                             {"small_sample", "INTEGER"}, {"time_scale", "REAL"},
                                             {"binding_pool", "TEXT"}};
constexpr const char* kColumns =
    "sweep, exp_name, row_index, tp, conc, kv_offloading, spec_decoding, status, mode, adaptive_added, "
    "total_tput_per_gpu, output_tput_per_gpu, intvty_p50, e2e_norm_intvty_p50, ttft_p50_ms, e2el_p50_s, cache_hit, "
    "requests, errors, valid, diagnosis, result_dir, server_command, server_log, server_metrics, agentperf_version, "
    "started_at, finished_at, tput_ci_lo, tput_ci_hi, ttft_p50_ci_lo_ms, ttft_p50_ci_hi_ms, small_sample, time_scale, "
    "binding_pool";

class Statement {
 public:
  // fail_code: the exit code of a failure (a write that fails is exit_code::write_failed).
  Statement(sqlite3* db, const char* sql, const std::string& path, int fail_code = exit_code::usage)
      : db_(db), path_(path), fail_code_(fail_code) {
    if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK) fail("prepare");
  }
  ~Statement() { sqlite3_finalize(st_); }
  void bind(int i, const std::string& v) { sqlite3_bind_text(st_, i, v.c_str(), -1, SQLITE_TRANSIENT); }
  void bind(int i, double v) { sqlite3_bind_double(st_, i, v); }
  void bind(int i, long long v) { sqlite3_bind_int64(st_, i, v); }
  void bind(int i, int v) { sqlite3_bind_int(st_, i, v); }
  bool step() {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail("step");
  }
  std::string text(int c) const {
    const auto* p = sqlite3_column_text(st_, c);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  double real(int c) const { return sqlite3_column_double(st_, c); }
  long long integer(int c) const { return sqlite3_column_int64(st_, c); }
  [[noreturn]] void fail(const char* what) const {
    throw UserError("results store " + path_ + ": " + what + ": " + sqlite3_errmsg(db_), fail_code_);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
  std::string path_;
  int fail_code_;
};

PointRow read_row(const Statement& s) {
  PointRow r;
  int c = 0;
  r.sweep = s.text(c++);
  r.exp_name = s.text(c++);
  r.row = static_cast<int>(s.integer(c++));
  r.tp = static_cast<int>(s.integer(c++));
  r.conc = static_cast<int>(s.integer(c++));
  r.kv_offloading = s.text(c++);
  r.spec_decoding = s.text(c++);
  r.status = s.text(c++);
  r.mode = s.text(c++);
  r.adaptive_added = s.integer(c++) != 0;
  r.total_tput_per_gpu = s.real(c++);
  r.output_tput_per_gpu = s.real(c++);
  r.intvty_p50 = s.real(c++);
  r.e2e_norm_intvty_p50 = s.real(c++);
  r.ttft_p50_ms = s.real(c++);
  r.e2el_p50_s = s.real(c++);
  r.cache_hit = s.real(c++);
  r.requests = s.integer(c++);
  r.errors = s.integer(c++);
  r.valid = s.integer(c++) != 0;
  r.diagnosis = s.text(c++);
  r.result_dir = s.text(c++);
  r.server_command = s.text(c++);
  r.server_log = s.text(c++);
  r.server_metrics = s.text(c++);
  r.agentperf_version = s.text(c++);
  r.started_at = s.text(c++);
  r.finished_at = s.text(c++);
  r.tput_ci_lo = s.real(c++);
  r.tput_ci_hi = s.real(c++);
  r.ttft_p50_ci_lo_ms = s.real(c++);
  r.ttft_p50_ci_hi_ms = s.real(c++);
  r.small_sample = s.integer(c++) != 0;
  r.time_scale = s.real(c++);
  r.binding_pool = s.text(c++);
  return r;
}

}  // namespace

std::string utc_now_iso() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

ResultsStore::ResultsStore(const std::string& path) : path_(path) {
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError("cannot open results store '" + path + "': " + msg);
  }
  sqlite3_busy_timeout(db_, 10000);
  char* err = nullptr;
  if (sqlite3_exec(db_, kSchema, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw UserError("results store '" + path + "' is not usable: " + msg);
  }
  std::set<std::string> have;
  {
    Statement info(db_, "PRAGMA table_info(points)", path_);
    while (info.step()) have.insert(info.text(1));
  }
  for (const auto& [name, type] : kAddedColumns) {
    if (have.count(name)) continue;
    const std::string sql = std::string("ALTER TABLE points ADD COLUMN ") + name + " " + type;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      throw UserError("results store '" + path + "' could not gain column " + name + ": " + msg);
    }
  }
}

ResultsStore::~ResultsStore() { sqlite3_close(db_); }

void ResultsStore::put(const PointRow& r) {
  const std::string sql = std::string("INSERT OR REPLACE INTO points (") + kColumns +
                          ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  Statement s(db_, sql.c_str(), path_, exit_code::write_failed);
  int i = 1;
  s.bind(i++, r.sweep);
  s.bind(i++, r.exp_name);
  s.bind(i++, r.row);
  s.bind(i++, r.tp);
  s.bind(i++, r.conc);
  s.bind(i++, r.kv_offloading);
  s.bind(i++, r.spec_decoding);
  s.bind(i++, r.status);
  s.bind(i++, r.mode);
  s.bind(i++, r.adaptive_added ? 1 : 0);
  s.bind(i++, r.total_tput_per_gpu);
  s.bind(i++, r.output_tput_per_gpu);
  s.bind(i++, r.intvty_p50);
  s.bind(i++, r.e2e_norm_intvty_p50);
  s.bind(i++, r.ttft_p50_ms);
  s.bind(i++, r.e2el_p50_s);
  s.bind(i++, r.cache_hit);
  s.bind(i++, r.requests);
  s.bind(i++, r.errors);
  s.bind(i++, r.valid ? 1 : 0);
  s.bind(i++, r.diagnosis);
  s.bind(i++, r.result_dir);
  s.bind(i++, r.server_command);
  s.bind(i++, r.server_log);
  s.bind(i++, r.server_metrics);
  s.bind(i++, r.agentperf_version);
  s.bind(i++, r.started_at);
  s.bind(i++, r.finished_at);
  s.bind(i++, r.tput_ci_lo);
  s.bind(i++, r.tput_ci_hi);
  s.bind(i++, r.ttft_p50_ci_lo_ms);
  s.bind(i++, r.ttft_p50_ci_hi_ms);
  s.bind(i++, r.small_sample ? 1 : 0);
  s.bind(i++, r.time_scale);
  s.bind(i++, r.binding_pool);
  s.step();
}

std::optional<PointRow> ResultsStore::get(const std::string& sweep, const std::string& exp_name) const {
  const std::string sql = std::string("SELECT ") + kColumns + " FROM points WHERE sweep = ? AND exp_name = ?";
  Statement s(db_, sql.c_str(), path_);
  s.bind(1, sweep);
  s.bind(2, exp_name);
  if (!s.step()) return std::nullopt;
  return read_row(s);
}

std::vector<PointRow> ResultsStore::list(const std::string& sweep) const {
  const std::string sql = std::string("SELECT ") + kColumns + " FROM points" + (sweep.empty() ? "" : " WHERE sweep = ?") +
                          " ORDER BY sweep, row_index, conc";
  Statement s(db_, sql.c_str(), path_);
  if (!sweep.empty()) s.bind(1, sweep);
  std::vector<PointRow> out;
  while (s.step()) out.push_back(read_row(s));
  return out;
}

void ResultsStore::put_capacity(const CapacityRow& r) {
  const std::string sql =
      std::string("INSERT OR REPLACE INTO capacity_searches (") + kCapacityColumns + ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?)";
  Statement s(db_, sql.c_str(), path_, exit_code::write_failed);
  int i = 1;
  s.bind(i++, r.search);
  s.bind(i++, r.slos);
  s.bind(i++, r.capacity);
  s.bind(i++, r.lowest_missing);
  s.bind(i++, r.limiting_slo);
  s.bind(i++, r.at_max ? 1 : 0);
  s.bind(i++, r.predicted_edge);
  s.bind(i++, r.measured_points);
  s.bind(i++, r.complete ? 1 : 0);
  s.bind(i++, r.result_dir);
  s.bind(i++, r.agentperf_version);
  s.bind(i++, r.finished_at);
  s.step();
}

std::vector<CapacityRow> ResultsStore::list_capacity(const std::string& search) const {
  const std::string sql = std::string("SELECT ") + kCapacityColumns + " FROM capacity_searches" +
                          (search.empty() ? "" : " WHERE search = ?") + " ORDER BY search";
  Statement s(db_, sql.c_str(), path_);
  if (!search.empty()) s.bind(1, search);
  std::vector<CapacityRow> out;
  while (s.step()) {
    CapacityRow r;
    int c = 0;
    r.search = s.text(c++);
    r.slos = s.text(c++);
    r.capacity = static_cast<int>(s.integer(c++));
    r.lowest_missing = static_cast<int>(s.integer(c++));
    r.limiting_slo = s.text(c++);
    r.at_max = s.integer(c++) != 0;
    r.predicted_edge = static_cast<int>(s.integer(c++));
    r.measured_points = static_cast<int>(s.integer(c++));
    r.complete = s.integer(c++) != 0;
    r.result_dir = s.text(c++);
    r.agentperf_version = s.text(c++);
    r.finished_at = s.text(c++);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace agentperf::sweep
