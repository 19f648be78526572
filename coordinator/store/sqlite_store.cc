#include "coordinator/store/sqlite_store.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>
#include <type_traits>
#include <utility>

#include "coordinator/store/sqlite_internal.h"

namespace gdrmesh {

using sqlite_detail::columnText;
using sqlite_detail::kConvertReportNotes;
using sqlite_detail::kConvertReportSuspects;
using sqlite_detail::kConvertReportVerdicts;
using sqlite_detail::kCreateSweepNotes;
using sqlite_detail::kCreateSweepReportSummary;
using sqlite_detail::kCreateSweepSuspects;
using sqlite_detail::kCreateSweepVerdicts;
using sqlite_detail::StmtScope;

namespace {

// PRAGMA application_id of a gdrmesh database ("GDMS"): tells our files from other SQLite files.
constexpr int64_t kApplicationId = 0x47444D53;

// ---------------------------------------------------------------------------------------------
// Migration 1: results and workers.
//
// Columns holding doubles are declared WITHOUT a type on purpose: a REAL (or NUMERIC) column
// makes SQLite store an integral double as an integer, which turns -0.0 into 0 and breaks the
// bit-exact round trip. Values are still stored as REAL (typeof() = 'real'), so SQL arithmetic
// and aggregates work as usual. NaN cannot be stored by SQLite: it becomes NULL, read back as
// a quiet NaN.
// uint64 fields are stored as the int64 with the same bits (exact; values >= 2^63, which no
// real counter reaches, read as negative in raw SQL).
const char* const kCreateResults = R"sql(
CREATE TABLE results (
  id INTEGER PRIMARY KEY,
  test_id TEXT NOT NULL UNIQUE,
  run_id TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  op TEXT NOT NULL,
  mode TEXT NOT NULL,
  transport TEXT NOT NULL,
  gpudirect INTEGER NOT NULL,
  initiator_worker TEXT NOT NULL,
  initiator_host TEXT NOT NULL,
  initiator_nic TEXT NOT NULL,
  initiator_port INTEGER NOT NULL,
  initiator_gpu INTEGER NOT NULL,
  initiator_gpu_pci TEXT NOT NULL,
  initiator_memory TEXT NOT NULL,
  initiator_reg_path TEXT NOT NULL,
  initiator_gid_index INTEGER NOT NULL,
  initiator_topo_class TEXT NOT NULL,
  target_worker TEXT NOT NULL,
  target_host TEXT NOT NULL,
  target_nic TEXT NOT NULL,
  target_port INTEGER NOT NULL,
  target_gpu INTEGER NOT NULL,
  target_gpu_pci TEXT NOT NULL,
  target_memory TEXT NOT NULL,
  target_reg_path TEXT NOT NULL,
  target_gid_index INTEGER NOT NULL,
  target_topo_class TEXT NOT NULL,
  message_size INTEGER NOT NULL,
  iterations INTEGER NOT NULL,
  num_qps INTEGER NOT NULL,
  path_mtu INTEGER NOT NULL,
  meas_message_size INTEGER NOT NULL,
  meas_iterations INTEGER NOT NULL,
  meas_warmup_iterations INTEGER NOT NULL,
  meas_staging_seconds,
  bw_valid INTEGER NOT NULL,
  bw_bytes INTEGER NOT NULL,
  bw_messages INTEGER NOT NULL,
  bw_seconds,
  bw_avg_gbps,
  bw_peak_gbps,
  bw_msg_rate_mpps,
  lat_valid INTEGER NOT NULL,
  lat_samples INTEGER NOT NULL,
  lat_min_us,
  lat_max_us,
  lat_median_us,
  lat_mean_us,
  lat_stdev_us,
  lat_p99_us,
  lat_p999_us,
  ctr_valid INTEGER NOT NULL,
  ctr_xmit_bytes INTEGER NOT NULL,
  ctr_rcv_bytes INTEGER NOT NULL,
  ctr_xmit_packets INTEGER NOT NULL,
  ctr_rcv_packets INTEGER NOT NULL,
  ctr_errors INTEGER NOT NULL,
  integrity_checked INTEGER NOT NULL,
  integrity_bytes_checked INTEGER NOT NULL,
  integrity_wrong_bytes INTEGER NOT NULL,
  integrity_first_wrong_offset INTEGER NOT NULL,
  integrity_where TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT NOT NULL
))sql";

const char* const kCreateWorkers = R"sql(
CREATE TABLE workers (
  name TEXT PRIMARY KEY,
  hostname TEXT NOT NULL,
  inventory_json TEXT NOT NULL,
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL
))sql";

// ---------------------------------------------------------------------------------------------
// Migration 2: sweeps, their progress markers, schedule history; results.plan_index; indexes
// that hand rows to every query in its ORDER BY (newest first), so nothing is sorted.
const char* const kCreateSweeps = R"sql(
CREATE TABLE sweeps (
  id TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  pattern TEXT NOT NULL,
  name TEXT NOT NULL,
  spec_json TEXT NOT NULL,
  plan_json TEXT NOT NULL,
  report_json TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  tests_total INTEGER NOT NULL,
  reason TEXT NOT NULL,
  verdict TEXT NOT NULL
))sql";

// One row per started planned test; a re-run of the same plan index replaces it.
const char* const kCreateSweepTestStarts = R"sql(
CREATE TABLE sweep_test_starts (
  sweep_id TEXT NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  plan_index INTEGER NOT NULL,
  test_id TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  PRIMARY KEY (sweep_id, plan_index)
))sql";

// One row per single pair test in flight (RunTest); removed once its result is stored. What a
// restart needs to record the test as interrupted.
const char* const kCreateTestStarts = R"sql(
CREATE TABLE test_starts (
  test_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  op TEXT NOT NULL,
  mode TEXT NOT NULL,
  transport TEXT NOT NULL,
  message_size INTEGER NOT NULL,
  iterations INTEGER NOT NULL,
  num_qps INTEGER NOT NULL,
  initiator_worker TEXT NOT NULL,
  initiator_host TEXT NOT NULL,
  target_worker TEXT NOT NULL,
  target_host TEXT NOT NULL
))sql";

// Append-only history of schedule firings.
const char* const kCreateScheduleRuns = R"sql(
CREATE TABLE schedule_runs (
  id INTEGER PRIMARY KEY,
  schedule TEXT NOT NULL,
  due_ms INTEGER NOT NULL,
  state TEXT NOT NULL,
  sweep_id TEXT NOT NULL,
  recorded_ms INTEGER NOT NULL,
  detail TEXT NOT NULL
))sql";

// ---------------------------------------------------------------------------------------------
// Migration 3: per-sweep aggregates, kept when retention deletes raw rows. One row per
// (sweep, initiator worker, target worker, op, mode, size); see PairAggregate. value_* hold
// doubles and are declared without a type (as in results).
const char* const kCreateSweepAggregates = R"sql(
CREATE TABLE sweep_aggregates (
  sweep_id TEXT NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  src TEXT NOT NULL,
  dst TEXT NOT NULL,
  op TEXT NOT NULL,
  mode TEXT NOT NULL,
  message_size INTEGER NOT NULL,
  started_ms INTEGER NOT NULL,
  tests INTEGER NOT NULL,
  passed INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  skipped INTEGER NOT NULL,
  errors INTEGER NOT NULL,
  status TEXT NOT NULL,
  value_median,
  value_min,
  value_max,
  unit TEXT NOT NULL,
  PRIMARY KEY (sweep_id, src, dst, op, mode, message_size)
) WITHOUT ROWID)sql";

// One row per aggregated sweep: its counts as SweepProgress shows them.
const char* const kCreateSweepTotals = R"sql(
CREATE TABLE sweep_totals (
  sweep_id TEXT PRIMARY KEY REFERENCES sweeps (id) ON DELETE CASCADE,
  tests_done INTEGER NOT NULL,
  tests_failed INTEGER NOT NULL,
  tests_skipped INTEGER NOT NULL,
  results INTEGER NOT NULL
) WITHOUT ROWID)sql";

// ---------------------------------------------------------------------------------------------
// Migration 6: a judged sweep's report (SweepRecord::report_json), one row per sweep that has
// one; read only by getSweep. `revision` goes up with every write (SweepRecord::report_revision),
// and sits before the report so that reading it never walks the report's overflow pages.
const char* const kCreateSweepReports = R"sql(
CREATE TABLE sweep_reports (
  sweep_id TEXT PRIMARY KEY REFERENCES sweeps (id) ON DELETE CASCADE,
  revision INTEGER NOT NULL,
  report_json TEXT NOT NULL
))sql";

// ---------------------------------------------------------------------------------------------
// Migration 9: actions on nodes (ActionRecord), append-only.
const char* const kCreateNodeActions = R"sql(
CREATE TABLE node_actions (
  id INTEGER PRIMARY KEY,
  recorded_ms INTEGER NOT NULL,
  sweep_id TEXT NOT NULL,
  node TEXT NOT NULL,
  action TEXT NOT NULL,
  outcome TEXT NOT NULL,
  actuator TEXT NOT NULL,
  reason TEXT NOT NULL,
  detail TEXT NOT NULL
))sql";

// ---------------------------------------------------------------------------------------------
// One list of the results columns, walked by three visitors (names, binding, reading), so the
// INSERT, the SELECT and the struct cannot drift apart.
template <typename R, typename V>
void visitResultColumns(R& r, V& v) {
  v.field("test_id", r.test_id);
  v.field("run_id", r.run_id);
  v.field("plan_index", r.plan_index);  // migration 2
  v.field("started_ms", r.started_ms);
  v.field("finished_ms", r.finished_ms);
  v.field("op", r.op);
  v.field("mode", r.mode);
  v.field("transport", r.transport);
  v.derivedGpuDirect("gpudirect", r);
  v.field("initiator_worker", r.initiator.worker);
  v.field("initiator_host", r.initiator.host);
  v.field("initiator_nic", r.initiator.nic);
  v.field("initiator_port", r.initiator.port);
  v.field("initiator_gpu", r.initiator.gpu);
  v.field("initiator_gpu_pci", r.initiator.gpu_pci);
  v.field("initiator_memory", r.initiator.memory);
  v.field("initiator_reg_path", r.initiator.reg_path);
  v.field("initiator_gid_index", r.initiator.gid_index);
  v.field("initiator_topo_class", r.initiator.topo_class);
  v.field("target_worker", r.target.worker);
  v.field("target_host", r.target.host);
  v.field("target_nic", r.target.nic);
  v.field("target_port", r.target.port);
  v.field("target_gpu", r.target.gpu);
  v.field("target_gpu_pci", r.target.gpu_pci);
  v.field("target_memory", r.target.memory);
  v.field("target_reg_path", r.target.reg_path);
  v.field("target_gid_index", r.target.gid_index);
  v.field("target_topo_class", r.target.topo_class);
  v.field("message_size", r.message_size);
  v.field("iterations", r.iterations);
  v.field("num_qps", r.num_qps);
  v.field("path_mtu", r.path_mtu);
  v.field("meas_message_size", r.measurement.message_size);
  v.field("meas_iterations", r.measurement.iterations);
  v.field("meas_warmup_iterations", r.measurement.warmup_iterations);
  v.field("meas_staging_seconds", r.measurement.staging_seconds);
  v.field("bw_valid", r.measurement.has_bandwidth);
  v.field("bw_bytes", r.measurement.bw.bytes);
  v.field("bw_messages", r.measurement.bw.messages);
  v.field("bw_seconds", r.measurement.bw.seconds);
  v.field("bw_avg_gbps", r.measurement.bw.avg_gbps);
  v.field("bw_peak_gbps", r.measurement.bw.peak_gbps);
  v.field("bw_msg_rate_mpps", r.measurement.bw.msg_rate_mpps);
  v.field("lat_valid", r.measurement.has_latency);
  v.field("lat_samples", r.measurement.lat.samples);
  v.field("lat_min_us", r.measurement.lat.min_us);
  v.field("lat_max_us", r.measurement.lat.max_us);
  v.field("lat_median_us", r.measurement.lat.median_us);
  v.field("lat_mean_us", r.measurement.lat.mean_us);
  v.field("lat_stdev_us", r.measurement.lat.stdev_us);
  v.field("lat_p99_us", r.measurement.lat.p99_us);
  v.field("lat_p999_us", r.measurement.lat.p999_us);
  v.field("ctr_valid", r.measurement.counters.valid);
  v.field("ctr_xmit_bytes", r.measurement.counters.xmit_bytes);
  v.field("ctr_rcv_bytes", r.measurement.counters.rcv_bytes);
  v.field("ctr_xmit_packets", r.measurement.counters.xmit_packets);
  v.field("ctr_rcv_packets", r.measurement.counters.rcv_packets);
  v.field("ctr_errors", r.measurement.counters.errors);
  v.field("integrity_checked", r.integrity.checked);
  v.field("integrity_bytes_checked", r.integrity.bytes_checked);
  v.field("integrity_wrong_bytes", r.integrity.wrong_bytes);
  v.field("integrity_first_wrong_offset", r.integrity.first_wrong_offset);
  v.field("integrity_where", r.integrity.where);
  v.field("status", r.status);
  v.field("reason", r.reason);
  // Migration 7; last, so that a spool line of an earlier build is these two short
  // (replaySpool fills them in).
  v.field("initiator_cpu_binding", r.initiator.cpu_binding);
  v.field("target_cpu_binding", r.target.cpu_binding);
}

// The sweeps columns, in the same way. `id` must stay first and `created_ms` is never updated
// (updateSweepSql relies on both). The report (megabytes for 1024 hosts) lives in sweep_reports
// (migration 6), so a list of sweeps never walks a report's overflow pages.
template <typename R, typename V>
void visitSweepColumns(R& s, V& v) {
  v.field("id", s.id);
  v.field("state", s.state);
  v.field("pattern", s.pattern);
  v.field("name", s.name);
  v.field("spec_json", s.spec_json);
  v.field("plan_json", s.plan_json);
  v.field("created_ms", s.created_ms);
  v.field("started_ms", s.started_ms);
  v.field("finished_ms", s.finished_ms);
  v.field("tests_total", s.tests_total);
  v.field("reason", s.reason);
  v.field("verdict", s.verdict);
  v.field("verdicts_pass", s.verdicts_pass);  // migration 7
  v.field("verdicts_fail", s.verdicts_fail);
  v.field("verdicts_skip", s.verdicts_skip);
}

