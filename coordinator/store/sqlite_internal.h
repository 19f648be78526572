// What the files of SqliteStore share (sqlite_*.cc): statement scopes, column reads and the read
// lease. Private to coordinator/store.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "common/status.h"
#include "coordinator/store/sqlite_store.h"

namespace gdrmesh {
namespace sqlite_detail {

// PRAGMA application_id of a gdrmesh database ("GDMS"): tells our files from other SQLite files.
inline constexpr int64_t kApplicationId = 0x47444D53;

// Resets a cached statement (and drops its bindings) when the scope ends.
class StmtScope {
 public:
  explicit StmtScope(sqlite3_stmt* s) : s_(s) {}
  ~StmtScope() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  StmtScope(const StmtScope&) = delete;
  StmtScope& operator=(const StmtScope&) = delete;

 private:
  sqlite3_stmt* s_;
};

inline std::string columnText(sqlite3_stmt* s, int i) {
  const auto* p = static_cast<const char*>(sqlite3_column_blob(s, i));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s, i))) : std::string();
}

// Migration 9's tables and the conversion of the JSON reports into them (sqlite_verdicts.cc).
extern const char* const kCreateSweepVerdicts;
extern const char* const kCreateSweepSuspects;
extern const char* const kCreateSweepNotes;
extern const char* const kCreateSweepReportSummary;
extern const char* const kConvertReportVerdicts;
extern const char* const kConvertReportSuspects;
extern const char* const kConvertReportNotes;

}  // namespace sqlite_detail

class SqliteStore::ReadLease {
 public:
  explicit ReadLease(SqliteStore& store) {
    if (!store.reader_ || store.walIndexWritable().ok()) {
      conn_ = &store.reader();
      lock_ = std::unique_lock<std::mutex>(conn_->mu.native());
      return;
    }
    // The WAL index refuses writes: the shared connections may store into their mapping of it
    // (a reader's read mark), so this read opens its own connection, which reads the -wal file
    // without locks; holding the writer's mutex keeps our own writes (the only writer: one
    // database has one coordinator) from changing it meanwhile.
    write_lock_ = std::unique_lock<std::mutex>(store.writer_.mu.native());
    status_ = store.openPrivateReader(private_);
    conn_ = &private_;
  }
  ReadLease(const ReadLease&) = delete;
  ReadLease& operator=(const ReadLease&) = delete;
  const Status& status() const { return status_; }
  Conn& conn() { return *conn_; }

 private:
  // Member order: the private connection closes before the writer's mutex is released.
  std::unique_lock<std::mutex> write_lock_;
  Conn private_;
  std::unique_lock<std::mutex> lock_;
  Conn* conn_ = nullptr;
  Status status_;
};

}  // namespace gdrmesh
