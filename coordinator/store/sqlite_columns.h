// The column lists of store_columns.h as SQL: statement texts, a Binder and a Reader that walk the
// same visitors, and whole-row reads. Private to coordinator/store (the files of SqliteStore).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "common/result.h"
#include "common/status.h"
#include "coordinator/store/store.h"
#include "coordinator/store/store_columns.h"

namespace gdrmesh {
namespace store_detail {

inline std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

// "id, test_id, run_id, ...": the SELECT list; column 0 is the row id.
inline const std::string& selectColumns() {
  static const std::string kSelect = "id, " + join(resultColumns(), ", ");
  return kSelect;
}

inline const std::string& insertResultSql() {
  static const std::string kSql = [] {
    std::vector<std::string> params(resultColumns().size(), "?");
    return "INSERT INTO results (" + join(resultColumns(), ", ") + ") VALUES (" +
           join(params, ", ") + ")";
  }();
  return kSql;
}

// "rowid, id, state, ...": column 0 is the row id (ties in created_ms: the later insertion first).
inline const std::string& selectSweepColumns() {
  static const std::string kSelect = "rowid, " + join(sweepColumns(), ", ");
  return kSelect;
}

inline const std::string& insertSweepSql() {
  static const std::string kSql = [] {
    std::vector<std::string> params(sweepColumns().size(), "?");
    return "INSERT INTO sweeps (" + join(sweepColumns(), ", ") + ") VALUES (" + join(params, ", ") +
           ")";
  }();
  return kSql;
}

// "UPDATE sweeps SET state = ?2, ... WHERE id = ?1": parameter k is the k-th visited column, so
// the Binder binds it as it binds the INSERT; created_ms (bound, unused) is left alone.
inline const std::string& updateSweepSql() {
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

inline int bindText(sqlite3_stmt* s, const char* param, const std::string& v) {
  const int i = sqlite3_bind_parameter_index(s, param);
  return sqlite3_bind_text64(s, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}
inline int bindInt(sqlite3_stmt* s, const char* param, int64_t v) {
  return sqlite3_bind_int64(s, sqlite3_bind_parameter_index(s, param), v);
}

// One results row (columns: the row id, then selectColumns()).
inline Result<TestResult> readRow(sqlite3_stmt* s, const std::string& path) {
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

// One sweeps row (columns: the row id, then selectSweepColumns()).
inline Result<SweepRecord> readSweepRow(sqlite3_stmt* s, const std::string& path) {
  SweepRecord r;
  Reader reader(s);
  visitSweepColumns(r, reader);
  if (!reader.problem().empty()) {
    return Status(Code::kDataLoss, "sweeps row '" + r.id + "' in " + path + ": " + reader.problem(),
                  "the row was written by another program or a newer gdrmesh; upgrade gdrmesh");
  }
  return r;
}

}  // namespace store_detail
}  // namespace gdrmesh