bool parseEnum(std::string_view s, Op* out) {
  auto v = parseOp(s);
  if (v) *out = *v;
  return v.has_value();
}
bool parseEnum(std::string_view s, Mode* out) {
  auto v = parseMode(s);
  if (v) *out = *v;
  return v.has_value();
}
bool parseEnum(std::string_view s, MemoryKind* out) {
  auto v = parseMemoryKind(s);
  if (v) *out = *v;
  return v.has_value();
}
bool parseEnum(std::string_view s, RegPath* out) {
  auto v = parseRegPath(s);
  if (v) *out = *v;
  return v.has_value();
}
bool parseEnum(std::string_view s, TransportKind* out) {
  auto v = parseTransportKind(s);
  if (v) *out = *v;
  return v.has_value();
}
bool parseEnum(std::string_view s, TestStatus* out) {
  auto v = parseTestStatus(s);
  if (v) *out = *v;
  return v.has_value();
}

struct ColumnNames {
  std::vector<std::string> names;
  template <typename T>
  void field(const char* name, const T& /*unused*/) {
    names.emplace_back(name);
  }
  void derivedGpuDirect(const char* name, const TestResult& /*unused*/) {
    names.emplace_back(name);
  }
};

const std::vector<std::string>& resultColumns() {
  static const std::vector<std::string> kColumns = [] {
    ColumnNames n;
    const TestResult r;
    visitResultColumns(r, n);
    return n.names;
  }();
  return kColumns;
}

const std::vector<std::string>& sweepColumns() {
  static const std::vector<std::string> kColumns = [] {
    ColumnNames n;
    const SweepRecord r;
    visitSweepColumns(r, n);
    return n.names;
  }();
  return kColumns;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

// "id, test_id, run_id, ...": the SELECT list; column 0 is the row id.
const std::string& selectColumns() {
  static const std::string kSelect = "id, " + join(resultColumns(), ", ");
  return kSelect;
}

const std::string& insertResultSql() {
  static const std::string kSql = [] {
    std::vector<std::string> params(resultColumns().size(), "?");
    return "INSERT INTO results (" + join(resultColumns(), ", ") + ") VALUES (" +
           join(params, ", ") + ")";
  }();
  return kSql;
}

// "rowid, id, state, ...": column 0 is the row id (ties in created_ms: the later insertion first).
const std::string& selectSweepColumns() {
  static const std::string kSelect = "rowid, " + join(sweepColumns(), ", ");
  return kSelect;
}

const std::string& insertSweepSql() {
  static const std::string kSql = [] {
    std::vector<std::string> params(sweepColumns().size(), "?");
    return "INSERT INTO sweeps (" + join(sweepColumns(), ", ") + ") VALUES (" + join(params, ", ") +
           ")";
  }();
  return kSql;
}

// "UPDATE sweeps SET state = ?2, ... WHERE id = ?1": parameter k is the k-th visited column, so
// the Binder binds it as it binds the INSERT; created_ms (bound, unused) is left alone.
const std::string& updateSweepSql() {
  static const std::string kSql = [] {
    std::vector<std::string> sets;
    const std::vector<std::string>& cols = sweepColumns();
    for (size_t i = 1; i < cols.size(); ++i) {
      if (cols[i] == "created_ms") continue;
      sets.push_back(cols[i] + " = ?" + std::to_string(i + 1));
    }
    return "UPDATE sweeps SET " + join(sets, ", ") + " WHERE " + cols[0] + " = ?1";
  }();
  return kSql;
}

// Binds fields to parameters 1..N in visiting order; keeps the first failure.
class Binder {
 public:
  explicit Binder(sqlite3_stmt* s) : s_(s) {}
  int rc() const { return rc_; }
  const char* failedColumn() const { return failed_; }

  void field(const char* name, const std::string& v) {
    check(name, sqlite3_bind_text64(s_, next(), v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  }
  void field(const char* name, int64_t v) { check(name, sqlite3_bind_int64(s_, next(), v)); }
  void field(const char* name, uint64_t v) { field(name, static_cast<int64_t>(v)); }
  void field(const char* name, uint32_t v) { field(name, static_cast<int64_t>(v)); }
  void field(const char* name, int v) { field(name, static_cast<int64_t>(v)); }
  void field(const char* name, bool v) { field(name, static_cast<int64_t>(v ? 1 : 0)); }
  void field(const char* name, double v) { check(name, sqlite3_bind_double(s_, next(), v)); }
  template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
  void field(const char* name, E v) {
    check(name, sqlite3_bind_text(s_, next(), toString(v), -1, SQLITE_STATIC));
  }
  void derivedGpuDirect(const char* name, const TestResult& r) { field(name, r.gpudirect()); }

 private:
  int next() { return ++index_; }
  void check(const char* name, int rc) {
    if (rc != SQLITE_OK && rc_ == SQLITE_OK) {
      rc_ = rc;
      failed_ = name;
    }
  }
  sqlite3_stmt* s_;
  int index_ = 0;
  int rc_ = SQLITE_OK;
  const char* failed_ = "";
};

// Reads columns 1..N (column 0 is the row id) in visiting order; keeps the first problem.
class Reader {
 public:
  explicit Reader(sqlite3_stmt* s) : s_(s) {}
  const std::string& problem() const { return problem_; }

  void field(const char* /*name*/, std::string& v) {
    const int i = next();
    const auto* p = static_cast<const char*>(sqlite3_column_blob(s_, i));
    const int n = sqlite3_column_bytes(s_, i);
    v.assign(p ? p : "", p ? static_cast<size_t>(n) : 0);
  }
  void field(const char* /*name*/, int64_t& v) { v = sqlite3_column_int64(s_, next()); }
  void field(const char* /*name*/, uint64_t& v) {
    v = static_cast<uint64_t>(sqlite3_column_int64(s_, next()));
  }
  void field(const char* name, uint32_t& v) {
    const int64_t x = sqlite3_column_int64(s_, next());
    if (x < 0 || x > std::numeric_limits<uint32_t>::max()) bad(name, std::to_string(x));
    v = static_cast<uint32_t>(x);
  }
  void field(const char* name, int& v) {
    const int64_t x = sqlite3_column_int64(s_, next());
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()) {
      bad(name, std::to_string(x));
    }
    v = static_cast<int>(x);
  }
  void field(const char* /*name*/, bool& v) { v = sqlite3_column_int64(s_, next()) != 0; }
  void field(const char* /*name*/, double& v) {
    const int i = next();
    v = sqlite3_column_type(s_, i) == SQLITE_NULL ? std::numeric_limits<double>::quiet_NaN()
                                                  : sqlite3_column_double(s_, i);
  }
  template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
  void field(const char* name, E& v) {
    const int i = next();
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, i));
    const std::string_view s =
        p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(s_, i)))
          : std::string_view();
    if (!parseEnum(s, &v)) bad(name, "'" + std::string(s) + "'");
  }
  void derivedGpuDirect(const char* /*name*/, TestResult& /*unused*/) { next(); }

 private:
  int next() { return ++index_; }
  void bad(const char* name, const std::string& value) {
    if (problem_.empty()) problem_ = std::string("column ") + name + " holds " + value;
  }
  sqlite3_stmt* s_;
  int index_ = 0;
  std::string problem_;
};

// The spool's line format: "gdrmesh-spool-1" then every result column in visiting order, each
// percent-escaped (no tab, newline or '%' left raw), tab-separated, one result per line. A line
// cut short by a crash (no newline, or the wrong number of fields) is not a result.
constexpr const char* kSpoolMagic = "gdrmesh-spool-1";

