// SqliteStore: the ResultStore on one SQLite file (WAL mode).
//
// Schema: versioned with PRAGMA user_version. kSchemaMigrations() is an ordered list of steps
// (1, 2, ...); opening a file applies every step above the file's version, each in its own
// transaction, and refuses a file written by a newer gdrmesh. Steps are frozen once released:
// a schema change is a new step appended to the list, never an edit of an old one.
//
// Thread contract: every method may be called from any thread at once. One connection, guarded
// by one mutex (mu_); calls are serialised.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/status.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

// One schema step. `statements` are fixed SQL texts (no values) run in order in one
// transaction together with "PRAGMA user_version = version".
struct SqliteMigration {
  int version = 0;
  std::string name;
  std::vector<std::string> statements;
};

// The built-in migrations, versions 1..N in order.
const std::vector<SqliteMigration>& sqliteSchemaMigrations();

struct SqliteStoreOptions {
  // How long a statement waits for a lock held by another connection or process.
  int busy_timeout_ms = 5000;
  // Tests only: replaces sqliteSchemaMigrations() (e.g. to add a future step, or to pretend
  // to be an older build). Must be versions 1..N in order.
  const std::vector<SqliteMigration>* migrations = nullptr;
};

class SqliteStore : public ResultStore {
 public:
  // Opens (creating if needed) the database at `path` and brings its schema up to date.
  // ":memory:" gives a private in-memory database (journal mode "memory", not WAL).
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& path);
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& path,
                                                   const SqliteStoreOptions& options);

  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  Result<int64_t> insertResult(const TestResult& result) override;
  Result<std::vector<TestResult>> queryResults(const ResultQuery& query) override;
  Result<std::optional<TestResult>> getResult(const std::string& test_id) override;
  Status upsertWorker(const WorkerRecord& worker) override;
  Result<std::vector<WorkerRecord>> listWorkers() override;

  const std::string& path() const { return path_; }
  // The schema version of the open file (PRAGMA user_version).
  Result<int> schemaVersion();
  // "wal" for a file database (PRAGMA journal_mode).
  Result<std::string> journalMode();
  // The newest schema version this build knows.
  static int latestSchemaVersion();

  // Tests only: PRAGMA max_page_count on this connection (simulates a full disk), and the
  // current PRAGMA page_count.
  Status setMaxPageCountForTesting(int64_t pages);
  Result<int64_t> pageCountForTesting();

 private:
  struct StmtDeleter {
    void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
  };
  struct DbDeleter {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
  };
  using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtDeleter>;
  using DbPtr = std::unique_ptr<sqlite3, DbDeleter>;

  SqliteStore(std::string path, DbPtr db);

  // All private helpers below expect mu_ held.
  Status configure(const SqliteStoreOptions& options);
  Status migrate(const std::vector<SqliteMigration>& migrations);
  Status applyMigration(const SqliteMigration& m);
  // The cached prepared statement `name` (prepared from `sql` on first use).
  Result<sqlite3_stmt*> statement(const std::string& name, const std::string& sql);
  // Prepares and runs fixed SQL once (not cached): DDL and PRAGMAs.
  Status execOnce(const std::string& name, const std::string& sql);
  Result<int64_t> queryInt(const std::string& name, const std::string& sql);
  Result<std::string> queryText(const std::string& name, const std::string& sql);
  Status begin();
  Status commit();
  void rollbackQuietly() noexcept;
  // A Status for SQLite result code `rc` from statement `what`.
  Status error(int rc, const std::string& what) const;

  const std::string path_;
  std::mutex mu_;
  DbPtr db_;                              // guarded by mu_
  std::map<std::string, StmtPtr> stmts_;  // guarded by mu_ (finalized before db_ closes)
};

}  // namespace gdrmesh