std::string spoolEscape(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (unsigned char ch : v) {
    if (ch == '%' || ch == '\t' || ch == '\n' || ch == '\r') {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

bool spoolUnescape(const std::string& v, std::string* out) {
  out->clear();
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != '%') {
      *out += v[i];
      continue;
    }
    if (i + 2 >= v.size() || !std::isxdigit(static_cast<unsigned char>(v[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(v[i + 2]))) {
      return false;
    }
    const unsigned int x = static_cast<unsigned int>(std::stoul(v.substr(i + 1, 2), nullptr, 16));
    *out += static_cast<char>(x);
    i += 2;
  }
  return true;
}

class SpoolEncoder {
 public:
  std::string line = kSpoolMagic;
  void field(const char* /*name*/, const std::string& v) { add(spoolEscape(v)); }
  void field(const char* /*name*/, int64_t v) { add(std::to_string(v)); }
  void field(const char* /*name*/, uint64_t v) { add(std::to_string(v)); }
  void field(const char* /*name*/, uint32_t v) { add(std::to_string(v)); }
  void field(const char* /*name*/, int v) { add(std::to_string(v)); }
  void field(const char* /*name*/, bool v) { add(v ? "1" : "0"); }
  void field(const char* /*name*/, double v) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.17g", v);
    add(buf);
  }
  template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
  void field(const char* /*name*/, E v) {
    add(toString(v));
  }
  void derivedGpuDirect(const char* /*name*/, const TestResult& /*unused*/) {}

 private:
  void add(const std::string& f) {
    line += '\t';
    line += f;
  }
};

class SpoolDecoder {
 public:
  explicit SpoolDecoder(std::vector<std::string> fields) : f_(std::move(fields)) {}
  const std::string& problem() const { return problem_; }
  bool complete() const { return problem_.empty() && i_ == f_.size(); }

  void field(const char* name, std::string& v) {
    if (const std::string* t = next(name); t && !spoolUnescape(*t, &v)) bad(name, *t);
  }
  void field(const char* name, int64_t& v) { integer(name, &v); }
  void field(const char* name, uint64_t& v) {
    int64_t x = 0;
    integer(name, &x);
    v = static_cast<uint64_t>(x);
  }
  void field(const char* name, uint32_t& v) {
    int64_t x = 0;
    integer(name, &x);
    v = static_cast<uint32_t>(x);
  }
  void field(const char* name, int& v) {
    int64_t x = 0;
    integer(name, &x);
    v = static_cast<int>(x);
  }
  void field(const char* name, bool& v) {
    int64_t x = 0;
    integer(name, &x);
    v = x != 0;
  }
  void field(const char* name, double& v) {
    const std::string* t = next(name);
    if (!t) return;
    char* end = nullptr;
    v = std::strtod(t->c_str(), &end);
    if (end == t->c_str() || *end != '\0') bad(name, *t);
  }
  template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
  void field(const char* name, E& v) {
    if (const std::string* t = next(name); t && !parseEnum(*t, &v)) bad(name, *t);
  }
  void derivedGpuDirect(const char* /*name*/, TestResult& /*unused*/) {}

 private:
  const std::string* next(const char* name) {
    if (i_ >= f_.size()) {
      bad(name, "(missing)");
      return nullptr;
    }
    return &f_[i_++];
  }
  void integer(const char* name, int64_t* v) {
    const std::string* t = next(name);
    if (!t) return;
    char* end = nullptr;
    errno = 0;
    *v = std::strtoll(t->c_str(), &end, 10);
    if (end == t->c_str() || *end != '\0' || errno != 0) bad(name, *t);
  }
  void bad(const char* name, const std::string& v) {
    if (problem_.empty()) problem_ = std::string("field ") + name + " holds '" + v + "'";
  }
  std::vector<std::string> f_;
  size_t i_ = 0;
  std::string problem_;
};

// Makes a file's directory entry durable (a new or removed spool survives a power cut).
void syncDirectoryOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

int bindText(sqlite3_stmt* s, const char* param, const std::string& v) {
  const int i = sqlite3_bind_parameter_index(s, param);
  return sqlite3_bind_text64(s, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}
int bindInt(sqlite3_stmt* s, const char* param, int64_t v) {
  return sqlite3_bind_int64(s, sqlite3_bind_parameter_index(s, param), v);
}

std::string dbFix(const std::string& path) {
  return "point --db at another file, or move " + path +
         " aside; the coordinator creates a new database where none exists";
}

}  // namespace

const std::vector<SqliteMigration>& sqliteSchemaMigrations() {
  // Append new steps at the end (runs, sweeps, ... come later); never edit a released one.
  static const std::vector<SqliteMigration> kMigrations = {
      {1,
       "results and workers",
       {
           "PRAGMA application_id = 1195658579",  // kApplicationId, "GDMS"
           kCreateResults,
           "CREATE INDEX results_started_ms ON results (started_ms)",
           "CREATE INDEX results_run_id ON results (run_id)",
           "CREATE INDEX results_status ON results (status)",
           "CREATE INDEX results_initiator_worker ON results (initiator_worker)",
           "CREATE INDEX results_target_worker ON results (target_worker)",
           kCreateWorkers,
       }},
      {2,
       "sweeps, schedule runs, results.plan_index, ordered indexes",
       {
           "ALTER TABLE results ADD COLUMN plan_index INTEGER NOT NULL DEFAULT -1",
           // Single-column indexes replaced by (filter, started_ms): rows come out in the order
           // queryResults lists them (the row id is the implicit last key of every index).
           "DROP INDEX results_run_id",
           "DROP INDEX results_status",
           "DROP INDEX results_initiator_worker",
           "DROP INDEX results_target_worker",
           "CREATE INDEX results_run_plan ON results (run_id, plan_index)",
           "CREATE INDEX results_run_started ON results (run_id, started_ms)",
           "CREATE INDEX results_status_started ON results (status, started_ms)",
           "CREATE INDEX results_initiator_started ON results (initiator_worker, started_ms)",
           "CREATE INDEX results_target_started ON results (target_worker, started_ms)",
           kCreateSweeps,
           "CREATE INDEX sweeps_created_ms ON sweeps (created_ms)",
           "CREATE INDEX sweeps_state_created_ms ON sweeps (state, created_ms)",
           kCreateSweepTestStarts,
           kCreateScheduleRuns,
           "CREATE INDEX schedule_runs_schedule_due ON schedule_runs (schedule, due_ms)",
       }},
      {3,
       "per-sweep aggregates (kept by retention), pair and covering run indexes",
       {
           // Pair history (SRC -> DST, newest first) straight from the index.
           // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one statement over two lines
           "CREATE INDEX results_pair_started ON results (initiator_worker, target_worker, "
           "started_ms)",
           // A sweep's counts (done, failed, skipped) from the index alone, without reading
           // the rows; serves everything results_run_plan served.
           "DROP INDEX results_run_plan",
           "CREATE INDEX results_run_plan_status ON results (run_id, plan_index, status)",
           kCreateSweepAggregates,
           "CREATE INDEX sweep_aggregates_pair ON sweep_aggregates (src, dst, started_ms)",
           kCreateSweepTotals,
       }},
      {4,
       "in-flight markers of single pair tests (interrupted by a restart: recorded as ERROR)",
       {
           kCreateTestStarts,
       }},
      {5,
       "gpudirect under the per-side rule",
       {
           // The stored claim follows isGpuDirectTest: every side on GPU memory used dmabuf or
           // peermem. Rows written under the old rule (either side) lose a claim that one
           // staged or host-registered GPU side contradicts; the new rule never adds a claim
           // the old one lacked. (Reads recompute the claim from the sides; this keeps the
           // column right for SQL readers.)
           "UPDATE results SET gpudirect = 0 WHERE gpudirect = 1 AND ("
           "(initiator_memory = 'cuda' AND initiator_reg_path NOT IN ('dmabuf', 'peermem')) OR "
           "(target_memory = 'cuda' AND target_reg_path NOT IN ('dmabuf', 'peermem')))",
       }},
      {6,
       "sweep reports in a table of their own",
       {
           // In the sweeps row, a report (3.3 MB for 13,824 verdicts) sat between the columns
           // a list reads, so listing 50 sweeps walked 50 reports' overflow pages.
           kCreateSweepReports,
           "INSERT INTO sweep_reports (sweep_id, revision, report_json) "
           "SELECT id, 1, report_json FROM sweeps WHERE report_json <> ''",
           "ALTER TABLE sweeps DROP COLUMN report_json",
       }},
      {7,
       "a sweep's verdict counts in its row; in-flight markers name their pair",
       {
           // `gdrmesh sweeps` showed a FAIL sweep with 0 failed: the failing verdicts were only
           // in the report, which a list does not read. Stored reports are counted once here.
           "ALTER TABLE sweeps ADD COLUMN verdicts_pass INTEGER NOT NULL DEFAULT 0",
           "ALTER TABLE sweeps ADD COLUMN verdicts_fail INTEGER NOT NULL DEFAULT 0",
           "ALTER TABLE sweeps ADD COLUMN verdicts_skip INTEGER NOT NULL DEFAULT 0",
           // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one statement over lines
           "UPDATE sweeps SET verdicts_pass = c.pass, verdicts_fail = c.fail, verdicts_skip = "
           "c.skip FROM (SELECT r.sweep_id AS id, "
           "total(json_extract(j.value, '$.verdict') = 'PASS') AS pass, "
           "total(json_extract(j.value, '$.verdict') = 'FAIL') AS fail, "
           "total(json_extract(j.value, '$.verdict') = 'SKIP') AS skip "
           "FROM sweep_reports r, json_each(CASE WHEN json_valid(r.report_json) THEN "
           "r.report_json ELSE '{}' END, '$.verdicts') j GROUP BY r.sweep_id) c "
           "WHERE sweeps.id = c.id",
           // A sweep's in-flight markers name their pair: a restart records the tests even
           // when the sweep cannot be planned again (SweepTestStart).
           "ALTER TABLE sweep_test_starts ADD COLUMN initiator_worker TEXT NOT NULL DEFAULT ''",
           "ALTER TABLE sweep_test_starts ADD COLUMN initiator_nic TEXT NOT NULL DEFAULT ''",
           "ALTER TABLE sweep_test_starts ADD COLUMN target_worker TEXT NOT NULL DEFAULT ''",
           "ALTER TABLE sweep_test_starts ADD COLUMN target_nic TEXT NOT NULL DEFAULT ''",
           "ALTER TABLE sweep_test_starts ADD COLUMN message_size INTEGER NOT NULL DEFAULT 0",
       }},
      {8,
       "where each side's test thread ran (EndpointRecord::cpu_binding)",
       {
           "ALTER TABLE results ADD COLUMN initiator_cpu_binding TEXT NOT NULL DEFAULT ''",
           "ALTER TABLE results ADD COLUMN target_cpu_binding TEXT NOT NULL DEFAULT ''",
       }},
      {9,
       "actions on nodes (drain, resume) that verdicts asked for",
       {
           kCreateNodeActions,
           "CREATE INDEX node_actions_node ON node_actions (node, id)",
           "CREATE INDEX node_actions_recorded_ms ON node_actions (recorded_ms)",
       }},
      {10,
       "a sweep's report as rows: verdicts, suspects, notes (sweep_reports converted)",
       {
           // A 1024-host report was one 133 MB JSON text, written and read whole: 12-17 s
           // after the sweep and 400-500 MiB of memory. Rows page, filter and count in SQL.
           kCreateSweepVerdicts,
           // By sweep and verdict: the failing verdicts' page (most verdicts pass, so the
           // index holds only the failing ones). By pair and by host, within a sweep.
           // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one statement over two lines
           "CREATE INDEX sweep_verdicts_fail ON sweep_verdicts (sweep_id, seq) "
           "WHERE verdict = 'FAIL'",
           "CREATE INDEX sweep_verdicts_src ON sweep_verdicts (sweep_id, src_host, dst_host)",
           "CREATE INDEX sweep_verdicts_dst ON sweep_verdicts (sweep_id, dst_host)",
           kCreateSweepSuspects,
           "CREATE INDEX sweep_suspects_name ON sweep_suspects (name)",
           kCreateSweepNotes,
           kCreateSweepReportSummary,
           kConvertReportVerdicts,
           kConvertReportSuspects,
           kConvertReportNotes,
           // Figures ("") are summed up from the verdict rows when first read.
           // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one statement over two lines
           "INSERT INTO sweep_report_summary (sweep_id, figures_json) "
           "SELECT sweep_id, '' FROM sweep_reports",
           "DROP TABLE sweep_reports",
       }},
      {11,
       "what the hooks last announced: the standing suspects (HookStateStore)",
       {
           "CREATE TABLE hook_suspects (suspect TEXT PRIMARY KEY) WITHOUT ROWID",
       }},
  };
  return kMigrations;
}

int SqliteStore::latestSchemaVersion() {
  return sqliteSchemaMigrations().back().version;
}

SqliteStore::SqliteStore(std::string path, DbPtr db) : path_(std::move(path)) {
  writer_.db = std::move(db);
}

SqliteStore::~SqliteStore() {
  // Closing the last connection checkpoints the WAL, which stores into the mapped WAL index: not
  // while the file system refuses it (SIGBUS). The WAL stays, and the next open reads it.
  if (path_ != ":memory:" && !walIndexWritable().ok()) {
    for (Conn* c : {&writer_, reader_.get()}) {
      if (c != nullptr && c->db) {
        (void)sqlite3_db_config(c->db.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
      }
    }
  }
  if (reader_) {
    std::lock_guard<std::mutex> lock(reader_->mu);
    reader_->stmts.clear();  // finalize before the connection closes
    reader_->db.reset();
  }
  std::lock_guard<std::mutex> lock(writer_.mu);
  writer_.stmts.clear();
  writer_.db.reset();
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& path) {
  return open(path, SqliteStoreOptions{});
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& path,
                                                       const SqliteStoreOptions& options) {
  namespace fs = std::filesystem;
  if (path.empty()) {
    return invalidArgument("database path is empty", "pass --db <file>, e.g. /var/lib/gdrmesh/db");
  }
  const bool in_memory = path == ":memory:";
  if (!in_memory) {
    fs::path dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    const fs::file_status st = fs::status(dir, ec);
    if (!fs::exists(st)) {
      return notFound("directory " + dir.string() + " does not exist (database " + path + ")",
                      "create it (mkdir -p " + dir.string() + ") or pass --db a path in an " +
                          "existing directory");
    }
    if (!fs::is_directory(st)) {
      return failedPrecondition(dir.string() + " is not a directory (database " + path + ")",
                                "pass --db a path inside a directory");
    }
    // Refused writes: EACCES from file modes; EPERM (an immutable file, which stops root too)
    // and EROFS (a read-only mount) from the file system.
    const auto refused = [](int e) { return e == EACCES || e == EPERM || e == EROFS; };
    const std::string read_only_fix =
        " (a read-only mount: remount it read-write; an immutable file: chattr -i)";
    // WAL creates <path>-wal and <path>-shm beside the database: the directory must be writable.
    if (::access(dir.c_str(), W_OK | X_OK) != 0 && refused(errno)) {
      const bool ro = errno != EACCES;
      return Status(Code::kPermissionDenied,
                    (ro ? "directory " + dir.string() + " is read-only"
                        : "no write permission on directory " + dir.string()) +
                        " (database " + path + "; WAL mode creates " + path +
                        "-wal and -shm there)",
                    ro ? "make " + dir.string() + " writable" + read_only_fix +
                             ", or pass --db a path in a writable directory"
                       : "run the coordinator as a user that can write " + dir.string() +
                             " (chown/chmod), or pass --db a path in a writable directory");
    }
    if (fs::exists(fs::path(path), ec) && ::access(path.c_str(), R_OK | W_OK) != 0 &&
        refused(errno)) {
      const bool ro = errno != EACCES;
      return Status(
          Code::kPermissionDenied,
          ro ? "database " + path + " is read-only"
             : "no read/write permission on database " + path,
          ro ? "make " + path + " writable" + read_only_fix + ", or pass --db another file"
             : "chown/chmod " + path + " to the coordinator's user, or pass --db another file");
    }
  }

  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  DbPtr db(raw);
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, std::move(db)));
  store->on_query_row_ = options.on_query_row_for_testing;
  std::lock_guard<std::mutex> lock(store->writer_.mu);
  if (rc != SQLITE_OK) {
    if (!store->writer_.db) {
      return Status(Code::kResourceExhausted, "out of memory opening database " + path);
    }
    return store->error(store->writer_, rc, "open");
  }
  // A WAL index left read-only: refused here, before SQLite maps it.
  GDR_RETURN_IF_ERROR(store->walIndexWritable());
  GDR_RETURN_IF_ERROR(store->configure(options));
  store->spool_reserve_ = options.spool_reserve_bytes;
  store->fillSpoolReserve();
  return store;
}

Status SqliteStore::configure(const SqliteStoreOptions& options) {
  sqlite3_extended_result_codes(writer_.db.get(), 1);
  sqlite3_busy_timeout(writer_.db.get(), options.busy_timeout_ms);
  const std::vector<SqliteMigration>& migrations =
      options.migrations ? *options.migrations : sqliteSchemaMigrations();
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i) + 1) {
      return internalError("schema migration list is not numbered 1..N: entry " +
                           std::to_string(i) + " has version " +
                           std::to_string(migrations[i].version));
    }
  }
  const int latest = migrations.empty() ? 0 : migrations.back().version;

  // Read-only checks first, so a file that is not ours is never modified. The first read of
  // the header is also where "not a database" shows up.
  GDR_ASSIGN_OR_RETURN(const int64_t app_id,
                       queryInt(writer_, "read application_id", "PRAGMA application_id"));
  GDR_ASSIGN_OR_RETURN(const int64_t version,
                       queryInt(writer_, "read user_version", "PRAGMA user_version"));
  GDR_ASSIGN_OR_RETURN(
      const int64_t tables,
      queryInt(writer_, "count tables",
               "SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'"));
  if (app_id != 0 && app_id != kApplicationId) {
    return failedPrecondition("database " + path_ +
                                  " belongs to another application (application_id " +
                                  std::to_string(app_id) + ")",
                              dbFix(path_));
  }
  if (version == 0 && tables > 0) {
    return failedPrecondition("database " + path_ + " is a SQLite file but not a gdrmesh " +
                                  "database (it has tables and no gdrmesh schema version)",
                              dbFix(path_));
  }
  if (version > latest) {
    return failedPrecondition(
        "database " + path_ + " has schema version " + std::to_string(version) +
            ", newer than this gdrmesh build understands (" + std::to_string(latest) + ")",
        "run a gdrmesh coordinator at least as new as the one that wrote " + path_ +
            ", or point --db at another file");
  }

  GDR_ASSIGN_OR_RETURN(const std::string mode,
                       queryText(writer_, "set journal_mode", "PRAGMA journal_mode = WAL"));
  const bool in_memory = path_ == ":memory:";
  if (!in_memory && mode != "wal") {
    return failedPrecondition("could not switch database " + path_ + " to WAL mode (journal " +
                                  "mode stays '" + mode + "')",
                              "put the database on a local filesystem that supports shared " +
                                  std::string("memory (not NFS)"));
  }
  GDR_RETURN_IF_ERROR(execOnce(writer_, "set synchronous", "PRAGMA synchronous = NORMAL"));
  GDR_RETURN_IF_ERROR(execOnce(writer_, "set foreign_keys", "PRAGMA foreign_keys = ON"));
  // 32 MiB of page cache for the writer (SQLite's default is 2 MiB): a sweep's report rows go
  // into two host indexes at a thousand places at once (every host of a round), whose pages
  // otherwise spill and are read again for each batch (store_bench: a 1024-host report's write
  // took a fifth less CPU, half the system time). Pages are allocated as they are used.
  GDR_RETURN_IF_ERROR(execOnce(writer_, "set cache_size", "PRAGMA cache_size = -32768"));
  GDR_RETURN_IF_ERROR(migrate(migrations));
  // A database that opened but cannot be written (SQLite falls back to read-only when the file
  // refuses O_RDWR) would accept tests and keep none of their results: one write now proves it
  // can. PRAGMA takes no bound parameters; the value is our own integer constant.
  if (latest > 0) {
    GDR_RETURN_IF_ERROR(execOnce(writer_, "check that the database can be written",
                                 "PRAGMA user_version = " + std::to_string(latest)));
  }
  return openReader(options);
}

Status SqliteStore::walIndexWritable() const {
  if (path_ == ":memory:") return Status();
  const std::string shm = path_ + "-shm";
  if (::access(shm.c_str(), W_OK) == 0) return Status();
  const int e = errno;
  if (e != EACCES && e != EPERM && e != EROFS) return Status();  // none yet: SQLite creates it
  return Status(Code::kPermissionDenied,
                "cannot write database " + path_ + ": its WAL index " + shm + " refuses writes (" +
                    std::strerror(e) +
                    "); SQLite maps that file and would be killed (SIGBUS) writing to it, so "
                    "nothing is written until it is writable again",
                "give the coordinator's user write access to " + shm + " and " + path_ +
                    " again (an immutable file: chattr -i; a read-only mount: remount it "
                    "read-write); results held meanwhile are stored then, without a restart");
}

Status SqliteStore::openPrivateReader(Conn& c) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX,
                                 "unix-none");
  c.db.reset(raw);
  if (!c.db) return Status(Code::kResourceExhausted, "out of memory opening database " + path_);
  if (rc != SQLITE_OK) return error(c, rc, "open a private read-only connection");
  sqlite3_extended_result_codes(c.db.get(), 1);
  (void)sqlite3_db_config(c.db.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  // Exclusive locking mode before the first read: the WAL index is built in heap memory.
  return execOnce(c, "set locking_mode", "PRAGMA locking_mode = EXCLUSIVE");
}

Status SqliteStore::openReader(const SqliteStoreOptions& options) {
  if (path_ == ":memory:") return Status();  // a second connection would be another database
  auto conn = std::make_unique<Conn>();
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, nullptr);
  conn->db.reset(raw);
  if (!conn->db) return Status(Code::kResourceExhausted, "out of memory opening database " + path_);
  if (rc != SQLITE_OK) return error(*conn, rc, "open read-only connection");
  sqlite3_extended_result_codes(conn->db.get(), 1);
  // A WAL reader waits only while the writer checkpoints or recovers the WAL.
  sqlite3_busy_timeout(conn->db.get(), options.busy_timeout_ms);
  // The first read proves the connection works (and sees the migrated schema).
  std::lock_guard<std::mutex> lock(conn->mu);
  Result<int64_t> version = queryInt(*conn, "read user_version", "PRAGMA user_version");
  if (!version.ok()) return version.status().withContext("read-only connection");
  reader_ = std::move(conn);
  return Status();
}

Status SqliteStore::migrate(const std::vector<SqliteMigration>& migrations) {
  for (const SqliteMigration& m : migrations) {
    GDR_ASSIGN_OR_RETURN(const int64_t current,
                         queryInt(writer_, "read user_version", "PRAGMA user_version"));
    if (current >= m.version) continue;
    Status s = applyMigration(m);
    if (!s.ok()) {
      return s.withContext("schema migration " + std::to_string(m.version) + " (" + m.name +
                           ") of " + path_);
    }
  }
  return Status();
}

Status SqliteStore::applyMigration(const SqliteMigration& m) {
  GDR_RETURN_IF_ERROR(begin());
  // Another process may have migrated between our check and our write lock: look again.
  Result<int64_t> current = queryInt(writer_, "read user_version", "PRAGMA user_version");
  if (!current.ok()) {
    rollbackQuietly();
    return current.status();
  }
  if (*current >= m.version) return commit();
  for (const std::string& sql : m.statements) {
    Status s = execOnce(writer_, "migration " + std::to_string(m.version), sql);
    if (!s.ok()) {
      rollbackQuietly();
      return s;
    }
  }
  // PRAGMA takes no bound parameters; the value is our own integer constant, not input.
  Status s =
      execOnce(writer_, "set user_version", "PRAGMA user_version = " + std::to_string(m.version));
  if (!s.ok()) {
    rollbackQuietly();
    return s;
  }
  return commit();
}

Result<sqlite3_stmt*> SqliteStore::statement(Conn& c, const std::string& name,
                                             const std::string& sql) {
  auto it = c.stmts.find(name);
  if (it != c.stmts.end()) return it->second.get();
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(c.db.get(), sql.c_str(), static_cast<int>(sql.size() + 1),
                                    SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  StmtPtr s(raw);
  if (rc != SQLITE_OK) return error(c, rc, "prepare " + name);
  if (!s) return internalError("statement " + name + " is empty");
  sqlite3_stmt* out = s.get();
  c.stmts.emplace(name, std::move(s));
  return out;
}

Status SqliteStore::execOnce(Conn& c, const std::string& name, const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(c.db.get(), sql.c_str(), static_cast<int>(sql.size() + 1), 0,
                                    &raw, nullptr);
  StmtPtr s(raw);
  if (rc != SQLITE_OK) return error(c, rc, "prepare " + name);
  if (!s) return Status();
  int step;
  while ((step = sqlite3_step(s.get())) == SQLITE_ROW) {
  }
  if (step != SQLITE_DONE) return error(c, step, name);
  return Status();
}

Result<int64_t> SqliteStore::queryInt(Conn& c, const std::string& name, const std::string& sql) {
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, name, sql));
  StmtScope scope(s);
  const int rc = sqlite3_step(s);
  if (rc != SQLITE_ROW) return error(c, rc == SQLITE_DONE ? SQLITE_INTERNAL : rc, name);
  return static_cast<int64_t>(sqlite3_column_int64(s, 0));
}

Result<std::string> SqliteStore::queryText(Conn& c, const std::string& name,
                                           const std::string& sql) {
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, name, sql));
  StmtScope scope(s);
  const int rc = sqlite3_step(s);
  if (rc != SQLITE_ROW) return error(c, rc == SQLITE_DONE ? SQLITE_INTERNAL : rc, name);
  return columnText(s, 0);
}

Status SqliteStore::begin() {
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(writer_, "begin", "BEGIN IMMEDIATE"));
  StmtScope scope(s);
  const int rc = sqlite3_step(s);
  return rc == SQLITE_DONE ? Status() : error(writer_, rc, "begin");
}

Status SqliteStore::commit() {
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(writer_, "commit", "COMMIT"));
  Status st;
  {
    StmtScope scope(s);  // reset before the ROLLBACK below
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) return Status();
    st = error(writer_, rc, "commit");
  }
  rollbackQuietly();
  return st;
}

void SqliteStore::rollbackQuietly() noexcept {
  if (sqlite3_get_autocommit(writer_.db.get())) return;  // already rolled back (e.g. FULL)
  // Preparing the statement allocates; out of memory here must not terminate the process (a
  // transaction left open fails the next BEGIN, with the reason).
  try {
    Result<sqlite3_stmt*> s = statement(writer_, "rollback", "ROLLBACK");
    if (!s.ok()) return;
    StmtScope scope(*s);
    (void)sqlite3_step(*s);
  } catch (...) {  // nothing more to do in a quiet rollback
  }
}

namespace {

// True when the file system refuses writes to the database, its WAL or its directory (a
// read-only mount, an immutable file, file modes). SQLite does not always keep the errno of a
// failed write (sqlite3_system_errno can be 0 after an I/O error), so it is asked directly.
bool writeRefused(const std::string& path) {
  const auto refused = [](const std::string& p, int mode) {
    return ::access(p.c_str(), mode) != 0 && (errno == EACCES || errno == EPERM || errno == EROFS);
  };
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  return refused(path, W_OK) || refused(path + "-wal", W_OK) || refused(dir, W_OK | X_OK);
}

// True when the process has a file-size limit (RLIMIT_FSIZE) and the database or its WAL has
// reached it, within a WAL frame (SQLite reports the failed write as SQLITE_IOERR_WRITE and does
// not always keep its errno, EFBIG).
bool atFileSizeLimit(const std::string& path) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_FSIZE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return false;
  constexpr rlim_t kLargestFrame = 65536 + 24;  // the largest page and its frame header
  for (const std::string& f : {path, path + "-wal"}) {
    struct stat sb {};
    if (::stat(f.c_str(), &sb) == 0 &&
        static_cast<rlim_t>(sb.st_size) + kLargestFrame >= lim.rlim_cur) {
      return true;
    }
  }
  return false;
}

}  // namespace

Status SqliteStore::error(const Conn& c, int rc, const std::string& what) const {
  const int primary = rc & 0xff;
  const std::string msg = sqlite3_errmsg(c.db.get());
  const int sys = sqlite3_system_errno(c.db.get());
  const std::string detail =
      what + ": " + msg + " [" + sqlite3_errstr(rc) + ", code " + std::to_string(rc) + "]";
  if (primary == SQLITE_IOERR && (sys == EPERM || sys == EROFS || sys == EACCES ||
                                  (path_ != ":memory:" && writeRefused(path_)))) {
    // A write refused by the file system: read-only mount, immutable file, no permission.
    return Status(Code::kPermissionDenied,
                  "cannot write database " + path_ + " (" + detail +
                      (sys != 0 ? std::string(": ") + std::strerror(sys) : std::string()) +
                      "; the file system refuses writes)",
                  "give the coordinator's user write access to " + path_ +
                      " and its directory (a read-only mount or an immutable file: mount it "
                      "read-write, chattr -i), or pass --db another file");
  }
  if (primary == SQLITE_IOERR &&
      (sys == EFBIG || (path_ != ":memory:" && atFileSizeLimit(path_)))) {
    // Over the process's file-size limit (RLIMIT_FSIZE): the coordinator ignores SIGXFSZ, so
    // the write fails here instead of killing it.
    return Status(Code::kResourceExhausted,
                  "database " + path_ + " reached the coordinator's file-size limit (" + detail +
                      ": " + std::strerror(EFBIG) + ")",
                  "raise the coordinator's file-size limit (ulimit -f unlimited; LimitFSIZE= in "
                  "its systemd unit), or move the database (--db); the failed write was rolled "
                  "back");
  }
  if (primary == SQLITE_FULL || (primary == SQLITE_IOERR && sys == ENOSPC)) {
    return Status(Code::kResourceExhausted, "database disk is full: " + path_ + " (" + detail + ")",
                  "free space on the filesystem that holds " + path_ +
                      " (df -h), or move the database (--db); the failed write was rolled back");
  }
  switch (primary) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return unavailable("database is locked by another process: " + path_ + " (" + detail + ")",
                         "another coordinator (or a sqlite3 shell) holds " + path_ +
                             "; stop it, or give this coordinator its own --db");
    case SQLITE_NOTADB:
      return failedPrecondition(
          "not a database (or its header is corrupt): " + path_ + " (" + detail + ")",
          dbFix(path_));
    case SQLITE_CORRUPT:
      // The salvage is the .dump route of docs/operations.md ("Backup and restore"): the
      // shell's .recover fails on a gdrmesh database with Debian 12's sqlite3 3.40.1.
      return Status(Code::kDataLoss, "database is corrupt: " + path_ + " (" + detail + ")",
                    "restore " + path_ +
                        " from a backup; without one, stop the coordinator and salvage what "
                        "SQLite can still read into a new file, keeping the schema version: "
                        "`sqlite3 " +
                        path_ + " .dump | sqlite3 " + path_ + ".salvaged && sqlite3 " + path_ +
                        ".salvaged \"PRAGMA user_version = $(sqlite3 " + path_ +
                        " 'PRAGMA user_version')\"`, then move " + path_ +
                        " (and its -wal, -shm) aside and the salvaged file in its place "
                        "(docs/operations.md, \"Backup and restore\"); or " +
                        dbFix(path_));
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return Status(Code::kPermissionDenied, "cannot write database " + path_ + " (" + detail + ")",
                    "give the coordinator's user write access to " + path_ +
                        " and its directory (WAL needs the -wal and -shm files)");
    case SQLITE_CANTOPEN:
      if (sys == EACCES || sys == EPERM) {
        return Status(Code::kPermissionDenied,
                      "no permission to open database " + path_ + " (" + detail + ")",
                      "give the coordinator's user read/write access to " + path_ +
                          " and its directory, or pass --db another file");
      }
      return unavailable(
          "cannot open database " + path_ + " (" + detail + ": " + std::strerror(sys) + ")",
          "check that " + path_ + " and its directory exist and are writable");
    case SQLITE_IOERR:
      return unavailable(
          "I/O error on database " + path_ + " (" + detail + ": " + std::strerror(sys) + ")",
          "check the disk that holds " + path_ + " (dmesg, smartctl)");
    case SQLITE_CONSTRAINT:
      return invalidArgument("database " + path_ + " refused the row (" + detail + ")");
    case SQLITE_NOMEM:
      return Status(Code::kResourceExhausted, "out of memory in SQLite (" + detail + ")");
    default:
      return internalError("sqlite error on " + path_ + " (" + detail + ")");
  }
}

namespace {

// A result the store refuses before touching SQLite.
Status checkInsertable(const TestResult& result) {
  if (result.test_id.empty()) {
    return invalidArgument("result.test_id is empty", "every stored result needs a unique id");
  }
  // 'auto' is a request: a result that passed must say which path ran. A test that ended before
  // any registration (skipped, failed in prepare) keeps the request it was given.
  if (result.status == TestStatus::kPassed &&
      (result.initiator.reg_path == RegPath::kAuto || result.target.reg_path == RegPath::kAuto)) {
    return invalidArgument(
        "result " + result.test_id + ": reg_path 'auto' is a request, not a path that ran",
        "store the registration path the transport actually used");
  }
  if (result.plan_index < -1) {
    return invalidArgument("result " + result.test_id + ": plan_index " +
                               std::to_string(result.plan_index) + " is negative",
                           "use the test's index in its sweep plan, or -1 outside sweeps");
  }
  return Status();
}

std::string rowOf(size_t i, size_t n, const TestResult& r) {
  return "result " + std::to_string(i + 1) + " of " + std::to_string(n) + " (test_id '" +
         r.test_id + "'; none of the " + std::to_string(n) + " was stored)";
}

}  // namespace

Result<int64_t> SqliteStore::insertResult(const TestResult& result) {
  GDR_RETURN_IF_ERROR(checkInsertable(result));
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_ASSIGN_OR_RETURN(std::vector<int64_t> ids, insertLocked(&result, 1));
  return ids.front();
}

Result<std::vector<int64_t>> SqliteStore::insertResults(const std::vector<TestResult>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    Status s = checkInsertable(results[i]);
    if (!s.ok()) {
      return results.size() == 1 ? s : s.withContext(rowOf(i, results.size(), results[i]));
    }
  }
  if (results.empty()) return std::vector<int64_t>();
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  return insertLocked(results.data(), results.size());
}

Result<std::vector<int64_t>> SqliteStore::insertLocked(const TestResult* rows, size_t n) {
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(writer_, "insert_result", insertResultSql()));
  GDR_RETURN_IF_ERROR(begin());
  std::vector<int64_t> ids;
  ids.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const TestResult& result = rows[i];
    Status failure;
    {
      StmtScope scope(s);  // reset before any ROLLBACK below
      Binder binder(s);
      visitResultColumns(result, binder);
      int rc = binder.rc();
      std::string what = "insert_result";
      if (rc != SQLITE_OK) {
        what += " (bind " + std::string(binder.failedColumn()) + ")";
      } else {
        rc = sqlite3_step(s);
      }
      if (rc == SQLITE_CONSTRAINT_UNIQUE) {
        failure = invalidArgument("test_id '" + result.test_id + "' is already stored in " + path_,
                                  "test ids are unique: give each test its own id");
      } else if (rc != SQLITE_DONE) {
        failure = error(writer_, rc, what);
      }
    }
    if (!failure.ok()) {
      rollbackQuietly();
      return n == 1 ? failure : failure.withContext(rowOf(i, n, result));
    }
    ids.push_back(sqlite3_last_insert_rowid(writer_.db.get()));
  }
  GDR_RETURN_IF_ERROR(commit());
  return ids;
}

namespace {

Result<TestResult> readRow(sqlite3_stmt* s, const std::string& path) {
  TestResult r;
  r.id = sqlite3_column_int64(s, 0);
  Reader reader(s);
  visitResultColumns(r, reader);
  if (!reader.problem().empty()) {
    return Status(Code::kDataLoss,
                  "results row " + std::to_string(r.id) + " (test_id '" + r.test_id + "') in " +
                      path + ": " + reader.problem(),
                  "the row was written by another program or a newer gdrmesh; upgrade gdrmesh");
  }
  return r;
}

}  // namespace

namespace {

struct QuerySql {
  std::string name;
  std::string sql;
};

// One fixed statement text per combination of filters present (at most 8, each cached): no
// values in the SQL. Every combination is answered in ORDER BY order straight from an index
// (started_ms, or (filter, started_ms), with the row id as the implicit last key), so SQLite
// stops after `limit` rows instead of sorting every match; SqliteStoreTest checks the plans.
QuerySql queryResultsSql(const ResultQuery& query) {
  QuerySql q{"query_results", ""};
  if (query.plan_order) {
    // From results_run_plan_status (run_id, plan_index, status): the index gives plan order,
    // and only rows sharing a plan index (a test stored twice) are sorted by id.
    // `plan_index >= :ap` bounds the index range, the rest breaks ties.
    q.name += "+plan";
    q.sql = "SELECT " + selectColumns() +
            " FROM results WHERE run_id = :run AND plan_index >= :ap AND (plan_index > :ap OR "
            "id > :aid) ORDER BY plan_index, id LIMIT :limit";
    return q;
  }
  std::string filters = "started_ms >= :since";
  if (query.status) {
    q.name += "+status";
    filters += " AND status = :status";
  }
  if (!query.run_id.empty()) {
    q.name += "+run";
    filters += " AND run_id = :run";
  }
  if (query.before_id > 0) {
    // The next page: `started_ms <= :bs` bounds the index range, the rest breaks ties.
    q.name += "+page";
    filters += " AND started_ms <= :bs AND (started_ms < :bs OR id < :bid)";
  }
  const std::string select = "SELECT " + selectColumns() + " FROM results WHERE ";
  if (query.worker.empty()) {
    q.sql = select + filters;
  } else {
    // "initiator or target" as two ordered halves merged (an OR would collect the row ids of
    // both indexes and sort them). A test from a worker to itself is listed once.
    q.name += "+worker";
    q.sql = select + "initiator_worker = :worker AND " + filters + " UNION ALL " + select +
            "target_worker = :worker AND initiator_worker <> :worker AND " + filters;
  }
  q.sql += " ORDER BY started_ms DESC, id DESC LIMIT :limit";
  return q;
}

}  // namespace

Result<std::vector<TestResult>> SqliteStore::queryResults(const ResultQuery& query) {
  if (query.plan_order && query.run_id.empty()) {
    return invalidArgument("results in plan order: no run_id",
                           "give the sweep's id as run_id (plan order is one sweep's)");
  }
  const QuerySql q = queryResultsSql(query);
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, q.name, q.sql));
  StmtScope scope(s);
  int rc = SQLITE_OK;
  if (query.plan_order) {
    rc = bindText(s, ":run", query.run_id);
    if (rc == SQLITE_OK) rc = bindInt(s, ":ap", query.after_plan_index);
    if (rc == SQLITE_OK) rc = bindInt(s, ":aid", query.after_id);
  } else {
    rc = bindInt(s, ":since", query.since_ms);
    if (rc == SQLITE_OK && !query.worker.empty()) rc = bindText(s, ":worker", query.worker);
    if (rc == SQLITE_OK && query.status) rc = bindText(s, ":status", toString(*query.status));
    if (rc == SQLITE_OK && !query.run_id.empty()) rc = bindText(s, ":run", query.run_id);
    if (rc == SQLITE_OK && query.before_id > 0) rc = bindInt(s, ":bs", query.before_started_ms);
    if (rc == SQLITE_OK && query.before_id > 0) rc = bindInt(s, ":bid", query.before_id);
  }
  // limit 0 means no limit (LIMIT -1 in SQLite).
  if (rc == SQLITE_OK) rc = bindInt(s, ":limit", query.limit == 0 ? -1 : int64_t{query.limit});
  if (rc != SQLITE_OK) return error(c, rc, q.name + " (bind)");
  std::vector<TestResult> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GDR_ASSIGN_OR_RETURN(TestResult r, readRow(s, path_));
    out.push_back(std::move(r));
    if (on_query_row_) on_query_row_();
  }
  if (rc != SQLITE_DONE) return error(c, rc, q.name);
  return out;
}

Result<std::vector<std::string>> SqliteStore::explainQueryResultsForTesting(
    const ResultQuery& query) {
  const QuerySql q = queryResultsSql(query);
  return explain(q.name, q.sql);
}

Result<std::vector<std::string>> SqliteStore::explain(const std::string& name,
                                                      const std::string& sql) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  // Not cached: a test helper. EXPLAIN QUERY PLAN needs no bound values.
  const std::string text = "EXPLAIN QUERY PLAN " + sql;
  sqlite3_stmt* raw = nullptr;
  const int prc = sqlite3_prepare_v2(c.db.get(), text.c_str(), -1, &raw, nullptr);
  StmtPtr s(raw);
  if (prc != SQLITE_OK) return error(c, prc, "prepare explain " + name);
  std::vector<std::string> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) out.push_back(columnText(s.get(), 3));
  if (rc != SQLITE_DONE) return error(c, rc, "explain " + name);
  return out;
}

namespace {

// countResults: the filters of queryResultsSql, counted. The worker filter counts its two
// halves (initiator; target and not initiator) from their (worker, started_ms) indexes.
QuerySql countResultsSql(const ResultQuery& query) {
  QuerySql q{"count_results", ""};
  std::string filters = "started_ms >= :since";
  if (query.status) {
    q.name += "+status";
    filters += " AND status = :status";
  }
  if (!query.run_id.empty()) {
    q.name += "+run";
    filters += " AND run_id = :run";
  }
  // Counted up to kResultCountCap + 1 (then "more than"), never the whole table.
  const std::string cap = " LIMIT " + std::to_string(kResultCountCap + 1) + ")";
  if (query.worker.empty()) {
    q.sql = "SELECT count(*) FROM (SELECT 1 FROM results WHERE " + filters + cap;
  } else {
    q.name += "+worker";
    q.sql =
        "SELECT (SELECT count(*) FROM (SELECT 1 FROM results WHERE initiator_worker = :worker "
        "AND " +
        filters + cap +
        ") + (SELECT count(*) FROM (SELECT 1 FROM results WHERE target_worker "
        "= :worker AND initiator_worker <> :worker AND " +
        filters + cap + ")";
  }
  return q;
}

// queryHistory: one fixed text per combination of optional filters (size, op, mode, one
// direction). Each direction is a range of results_pair_started (initiator_worker,
// target_worker, started_ms) read newest first, and the two halves are merged in ORDER BY
// order, so SQLite stops after `limit` rows without sorting. The reverse half is empty for a
// loopback pair (src = dst), which the forward half already lists.
QuerySql queryHistorySql(const HistoryQuery& query) {
  QuerySql q{"query_history", ""};
  std::string filters = "started_ms >= :since AND started_ms < :until";
  if (query.message_size != 0) {
    q.name += "+size";
    filters += " AND message_size = :size";
  }
  if (query.op) {
    q.name += "+op";
    filters += " AND op = :op";
  }
  if (query.mode) {
    q.name += "+mode";
    filters += " AND mode = :mode";
  }
  if (!query.run_id.empty()) {
    q.name += "+run";
    filters += " AND run_id = :run";
  }
  const std::string select = "SELECT " + selectColumns() + " FROM results WHERE ";
  q.sql = select + "initiator_worker = :src AND target_worker = :dst AND " + filters;
  if (query.both_directions) {
    q.sql += " UNION ALL " + select +
             "initiator_worker = :dst AND target_worker = :src AND :src <> :dst AND " + filters;
  } else {
    q.name += "+one";
  }
  q.sql += " ORDER BY started_ms DESC, id DESC LIMIT :limit";
  return q;
}

}  // namespace

Result<uint64_t> SqliteStore::countResults(const ResultQuery& query) {
  const QuerySql q = countResultsSql(query);
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, q.name, q.sql));
  StmtScope scope(s);
  int rc = bindInt(s, ":since", query.since_ms);
  if (rc == SQLITE_OK && !query.worker.empty()) rc = bindText(s, ":worker", query.worker);
  if (rc == SQLITE_OK && query.status) rc = bindText(s, ":status", toString(*query.status));
  if (rc == SQLITE_OK && !query.run_id.empty()) rc = bindText(s, ":run", query.run_id);
  if (rc != SQLITE_OK) return error(c, rc, q.name + " (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_ROW) return error(c, rc == SQLITE_DONE ? SQLITE_INTERNAL : rc, q.name);
  const int64_t n = sqlite3_column_int64(s, 0);
  return static_cast<uint64_t>(n < 0 ? 0 : n);
}

Result<std::vector<std::string>> SqliteStore::explainCountResultsForTesting(
    const ResultQuery& query) {
  const QuerySql q = countResultsSql(query);
  return explain(q.name, q.sql);
}

Result<std::vector<TestResult>> SqliteStore::queryHistory(const HistoryQuery& query) {
  if (query.src.empty() || query.dst.empty()) {
    return invalidArgument(
        std::string("history: ") + (query.src.empty() ? "src" : "dst") + " worker is empty",
        "name both workers of the pair (SRC and DST)");
  }
  const QuerySql q = queryHistorySql(query);
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, q.name, q.sql));
  StmtScope scope(s);
  int rc = bindText(s, ":src", query.src);
  if (rc == SQLITE_OK) rc = bindText(s, ":dst", query.dst);
  if (rc == SQLITE_OK) rc = bindInt(s, ":since", query.since_ms);
  if (rc == SQLITE_OK) rc = bindInt(s, ":until", query.until_ms);
  if (rc == SQLITE_OK && query.message_size != 0) {
    rc = bindInt(s, ":size", static_cast<int64_t>(query.message_size));
  }
  if (rc == SQLITE_OK && query.op) rc = bindText(s, ":op", toString(*query.op));
  if (rc == SQLITE_OK && query.mode) rc = bindText(s, ":mode", toString(*query.mode));
  if (rc == SQLITE_OK && !query.run_id.empty()) rc = bindText(s, ":run", query.run_id);
  if (rc == SQLITE_OK) rc = bindInt(s, ":limit", query.limit == 0 ? -1 : int64_t{query.limit});
  if (rc != SQLITE_OK) return error(c, rc, q.name + " (bind)");
  std::vector<TestResult> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GDR_ASSIGN_OR_RETURN(TestResult r, readRow(s, path_));
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return error(c, rc, q.name);
  return out;
}

Result<std::vector<std::string>> SqliteStore::explainQueryHistoryForTesting(
    const HistoryQuery& query) {
  const QuerySql q = queryHistorySql(query);
  return explain(q.name, q.sql);
}

Result<std::optional<TestResult>> SqliteStore::getResult(const std::string& test_id) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "get_result", "SELECT " + selectColumns() + " FROM results WHERE test_id = ?1"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, test_id.data(), test_id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) return error(c, rc, "get_result (bind)");
  rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) return std::optional<TestResult>();
  if (rc != SQLITE_ROW) return error(c, rc, "get_result");
  GDR_ASSIGN_OR_RETURN(TestResult r, readRow(s, path_));
  return std::optional<TestResult>(std::move(r));
}

Status SqliteStore::upsertWorker(const WorkerRecord& worker) {
  if (worker.name.empty()) {
    return invalidArgument("worker.name is empty", "register workers under a non-empty name");
  }
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  // hostname and inventory: the latest registration wins. first_seen keeps the earliest time,
  // last_seen the latest.
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "upsert_worker",
                "INSERT INTO workers (name, hostname, inventory_json, first_seen_ms, "
                "last_seen_ms) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name) DO UPDATE SET "
                "hostname = excluded.hostname, inventory_json = excluded.inventory_json, "
                "first_seen_ms = min(first_seen_ms, excluded.first_seen_ms), "
                "last_seen_ms = max(last_seen_ms, excluded.last_seen_ms)"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, worker.name.data(), worker.name.size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 2, worker.hostname.data(), worker.hostname.size(), SQLITE_TRANSIENT,
                             SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 3, worker.inventory_json.data(), worker.inventory_json.size(),
                             SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 4, worker.first_seen_ms);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 5, worker.last_seen_ms);
  if (rc != SQLITE_OK) return error(writer_, rc, "upsert_worker (bind)");
  // A single statement is its own transaction: it is applied whole or not at all.
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "upsert_worker");
  return Status();
}

Result<std::vector<WorkerRecord>> SqliteStore::listWorkers() {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(c, "list_workers",
                                 "SELECT name, hostname, inventory_json, first_seen_ms, "
                                 "last_seen_ms FROM workers ORDER BY name"));
  StmtScope scope(s);
  std::vector<WorkerRecord> out;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    WorkerRecord w;
    w.name = columnText(s, 0);
    w.hostname = columnText(s, 1);
    w.inventory_json = columnText(s, 2);
    w.first_seen_ms = sqlite3_column_int64(s, 3);
    w.last_seen_ms = sqlite3_column_int64(s, 4);
    out.push_back(std::move(w));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "list_workers");
  return out;
}

Result<bool> SqliteStore::removeWorker(const std::string& name) {
  if (name.empty()) {
    return invalidArgument("worker name is empty", "name the worker to remove");
  }
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(writer_, "remove_worker", "DELETE FROM workers WHERE name = ?1"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, name.data(), name.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) return error(writer_, rc, "remove_worker (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "remove_worker");
  return sqlite3_changes(writer_.db.get()) > 0;
}

// ---------------------------------------------------------------------------------------------
// Sweeps.

namespace {

Status checkSweep(const SweepRecord& sweep) {
  if (sweep.id.empty()) {
    return invalidArgument("sweep.id is empty", "give every sweep an id (e.g. s-<time>-<hex>)");
  }
  return Status();
}

Result<SweepRecord> readSweepRow(sqlite3_stmt* s, const std::string& path) {
  SweepRecord r;
  Reader reader(s);
  visitSweepColumns(r, reader);
  if (!reader.problem().empty()) {
    return Status(Code::kDataLoss, "sweeps row '" + r.id + "' in " + path + ": " + reader.problem(),
                  "the row was written by another program or a newer gdrmesh; upgrade gdrmesh");
  }
  return r;
}

}  // namespace

Status SqliteStore::createSweep(const SweepRecord& sweep) {
  return writeSweep(sweep, true);
}

Status SqliteStore::updateSweep(const SweepRecord& sweep) {
  return writeSweep(sweep, false);
}

// The sweeps row (INSERT or UPDATE) and its report row, in one transaction.
Status SqliteStore::writeSweep(const SweepRecord& sweep, bool create) {
  GDR_RETURN_IF_ERROR(checkSweep(sweep));
  const std::string name = create ? "insert_sweep" : "update_sweep";
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_RETURN_IF_ERROR(begin());
  Status st = [&]() -> Status {
    GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                         statement(writer_, name, create ? insertSweepSql() : updateSweepSql()));
    StmtScope scope(s);
    Binder binder(s);
    visitSweepColumns(sweep, binder);
    if (binder.rc() != SQLITE_OK) {
      return error(writer_, binder.rc(),
                   name + " (bind " + std::string(binder.failedColumn()) + ")");
    }
    const int rc = sqlite3_step(s);
    if (create && (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)) {
      return invalidArgument("sweep '" + sweep.id + "' is already stored in " + path_,
                             "sweep ids are unique: give each sweep its own id, or updateSweep");
    }
    if (rc != SQLITE_DONE) return error(writer_, rc, name);
    if (!create && sqlite3_changes(writer_.db.get()) == 0) {
      return notFound("sweep '" + sweep.id + "' is not stored in " + path_,
                      "createSweep it first (ids are matched exactly)");
    }
    return Status();
  }();
  if (!st.ok()) {
    rollbackQuietly();
    return st;
  }
  return commit();
}

Result<std::optional<SweepRecord>> SqliteStore::getSweep(const std::string& id) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "get_sweep", "SELECT " + selectSweepColumns() + " FROM sweeps WHERE id = ?1"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, id.data(), id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) return error(c, rc, "get_sweep (bind)");
  rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) return std::optional<SweepRecord>();
  if (rc != SQLITE_ROW) return error(c, rc, "get_sweep");
  GDR_ASSIGN_OR_RETURN(SweepRecord r, readSweepRow(s, path_));
  return std::optional<SweepRecord>(std::move(r));
}

Result<std::vector<SweepRecord>> SqliteStore::listSweeps(uint32_t limit, const std::string& state) {
  // Newest first straight from sweeps(created_ms) or sweeps(state, created_ms); equal times:
  // the later insertion first.
  const std::string name = state.empty() ? "list_sweeps" : "list_sweeps+state";
  const std::string sql = "SELECT " + selectSweepColumns() + " FROM sweeps" +
                          (state.empty() ? "" : " WHERE state = :state") +
                          " ORDER BY created_ms DESC, rowid DESC LIMIT :limit";
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, name, sql));
  StmtScope scope(s);
  int rc = state.empty() ? SQLITE_OK : bindText(s, ":state", state);
  if (rc == SQLITE_OK) rc = bindInt(s, ":limit", limit == 0 ? -1 : int64_t{limit});
  if (rc != SQLITE_OK) return error(c, rc, name + " (bind)");
  std::vector<SweepRecord> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GDR_ASSIGN_OR_RETURN(SweepRecord r, readSweepRow(s, path_));
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return error(c, rc, name);
  return out;
}

Status SqliteStore::markSweepTestStarted(const std::string& sweep_id, const SweepTestStart& start) {
  if (sweep_id.empty()) {
    return invalidArgument("sweep id is empty", "mark tests of a stored sweep (createSweep)");
  }
  if (start.plan_index < 0) {
    return invalidArgument(
        "sweep " + sweep_id + ": plan_index " + std::to_string(start.plan_index) + " is negative",
        "pass the test's index in the sweep plan (0, 1, ...)");
  }
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  // A plan index started again (a re-run after a restart) replaces the earlier marker.
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "mark_sweep_test_started",
                "INSERT INTO sweep_test_starts (sweep_id, plan_index, test_id, started_ms, "
                "initiator_worker, initiator_nic, target_worker, target_nic, message_size) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (sweep_id, plan_index) "
                "DO UPDATE SET test_id = excluded.test_id, started_ms = excluded.started_ms, "
                "initiator_worker = excluded.initiator_worker, initiator_nic = "
                "excluded.initiator_nic, target_worker = excluded.target_worker, target_nic = "
                "excluded.target_nic, message_size = excluded.message_size"));
  StmtScope scope(s);
  int rc =
      sqlite3_bind_text64(s, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, start.plan_index);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 3, start.test_id.data(), start.test_id.size(), SQLITE_TRANSIENT,
                             SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 4, start.started_ms);
  int col = 5;
  for (const std::string* text :
       {&start.initiator_worker, &start.initiator_nic, &start.target_worker, &start.target_nic}) {
    if (rc == SQLITE_OK) {
      rc = sqlite3_bind_text64(s, col, text->data(), text->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    }
    ++col;
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 9, static_cast<int64_t>(start.message_size));
  if (rc != SQLITE_OK) return error(writer_, rc, "mark_sweep_test_started (bind)");
  rc = sqlite3_step(s);
  if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) {
    return notFound("sweep '" + sweep_id + "' is not stored in " + path_,
                    "createSweep before marking its tests started");
  }
  if (rc != SQLITE_DONE) return error(writer_, rc, "mark_sweep_test_started");
  return Status();
}

Result<std::vector<SweepTestStart>> SqliteStore::unfinishedSweepTests(const std::string& sweep_id) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  // Walks sweep_test_starts by its primary key and probes results(run_id, plan_index).
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "unfinished_sweep_tests",
                "SELECT st.plan_index, st.test_id, st.started_ms, st.initiator_worker, "
                "st.initiator_nic, st.target_worker, st.target_nic, st.message_size FROM "
                "sweep_test_starts st "
                "WHERE st.sweep_id = ?1 AND NOT EXISTS (SELECT 1 FROM results r WHERE "
                "r.run_id = st.sweep_id AND r.plan_index = st.plan_index) "
                "ORDER BY st.plan_index"));
  StmtScope scope(s);
  int rc =
      sqlite3_bind_text64(s, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) return error(c, rc, "unfinished_sweep_tests (bind)");
  std::vector<SweepTestStart> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    SweepTestStart t;
    const int64_t index = sqlite3_column_int64(s, 0);
    if (index < 0 || index > std::numeric_limits<int>::max()) {
      return Status(Code::kDataLoss,
                    "sweep_test_starts row of sweep '" + sweep_id + "' in " + path_ +
                        ": plan_index " + std::to_string(index) + " is out of range",
                    "the row was written by another program; delete it");
    }
    t.plan_index = static_cast<int>(index);
    t.test_id = columnText(s, 1);
    t.started_ms = sqlite3_column_int64(s, 2);
    t.initiator_worker = columnText(s, 3);
    t.initiator_nic = columnText(s, 4);
    t.target_worker = columnText(s, 5);
    t.target_nic = columnText(s, 6);
    t.message_size = static_cast<uint64_t>(sqlite3_column_int64(s, 7));
    out.push_back(std::move(t));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "unfinished_sweep_tests");
  return out;
}

Status SqliteStore::markTestStarted(const TestResult& started) {
  const TestResult& t = started;
  if (t.test_id.empty()) {
    return invalidArgument("test_id is empty", "mark a test with its id (newTestId)");
  }
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "mark_test_started",
                "INSERT OR REPLACE INTO test_starts (test_id, run_id, started_ms, op, mode, "
                "transport, message_size, iterations, num_qps, initiator_worker, initiator_host, "
                "target_worker, target_host) VALUES (:test_id, :run_id, :started_ms, :op, :mode, "
                ":transport, :message_size, :iterations, :num_qps, :iw, :ih, :tw, :th)"));
  StmtScope scope(s);
  int rc = bindText(s, ":test_id", t.test_id);
  if (rc == SQLITE_OK) rc = bindText(s, ":run_id", t.run_id);
  if (rc == SQLITE_OK) rc = bindInt(s, ":started_ms", t.started_ms);
  if (rc == SQLITE_OK) rc = bindText(s, ":op", toString(t.op));
  if (rc == SQLITE_OK) rc = bindText(s, ":mode", toString(t.mode));
  if (rc == SQLITE_OK) rc = bindText(s, ":transport", toString(t.transport));
  if (rc == SQLITE_OK) rc = bindInt(s, ":message_size", static_cast<int64_t>(t.message_size));
  if (rc == SQLITE_OK) rc = bindInt(s, ":iterations", static_cast<int64_t>(t.iterations));
  if (rc == SQLITE_OK) rc = bindInt(s, ":num_qps", t.num_qps);
  if (rc == SQLITE_OK) rc = bindText(s, ":iw", t.initiator.worker);
  if (rc == SQLITE_OK) rc = bindText(s, ":ih", t.initiator.host);
  if (rc == SQLITE_OK) rc = bindText(s, ":tw", t.target.worker);
  if (rc == SQLITE_OK) rc = bindText(s, ":th", t.target.host);
  if (rc != SQLITE_OK) return error(writer_, rc, "mark_test_started (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "mark_test_started");
  return Status();
}

Status SqliteStore::clearTestStarted(const std::string& test_id) {
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(writer_, "clear_test_started",
                                                   "DELETE FROM test_starts WHERE test_id = ?1"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, test_id.data(), test_id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) return error(writer_, rc, "clear_test_started (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "clear_test_started");
  return Status();
}

Result<std::vector<TestResult>> SqliteStore::unfinishedTests() {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "unfinished_tests",
                "SELECT test_id, run_id, started_ms, op, mode, transport, message_size, "
                "iterations, num_qps, initiator_worker, initiator_host, target_worker, "
                "target_host FROM test_starts st WHERE NOT EXISTS (SELECT 1 FROM results r "
                "WHERE r.test_id = st.test_id) ORDER BY started_ms, test_id"));
  StmtScope scope(s);
  std::vector<TestResult> out;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    TestResult t;
    t.test_id = columnText(s, 0);
    t.run_id = columnText(s, 1);
    t.started_ms = sqlite3_column_int64(s, 2);
    const bool ok = parseEnum(columnText(s, 3), &t.op) && parseEnum(columnText(s, 4), &t.mode) &&
                    parseEnum(columnText(s, 5), &t.transport);
    if (!ok) {
      return Status(
          Code::kDataLoss,
          "test_starts row '" + t.test_id + "' in " + path_ + ": unknown op, mode or transport",
          "the row was written by another program or a newer gdrmesh; delete it");
    }
    t.message_size = static_cast<uint64_t>(sqlite3_column_int64(s, 6));
    t.iterations = static_cast<uint64_t>(sqlite3_column_int64(s, 7));
    t.num_qps = static_cast<uint32_t>(sqlite3_column_int64(s, 8));
    t.initiator.worker = columnText(s, 9);
    t.initiator.host = columnText(s, 10);
    t.target.worker = columnText(s, 11);
    t.target.host = columnText(s, 12);
    out.push_back(std::move(t));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "unfinished_tests");
  return out;
}

std::string SqliteStore::spoolPath() const {
  return path_ == ":memory:" ? std::string() : path_ + ".spool";
}

std::string SqliteStore::spoolReservePath() const {
  return path_ == ":memory:" ? std::string() : path_ + ".spool-reserve";
}

void SqliteStore::fillSpoolReserve() {
  const std::string path = spoolReservePath();
  if (path.empty() || spool_reserve_ == 0) return;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  // Allocated blocks, not a sparse file: giving them back is what frees space on a full disk.
  (void)::posix_fallocate(fd, 0, static_cast<off_t>(spool_reserve_));
  ::close(fd);
}

bool SqliteStore::releaseSpoolReserve() {
  const std::string path = spoolReservePath();
  struct stat sb {};
  if (path.empty() || ::stat(path.c_str(), &sb) != 0 || sb.st_size <= 0) return false;
  // One block at a time: what one spool record needs, and less than the database needs for a
  // transaction (a WAL frame is a page plus its header, an insert writes several), so space
  // given back here goes to the spool, not to a retried insert.
  const off_t step = std::max<off_t>(4096, sb.st_blksize);
  return ::truncate(path.c_str(), sb.st_size > step ? sb.st_size - step : 0) == 0;
}

int SqliteStore::appendToSpool(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : ENOSPC;
      // Leave no partial record behind: cut the file back to where this record began.
      struct stat sb {};
      if (::fstat(fd, &sb) == 0) {
        (void)::ftruncate(fd, sb.st_size - static_cast<off_t>(line.size() - left));
      }
      ::close(fd);
      return e;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int e = errno;
    struct stat sb {};
    if (::fstat(fd, &sb) == 0) (void)::ftruncate(fd, sb.st_size - static_cast<off_t>(line.size()));
    ::close(fd);
    return e;
  }
  ::close(fd);
  return 0;
}

Status SqliteStore::spoolResult(const TestResult& result) {
  GDR_RETURN_IF_ERROR(checkInsertable(result));
  const std::string path = spoolPath();
  if (path.empty()) {
    return failedPrecondition("an in-memory database has no spool file",
                              "use a database file (--db PATH)");
  }
  SpoolEncoder enc;
  visitResultColumns(result, enc);
  enc.line += '\n';
  std::lock_guard<std::mutex> lock(spool_mu_);
  const bool existed = ::access(path.c_str(), F_OK) == 0;
  int e = appendToSpool(path, enc.line);
  // A full disk: the space held back for this moment goes, a block at a time.
  while ((e == ENOSPC || e == EDQUOT) && releaseSpoolReserve()) e = appendToSpool(path, enc.line);
  if (e != 0) {
    return Status(
        e == ENOSPC || e == EDQUOT || e == EFBIG ? Code::kResourceExhausted : Code::kUnavailable,
        "cannot append to spool file " + path + " (" + std::strerror(e) + "): result " +
            result.test_id + " is held in memory only, not durable",
        "free space on (or make writable) the disk that holds " + path_ +
            "; results held in memory are lost if the coordinator is killed");
  }
  if (!existed) syncDirectoryOf(path);
  return Status();
}

Result<SpoolReplay> SqliteStore::replaySpool() {
  SpoolReplay out;
  const std::string path = spoolPath();
  if (path.empty()) return out;
  std::lock_guard<std::mutex> lock(spool_mu_);
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    if (errno == ENOENT || ::access(path.c_str(), F_OK) != 0) return out;
    return unavailable("cannot read spool file " + path + " (" + std::strerror(errno) + ")",
                       "make it readable by the coordinator; it holds results not yet stored");
  }
  std::stringstream buffer;
  buffer << f.rdbuf();
  const std::string data = buffer.str();
  size_t pos = 0;
  while (pos < data.size()) {
    const size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) {
      ++out.torn;  // the last record was cut short by a crash mid-append: never acknowledged
      break;
    }
    std::string line = data.substr(pos, nl - pos);
    pos = nl + 1;
    std::vector<std::string> fields;
    size_t start = 0;
    for (;;) {
      const size_t tab = line.find('\t', start);
      fields.push_back(line.substr(start, tab == std::string::npos ? tab : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (fields.empty() || fields.front() != kSpoolMagic) {
      ++out.torn;
      continue;
    }
    fields.erase(fields.begin());
    // Spooled by a build before migration 7: without the last two fields (empty bindings).
    const size_t spooled = resultColumns().size() - 1;  // gpudirect is derived, not spooled
    if (fields.size() + 2 == spooled) fields.resize(spooled);
    TestResult r;
    SpoolDecoder dec(std::move(fields));
    visitResultColumns(r, dec);
    if (!dec.complete()) {
      ++out.torn;
      continue;
    }
    // Stored already (by a retry before the crash, or an earlier replay): not again.
    GDR_ASSIGN_OR_RETURN(std::optional<TestResult> have, getResult(r.test_id));
    if (have) {
      ++out.already_stored;
      continue;
    }
    Result<int64_t> id = insertResult(r);
    if (!id.ok()) {
      return id.status().withContext("replaying spool file " + path + " (kept; " +
                                     std::to_string(out.replayed) + " results replayed so far)");
    }
    ++out.replayed;
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return unavailable(
        "cannot remove spool file " + path + " after replaying it (" + std::strerror(errno) + ")",
        "remove it by hand; its results are stored");
  }
  syncDirectoryOf(path);
  fillSpoolReserve();  // the disk had room for every result: hold space back again
  return out;
}

Status SqliteStore::recordScheduleRun(const ScheduleRun& run) {
  if (run.schedule.empty()) {
    return invalidArgument("schedule run has no schedule name", "record runs of a named schedule");
  }
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "record_schedule_run",
                "INSERT INTO schedule_runs (schedule, due_ms, state, sweep_id, recorded_ms, "
                "detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, run.schedule.data(), run.schedule.size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, run.due_ms);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 3, run.state.data(), run.state.size(), SQLITE_TRANSIENT,
                             SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 4, run.sweep_id.data(), run.sweep_id.size(), SQLITE_TRANSIENT,
                             SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 5, run.recorded_ms);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 6, run.detail.data(), run.detail.size(), SQLITE_TRANSIENT,
                             SQLITE_UTF8);
  }
  if (rc != SQLITE_OK) return error(writer_, rc, "record_schedule_run (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "record_schedule_run");
  return Status();
}

Result<std::vector<ScheduleRun>> SqliteStore::scheduleRuns(const std::string& schedule,
                                                           uint32_t limit) {
  if (schedule.empty()) {
    return invalidArgument("scheduleRuns needs a schedule name", "pass the schedule's name");
  }
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  // Newest first straight from schedule_runs(schedule, due_ms); equal due times: the later
  // record first.
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "schedule_runs",
                "SELECT schedule, due_ms, state, sweep_id, recorded_ms, detail FROM schedule_runs "
                "WHERE schedule = ?1 ORDER BY due_ms DESC, id DESC LIMIT ?2"));
  StmtScope scope(s);
  int rc =
      sqlite3_bind_text64(s, 1, schedule.data(), schedule.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, limit == 0 ? -1 : int64_t{limit});
  if (rc != SQLITE_OK) return error(c, rc, "schedule_runs (bind)");
  std::vector<ScheduleRun> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    ScheduleRun r;
    r.schedule = columnText(s, 0);
    r.due_ms = sqlite3_column_int64(s, 1);
    r.state = columnText(s, 2);
    r.sweep_id = columnText(s, 3);
    r.recorded_ms = sqlite3_column_int64(s, 4);
    r.detail = columnText(s, 5);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "schedule_runs");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Actions on nodes.

Result<int64_t> SqliteStore::recordAction(const ActionRecord& a) {
  if (a.node.empty() || a.action.empty() || a.outcome.empty()) {
    return invalidArgument("action record has no node, action or outcome",
                           "record an action with its node, action and outcome");
  }
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "record_action",
                "INSERT INTO node_actions (recorded_ms, sweep_id, node, action, outcome, "
                "actuator, reason, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
  StmtScope scope(s);
  int rc = sqlite3_bind_int64(s, 1, a.recorded_ms);
  int index = 2;
  for (const std::string* v :
       {&a.sweep_id, &a.node, &a.action, &a.outcome, &a.actuator, &a.reason, &a.detail}) {
    if (rc == SQLITE_OK) {
      rc = sqlite3_bind_text64(s, index, v->data(), v->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    }
    ++index;
  }
  if (rc != SQLITE_OK) return error(writer_, rc, "record_action (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "record_action");
  return sqlite3_last_insert_rowid(writer_.db.get());
}

Result<std::vector<ActionRecord>> SqliteStore::listActions(const ActionQuery& q) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "list_actions",
                "SELECT id, recorded_ms, sweep_id, node, action, outcome, actuator, reason, "
                "detail FROM node_actions WHERE (?1 = '' OR node = ?1) AND (?2 = '' OR "
                "sweep_id = ?2) AND recorded_ms >= ?3 ORDER BY id DESC LIMIT ?4"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, q.node.data(), q.node.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 2, q.sweep_id.data(), q.sweep_id.size(), SQLITE_TRANSIENT,
                             SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 3, q.since_ms);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 4, q.limit == 0 ? -1 : int64_t{q.limit});
  if (rc != SQLITE_OK) return error(c, rc, "list_actions (bind)");
  std::vector<ActionRecord> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    ActionRecord r;
    r.id = sqlite3_column_int64(s, 0);
    r.recorded_ms = sqlite3_column_int64(s, 1);
    r.sweep_id = columnText(s, 2);
    r.node = columnText(s, 3);
    r.action = columnText(s, 4);
    r.outcome = columnText(s, 5);
    r.actuator = columnText(s, 6);
    r.reason = columnText(s, 7);
    r.detail = columnText(s, 8);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "list_actions");
  return out;
}

Result<std::set<std::string>> SqliteStore::hookSuspects() {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(c, "hook_suspects", "SELECT suspect FROM hook_suspects"));
  StmtScope scope(s);
  std::set<std::string> out;
  int rc = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) out.insert(columnText(s, 0));
  if (rc != SQLITE_DONE) return error(c, rc, "hook_suspects");
  return out;
}

Status SqliteStore::setHookSuspects(const std::set<std::string>& keys) {
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_RETURN_IF_ERROR(begin());
  Status st = execOnce(writer_, "set_hook_suspects (clear)", "DELETE FROM hook_suspects");
  if (st.ok()) {
    auto s =
        statement(writer_, "set_hook_suspect", "INSERT INTO hook_suspects (suspect) VALUES (?1)");
    if (!s.ok()) st = s.status();
    for (const std::string& k : keys) {
      if (!st.ok()) break;
      StmtScope scope(*s);
      int rc = sqlite3_bind_text64(*s, 1, k.data(), k.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      if (rc == SQLITE_OK) rc = sqlite3_step(*s);
      if (rc != SQLITE_DONE) st = error(writer_, rc, "set_hook_suspect");
    }
  }
  if (!st.ok()) {
    rollbackQuietly();
    return st;
  }
  return commit();
}

// ---------------------------------------------------------------------------------------------
// Per-sweep aggregates and retention.

namespace {

// The worst status first: FAILED, ERROR, SKIPPED, PASSED.
int severity(TestStatus s) {
  switch (s) {
    case TestStatus::kFailed:
      return 3;
    case TestStatus::kError:
      return 2;
    case TestStatus::kSkipped:
      return 1;
    case TestStatus::kPassed:
      return 0;
  }
  return 2;
}

double median(std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct AggregateGroup {
  PairAggregate a;
  std::vector<double> values;
};

const char* const kAggregateColumns =
    "sweep_id, src, dst, op, mode, message_size, started_ms, tests, passed, failed, skipped, "
    "errors, status, value_median, value_min, value_max, unit";

double columnDouble(sqlite3_stmt* s, int i) {
  return sqlite3_column_type(s, i) == SQLITE_NULL ? std::numeric_limits<double>::quiet_NaN()
                                                  : sqlite3_column_double(s, i);
}

Result<PairAggregate> readAggregate(sqlite3_stmt* s, const std::string& path) {
  PairAggregate a;
  a.sweep_id = columnText(s, 0);
  a.src = columnText(s, 1);
  a.dst = columnText(s, 2);
  const std::string op = columnText(s, 3);
  const std::string mode = columnText(s, 4);
  const std::string status = columnText(s, 12);
  if (!parseEnum(op, &a.op) || !parseEnum(mode, &a.mode) || !parseEnum(status, &a.status)) {
    return Status(Code::kDataLoss,
                  "sweep_aggregates row of sweep '" + a.sweep_id + "' in " + path + " holds op '" +
                      op + "', mode '" + mode + "', status '" + status + "'",
                  "the row was written by another program or a newer gdrmesh; upgrade gdrmesh");
  }
  a.message_size = static_cast<uint64_t>(sqlite3_column_int64(s, 5));
  a.started_ms = sqlite3_column_int64(s, 6);
  a.tests = static_cast<uint32_t>(sqlite3_column_int64(s, 7));
  a.passed = static_cast<uint32_t>(sqlite3_column_int64(s, 8));
  a.failed = static_cast<uint32_t>(sqlite3_column_int64(s, 9));
  a.skipped = static_cast<uint32_t>(sqlite3_column_int64(s, 10));
  a.errors = static_cast<uint32_t>(sqlite3_column_int64(s, 11));
  a.value_median = columnDouble(s, 13);
  a.value_min = columnDouble(s, 14);
  a.value_max = columnDouble(s, 15);
  a.unit = columnText(s, 16);
  return a;
}

}  // namespace

Status SqliteStore::aggregateSweep(const std::string& sweep_id, uint32_t plan_size) {
  if (sweep_id.empty()) {
    return invalidArgument("aggregateSweep: sweep id is empty", "pass a stored sweep's id");
  }
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * exists,
                       statement(writer_, "sweep_exists", "SELECT 1 FROM sweeps WHERE id = ?1"));
  {
    StmtScope scope(exists);
    int rc = sqlite3_bind_text64(exists, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT,
                                 SQLITE_UTF8);
    if (rc != SQLITE_OK) return error(writer_, rc, "sweep_exists (bind)");
    rc = sqlite3_step(exists);
    if (rc == SQLITE_DONE) {
      return notFound("sweep '" + sweep_id + "' is not stored in " + path_,
                      "aggregate a sweep that createSweep stored (ids are matched exactly)");
    }
    if (rc != SQLITE_ROW) return error(writer_, rc, "sweep_exists");
  }
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * rows,
      statement(writer_, "aggregate_rows",
                "SELECT initiator_worker, target_worker, op, mode, message_size, started_ms, "
                "status, bw_valid, bw_avg_gbps, lat_valid, lat_median_us, plan_index FROM "
                "results WHERE run_id = ?1"));
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * del,
      statement(writer_, "aggregate_delete", "DELETE FROM sweep_aggregates WHERE sweep_id = ?1"));
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * ins,
                       statement(writer_, "aggregate_insert",
                                 std::string("INSERT INTO sweep_aggregates (") + kAggregateColumns +
                                     ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                                     "?12, ?13, ?14, ?15, ?16, ?17)"));
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * totals,
      statement(writer_, "aggregate_totals",
                "INSERT OR REPLACE INTO sweep_totals (sweep_id, tests_done, tests_failed, "
                "tests_skipped, results) VALUES (?1, ?2, ?3, ?4, ?5)"));

  GDR_RETURN_IF_ERROR(begin());
  // Everything below runs in the transaction; any failure rolls it back whole.
  auto run = [&]() -> Status {
    std::map<std::tuple<std::string, std::string, std::string, std::string, uint64_t>,
             AggregateGroup>
        groups;
    std::set<int64_t> done;
    SweepTotals t;
    {
      StmtScope scope(rows);
      int rc = sqlite3_bind_text64(rows, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT,
                                   SQLITE_UTF8);
      if (rc != SQLITE_OK) return error(writer_, rc, "aggregate_rows (bind)");
      while ((rc = sqlite3_step(rows)) == SQLITE_ROW) {
        const std::string op = columnText(rows, 2);
        const std::string mode = columnText(rows, 3);
        auto key = std::make_tuple(columnText(rows, 0), columnText(rows, 1), op, mode,
                                   static_cast<uint64_t>(sqlite3_column_int64(rows, 4)));
        auto [it, fresh] = groups.try_emplace(key);
        PairAggregate& a = it->second.a;
        TestStatus status = TestStatus::kError;
        if (!parseEnum(columnText(rows, 6), &status) || !parseEnum(op, &a.op) ||
            !parseEnum(mode, &a.mode)) {
          return Status(Code::kDataLoss,
                        "a results row of sweep '" + sweep_id + "' in " + path_ +
                            " holds an unknown op, mode or status",
                        "the row was written by another program or a newer gdrmesh");
        }
        const int64_t started = sqlite3_column_int64(rows, 5);
        if (fresh) {
          a.sweep_id = sweep_id;
          a.src = std::get<0>(key);
          a.dst = std::get<1>(key);
          a.message_size = std::get<4>(key);
          a.started_ms = started;
          a.status = status;
          a.unit = a.mode == Mode::kBandwidth ? "Gb/s" : "us";
        }
        a.started_ms = std::min(a.started_ms, started);
        if (severity(status) > severity(a.status)) a.status = status;
        ++a.tests;
        a.passed += status == TestStatus::kPassed ? 1 : 0;
        a.failed += status == TestStatus::kFailed ? 1 : 0;
        a.skipped += status == TestStatus::kSkipped ? 1 : 0;
        a.errors += status == TestStatus::kError ? 1 : 0;
        const bool bw = a.mode == Mode::kBandwidth;
        const int valid_col = bw ? 7 : 9;
        const int value_col = bw ? 8 : 10;
        if (sqlite3_column_int64(rows, valid_col) != 0 &&
            sqlite3_column_type(rows, value_col) != SQLITE_NULL) {
          it->second.values.push_back(sqlite3_column_double(rows, value_col));
        }
        const int64_t plan_index = sqlite3_column_int64(rows, 11);
        if (plan_index >= 0 && plan_index < int64_t{plan_size}) done.insert(plan_index);
        if (status == TestStatus::kFailed || status == TestStatus::kError) ++t.tests_failed;
        if (status == TestStatus::kSkipped) ++t.tests_skipped;
        ++t.results;
      }
      if (rc != SQLITE_DONE) return error(writer_, rc, "aggregate_rows");
    }
    if (t.results == 0) {
      // Nothing raw (left): keep what was computed before, else record zero totals so that
      // the sweep counts as aggregated.
      GDR_ASSIGN_OR_RETURN(sqlite3_stmt * zero,
                           statement(writer_, "aggregate_zero_totals",
                                     "INSERT OR IGNORE INTO sweep_totals (sweep_id, tests_done, "
                                     "tests_failed, tests_skipped, results) VALUES (?1, 0, 0, 0, "
                                     "0)"));
      StmtScope scope(zero);
      int rc = sqlite3_bind_text64(zero, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT,
                                   SQLITE_UTF8);
      if (rc == SQLITE_OK) rc = sqlite3_step(zero);
      if (rc != SQLITE_DONE) return error(writer_, rc, "aggregate_zero_totals");
      return Status();
    }
    t.tests_done = static_cast<uint32_t>(done.size());
    {
      StmtScope scope(del);
      int rc = sqlite3_bind_text64(del, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT,
                                   SQLITE_UTF8);
      if (rc == SQLITE_OK) rc = sqlite3_step(del);
      if (rc != SQLITE_DONE) return error(writer_, rc, "aggregate_delete");
    }
    for (auto& [key, g] : groups) {
      PairAggregate& a = g.a;
      if (!g.values.empty()) {
        a.value_min = *std::min_element(g.values.begin(), g.values.end());
        a.value_max = *std::max_element(g.values.begin(), g.values.end());
      }
      a.value_median = median(g.values);
      StmtScope scope(ins);
      int rc = sqlite3_bind_text64(ins, 1, a.sweep_id.data(), a.sweep_id.size(), SQLITE_TRANSIENT,
                                   SQLITE_UTF8);
      if (rc == SQLITE_OK) {
        rc = sqlite3_bind_text64(ins, 2, a.src.data(), a.src.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      }
      if (rc == SQLITE_OK) {
        rc = sqlite3_bind_text64(ins, 3, a.dst.data(), a.dst.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      }
      if (rc == SQLITE_OK) rc = sqlite3_bind_text(ins, 4, toString(a.op), -1, SQLITE_STATIC);
      if (rc == SQLITE_OK) rc = sqlite3_bind_text(ins, 5, toString(a.mode), -1, SQLITE_STATIC);
      if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 6, static_cast<int64_t>(a.message_size));
      if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 7, a.started_ms);
      if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 8, a.tests);
      if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 9, a.passed);
      if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 10, a.failed);
      if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 11, a.skipped);
      if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 12, a.errors);
      if (rc == SQLITE_OK) rc = sqlite3_bind_text(ins, 13, toString(a.status), -1, SQLITE_STATIC);
      // NaN binds as NULL (SQLite cannot store it) and reads back as NaN.
      if (rc == SQLITE_OK) rc = sqlite3_bind_double(ins, 14, a.value_median);
      if (rc == SQLITE_OK) rc = sqlite3_bind_double(ins, 15, a.value_min);
      if (rc == SQLITE_OK) rc = sqlite3_bind_double(ins, 16, a.value_max);
      if (rc == SQLITE_OK) {
        rc = sqlite3_bind_text64(ins, 17, a.unit.data(), a.unit.size(), SQLITE_TRANSIENT,
                                 SQLITE_UTF8);
      }
      if (rc != SQLITE_OK) return error(writer_, rc, "aggregate_insert (bind)");
      rc = sqlite3_step(ins);
      if (rc != SQLITE_DONE) return error(writer_, rc, "aggregate_insert");
    }
    StmtScope scope(totals);
    int rc = sqlite3_bind_text64(totals, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT,
                                 SQLITE_UTF8);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(totals, 2, t.tests_done);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(totals, 3, t.tests_failed);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(totals, 4, t.tests_skipped);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(totals, 5, static_cast<int64_t>(t.results));
    if (rc == SQLITE_OK) rc = sqlite3_step(totals);
    if (rc != SQLITE_DONE) return error(writer_, rc, "aggregate_totals");
    return Status();
  };
  Status st = run();
  if (!st.ok()) {
    rollbackQuietly();
    return st.withContext("aggregating sweep " + sweep_id);
  }
  return commit();
}

Result<SweepTotals> SqliteStore::sweepTotals(const std::string& sweep_id, uint32_t plan_size) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * kept,
                       statement(c, "sweep_totals_kept",
                                 "SELECT tests_done, tests_failed, tests_skipped, results FROM "
                                 "sweep_totals WHERE sweep_id = ?1"));
  SweepTotals t;
  {
    StmtScope scope(kept);
    int rc = sqlite3_bind_text64(kept, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT,
                                 SQLITE_UTF8);
    if (rc != SQLITE_OK) return error(c, rc, "sweep_totals_kept (bind)");
    rc = sqlite3_step(kept);
    if (rc == SQLITE_ROW) {
      t.tests_done = static_cast<uint32_t>(sqlite3_column_int64(kept, 0));
      t.tests_failed = static_cast<uint32_t>(sqlite3_column_int64(kept, 1));
      t.tests_skipped = static_cast<uint32_t>(sqlite3_column_int64(kept, 2));
      t.results = static_cast<uint64_t>(sqlite3_column_int64(kept, 3));
      t.from_aggregates = true;
      return t;
    }
    if (rc != SQLITE_DONE) return error(c, rc, "sweep_totals_kept");
  }
  // Counted from results_run_plan_status alone (a covering index: no row is read).
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "sweep_totals_count",
                "SELECT count(DISTINCT CASE WHEN plan_index >= 0 AND plan_index < ?2 THEN "
                "plan_index END), total(status IN ('FAILED', 'ERROR')), "
                "total(status = 'SKIPPED'), count(*) FROM results WHERE run_id = ?1"));
  StmtScope scope(s);
  int rc =
      sqlite3_bind_text64(s, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, plan_size);
  if (rc != SQLITE_OK) return error(c, rc, "sweep_totals_count (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_ROW)
    return error(c, rc == SQLITE_DONE ? SQLITE_INTERNAL : rc, "sweep_totals_count");
  t.tests_done = static_cast<uint32_t>(sqlite3_column_int64(s, 0));
  t.tests_failed = static_cast<uint32_t>(sqlite3_column_double(s, 1));
  t.tests_skipped = static_cast<uint32_t>(sqlite3_column_double(s, 2));
  t.results = static_cast<uint64_t>(sqlite3_column_int64(s, 3));
  return t;
}

Result<std::vector<SweepRecord>> SqliteStore::sweepsWithoutAggregates(int64_t created_before_ms,
                                                                      uint32_t limit) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "sweeps_without_aggregates",
                "SELECT " + selectSweepColumns() +
                    " FROM sweeps s WHERE created_ms < ?1 AND state NOT IN ('queued', "
                    "'running') AND NOT EXISTS (SELECT 1 FROM sweep_totals t WHERE t.sweep_id "
                    "= s.id) ORDER BY created_ms, rowid LIMIT ?2"));
  StmtScope scope(s);
  int rc = sqlite3_bind_int64(s, 1, created_before_ms);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, limit == 0 ? -1 : int64_t{limit});
  if (rc != SQLITE_OK) return error(c, rc, "sweeps_without_aggregates (bind)");
  std::vector<SweepRecord> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GDR_ASSIGN_OR_RETURN(SweepRecord r, readSweepRow(s, path_));
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "sweeps_without_aggregates");
  return out;
}

Result<std::vector<PairAggregate>> SqliteStore::sweepAggregates(const std::string& sweep_id) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(c, "sweep_aggregates",
                                 std::string("SELECT ") + kAggregateColumns +
                                     " FROM sweep_aggregates WHERE sweep_id = ?1 ORDER BY "
                                     "src, dst, op, mode, message_size"));
  StmtScope scope(s);
  int rc =
      sqlite3_bind_text64(s, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) return error(c, rc, "sweep_aggregates (bind)");
  std::vector<PairAggregate> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GDR_ASSIGN_OR_RETURN(PairAggregate a, readAggregate(s, path_));
    out.push_back(std::move(a));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "sweep_aggregates");
  return out;
}

Result<std::vector<PairAggregate>> SqliteStore::pairHistory(const std::string& src,
                                                            const std::string& dst,
                                                            int64_t before_ms, uint32_t limit) {
  if (src.empty() || dst.empty()) {
    return invalidArgument("pairHistory needs both workers (src '" + src + "', dst '" + dst + "')",
                           "pass the initiator and the target worker names");
  }
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  // Newest first straight from sweep_aggregates(src, dst, started_ms).
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(c, "pair_history",
                                 std::string("SELECT ") + kAggregateColumns +
                                     " FROM sweep_aggregates WHERE src = ?1 AND dst = ?2 AND "
                                     "started_ms < ?3 ORDER BY started_ms DESC LIMIT ?4"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, src.data(), src.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 2, dst.data(), dst.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_int64(s, 3, before_ms > 0 ? before_ms : std::numeric_limits<int64_t>::max());
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 4, limit == 0 ? -1 : int64_t{limit});
  if (rc != SQLITE_OK) return error(c, rc, "pair_history (bind)");
  std::vector<PairAggregate> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GDR_ASSIGN_OR_RETURN(PairAggregate a, readAggregate(s, path_));
    out.push_back(std::move(a));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "pair_history");
  return out;
}

Result<uint64_t> SqliteStore::deleteResultsBefore(int64_t cutoff_ms, uint32_t max_rows) {
  if (max_rows == 0) {
    return invalidArgument("deleteResultsBefore: max_rows is 0",
                           "delete in batches of at least one row (e.g. 2000)");
  }
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  // The oldest rows first, through results_started_ms; one statement is one short transaction.
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "delete_results_before",
                "DELETE FROM results WHERE id IN (SELECT id FROM results WHERE started_ms < ?1 "
                "ORDER BY started_ms LIMIT ?2)"));
  StmtScope scope(s);
  int rc = sqlite3_bind_int64(s, 1, cutoff_ms);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, max_rows);
  if (rc != SQLITE_OK) return error(writer_, rc, "delete_results_before (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "delete_results_before");
  return static_cast<uint64_t>(sqlite3_changes64(writer_.db.get()));
}

// ---------------------------------------------------------------------------------------------

Result<int> SqliteStore::schemaVersion() {
  std::lock_guard<std::mutex> lock(writer_.mu);
  GDR_ASSIGN_OR_RETURN(const int64_t v,
                       queryInt(writer_, "read user_version", "PRAGMA user_version"));
  return static_cast<int>(v);
}

Result<std::string> SqliteStore::journalMode() {
  std::lock_guard<std::mutex> lock(writer_.mu);
  return queryText(writer_, "read journal_mode", "PRAGMA journal_mode");
}

Status SqliteStore::setMaxPageCountForTesting(int64_t pages) {
  std::lock_guard<std::mutex> lock(writer_.mu);
  // PRAGMA takes no bound parameters; a test-only integer, not input.
  return execOnce(writer_, "set max_page_count",
                  "PRAGMA max_page_count = " + std::to_string(pages));
}

Result<int64_t> SqliteStore::pageCountForTesting() {
  std::lock_guard<std::mutex> lock(writer_.mu);
  return queryInt(writer_, "read page_count", "PRAGMA page_count");
}

}  // namespace gdrmesh
