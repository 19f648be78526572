// SqliteStore: the whole Store (store.h) on one SQLite file (WAL mode).
//
// Files, one per aggregate: sqlite_schema.cc (tables and migrations), sqlite_connection.cc
// (open, connections, statements, transactions, errors), sqlite_results.cc (results, workers,
// test markers), sqlite_sweeps.cc (sweeps, their markers, schedule runs), sqlite_verdicts.cc
// (a sweep's report rows), sqlite_aggregates.cc (aggregates, totals, pair history, retention),
// sqlite_actions.cc, sqlite_paths.cc (tests' paths through the fabric), sqlite_fabric.cc (the
// fabric's history); the column lists in store_columns.h and sqlite_columns.h.
//
// Schema: versioned with PRAGMA user_version. kSchemaMigrations() is an ordered list of steps
// (1, 2, ...); opening a file applies every step above the file's version, each in its own
// transaction, and refuses a file written by a newer gdrmesh. Steps are frozen once released:
// a schema change is a new step appended to the list, never an edit of an old one.
//
// Thread contract: every method may be called from any thread at once. A file database has two
// connections, each guarded by its own mutex: the writer (every write, schema, PRAGMAs) and a
// read-only reader (queryResults, countResults, queryHistory, getResult, listWorkers, getSweep,
// listSweeps, unfinishedSweepTests, scheduleRuns, sweepTotals, sweepsWithoutAggregates,
// sweepAggregates, pairHistory, sweepVerdicts, countSweepVerdicts, sweepReportSummary, testPath,
// sweepPaths, the fabric history's reads). In WAL mode
// the reader sees the last committed state and neither waits for the other, so a long query never
// holds up an insert. ":memory:" has one connection (a second would be a different database) that
// serves both roles.
//
// While the WAL index ("<db>-shm") refuses writes (an immutable file, a read-only mount), no
// operation touches the shared connections: a write fails with kPermissionDenied naming the
// file (the coordinator spools and retries it), and a read is served by a private connection
// that keeps the WAL index in its own memory (docs/faults.md). SQLite would otherwise die of
// SIGBUS storing into its mapping of that file.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/status.h"
#include "common/sync/mutex.h"
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
  // Tests only: called by queryResults after it reads each row, while its statement is open and
  // the reader's lock is held (to hold a read open for as long as a test needs).
  std::function<void()> on_query_row_for_testing;
};

class SqliteStore : public Store {
 public:
  // Opens (creating if needed) the database at `path` and brings its schema up to date.
  // ":memory:" gives a private in-memory database (journal mode "memory", not WAL).
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& path);
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& path,
                                                   const SqliteStoreOptions& options);

  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  // ResultStore.
  Result<int64_t> insertResult(const TestResult& result) override;
  Result<std::vector<int64_t>> insertResults(const std::vector<TestResult>& results) override;
  Result<uint64_t> deleteResultsBefore(int64_t cutoff_ms, uint32_t max_rows) override;
  Result<std::vector<TestResult>> queryResults(const ResultQuery& query) override;
  Result<std::optional<TestResult>> getResult(const std::string& test_id) override;
  Status upsertWorker(const WorkerRecord& worker) override;
  Result<std::vector<WorkerRecord>> listWorkers() override;
  Result<bool> removeWorker(const std::string& name) override;
  Result<uint64_t> countResults(const ResultQuery& query) override;
  Result<std::vector<TestResult>> queryHistory(const HistoryQuery& query) override;
  Status markTestStarted(const TestResult& started) override;
  Status clearTestStarted(const std::string& test_id) override;
  Result<std::vector<TestResult>> unfinishedTests() override;

  // SweepStore.
  Status createSweep(const SweepRecord& sweep) override;
  Status updateSweep(const SweepRecord& sweep) override;
  Result<std::optional<SweepRecord>> getSweep(const std::string& id) override;
  Result<std::vector<SweepRecord>> listSweeps(uint32_t limit, const std::string& state) override;
  Status markSweepTestStarted(const std::string& sweep_id, const SweepTestStart& start) override;
  Result<std::vector<SweepTestStart>> unfinishedSweepTests(const std::string& sweep_id) override;
  Status recordScheduleRun(const ScheduleRun& run) override;
  Result<std::vector<ScheduleRun>> scheduleRuns(const std::string& schedule,
                                                uint32_t limit) override;
  Status aggregateSweep(const std::string& sweep_id, uint32_t plan_size) override;
  Result<SweepTotals> sweepTotals(const std::string& sweep_id, uint32_t plan_size) override;
  Result<std::vector<SweepRecord>> sweepsWithoutAggregates(int64_t created_before_ms,
                                                           uint32_t limit) override;
  Result<std::vector<PairAggregate>> sweepAggregates(const std::string& sweep_id) override;
  Result<std::vector<PairAggregate>> pairHistory(const std::string& src, const std::string& dst,
                                                 int64_t before_ms, uint32_t limit) override;
  // A sweep's report as rows (sqlite_verdicts.cc).
  Status clearSweepReport(const std::string& sweep_id) override;
  Status appendSweepVerdicts(const std::string& sweep_id,
                             const std::vector<VerdictRecord>& verdicts) override;
  Status putSweepReportSummary(const std::string& sweep_id,
                               const SweepReportSummary& summary) override;
  Result<std::optional<SweepReportSummary>> sweepReportSummary(
      const std::string& sweep_id) override;
  Result<std::vector<VerdictRecord>> sweepVerdicts(const VerdictQuery& query) override;
  Result<uint64_t> countSweepVerdicts(const VerdictQuery& query) override;

  // ActionStore.
  Result<int64_t> recordAction(const ActionRecord& action) override;
  Result<std::vector<ActionRecord>> listActions(const ActionQuery& query) override;
  // HookStateStore.
  Result<std::set<std::string>> hookSuspects() override;
  Status setHookSuspects(const std::set<std::string>& keys) override;
  // FabricHistory (sqlite_fabric.cc).
  Result<int64_t> recordFabricSnapshot(const FabricSnapshotRecord& snapshot,
                                       const std::vector<FabricFindingRecord>& findings) override;
  Result<std::vector<FabricSnapshotRecord>> listFabricSnapshots(
      const FabricSnapshotQuery& query) override;
  Result<std::optional<FabricSnapshotRecord>> getFabricSnapshot(int64_t id) override;
  Result<std::vector<FabricFindingRecord>> fabricFindings(int64_t snapshot_id) override;
  Result<uint64_t> dropFabricSnapshotsBefore(int64_t cutoff_ms, uint32_t max_rows) override;

  // TestPathStore (sqlite_paths.cc).
  Status putTestPaths(const std::vector<PathHopRecord>& hops) override;
  Result<std::vector<PathHopRecord>> testPath(const std::string& test_id) override;
  Result<std::vector<PathHopRecord>> sweepPaths(const std::string& sweep_id) override;

  // LinkCounterStore (sqlite_link_counters.cc).
  Status putLinkCounters(const std::vector<LinkCounterRecord>& rows) override;
  Result<std::vector<LinkCounterRecord>> sweepLinkCounters(const std::string& sweep_id) override;
  Status putLinkVerdicts(const std::string& sweep_id,
                         const std::vector<LinkVerdictRecord>& rows) override;
  Result<std::vector<LinkVerdictRecord>> sweepLinkVerdicts(const std::string& sweep_id) override;

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
  // Tests only: the EXPLAIN QUERY PLAN lines of the statement queryResults runs for `query`.
  Result<std::vector<std::string>> explainQueryResultsForTesting(const ResultQuery& query);
  // Tests only: the EXPLAIN QUERY PLAN lines of the statement sweepVerdicts runs for `query`.
  Result<std::vector<std::string>> explainSweepVerdictsForTesting(const VerdictQuery& query);
  // Tests only: the same for the statements of countResults and queryHistory.
  Result<std::vector<std::string>> explainCountResultsForTesting(const ResultQuery& query);
  Result<std::vector<std::string>> explainQueryHistoryForTesting(const HistoryQuery& query);
  // True for a file database (a separate read-only connection serves the reads).
  bool hasSeparateReader() const { return reader_ != nullptr; }

 private:
  struct StmtDeleter {
    void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
  };
  struct DbDeleter {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
  };
  using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtDeleter>;
  using DbPtr = std::unique_ptr<sqlite3, DbDeleter>;

  // One connection and its cached statements. Member order: statements are finalized before
  // the connection closes.
  struct Conn {
    Mutex mu;
    // Guarded by mu, which a write holds through a MutexLock on writer_.mu and a read through
    // a ReadLease; the lease picks its connection at run time, which the analysis cannot
    // follow, so these two are not ABSL_GUARDED_BY.
    DbPtr db;
    std::map<std::string, StmtPtr> stmts;
  };

  SqliteStore(std::string path, DbPtr db);

  Status configure(const SqliteStoreOptions& options) ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_.mu);
  Status openReader(const SqliteStoreOptions& options);
  // The connection reads use: the read-only one for a file, the only one for ":memory:".
  Conn& reader() { return reader_ ? *reader_ : writer_; }
  // One read's connection, locked while the lease lives: reader(), or while the WAL index
  // refuses writes (walIndexWritable()) a private one that never maps it (see the .cc).
  class ReadLease;
  // OK unless the database's WAL index ("<db>-shm") refuses writes (an immutable file, a
  // read-only mount): SQLite maps that file, and a store into a mapped page the file system
  // refuses ends the process with SIGBUS instead of returning an error. Every write and every
  // read through the shared connections asks first (issue #23).
  Status walIndexWritable() const;
  // Opens `c` read-only on the "unix-none" VFS in exclusive locking mode: SQLite then builds
  // the WAL index in the connection's own heap memory from the -wal file and neither maps nor
  // locks the -shm file. Called with writer_.mu held (none of our writes runs meanwhile).
  Status openPrivateReader(Conn& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_.mu);

  // The helpers below expect the named connection's mutex held; those without one use writer_.
  Status migrate(const std::vector<SqliteMigration>& migrations);
  Status applyMigration(const SqliteMigration& m);
  Result<std::vector<int64_t>> insertLocked(const TestResult* rows, size_t n);
  // The cached prepared statement `name` (prepared from `sql` on first use).
  Result<sqlite3_stmt*> statement(Conn& c, const std::string& name, const std::string& sql);
  // Prepares and runs fixed SQL once (not cached): DDL and PRAGMAs.
  Status execOnce(Conn& c, const std::string& name, const std::string& sql);
  // EXPLAIN QUERY PLAN of `sql` on the reader (not cached; tests only).
  Result<std::vector<std::string>> explain(const std::string& name, const std::string& sql);
  Result<int64_t> queryInt(Conn& c, const std::string& name, const std::string& sql);
  Result<std::string> queryText(Conn& c, const std::string& name, const std::string& sql);
  Status begin();
  Status commit();
  Status writeSweep(const SweepRecord& sweep, bool create);
  // sqlite_verdicts.cc: a write of a sweep's report rows in one transaction (writer_.mu held),
  // and one row of a verdict read.
  Status writeInTransaction(const std::function<Status()>& body);
  // kNotFound, with `fix`, when the sweep is not stored.
  Status sweepMustExist(const std::string& sweep_id,
                        const std::string& fix = "createSweep before storing its report");
  Status insertVerdictRows(const std::string& sweep_id, const std::vector<VerdictRecord>& rows);
  Status insertSummaryRows(const std::string& sweep_id, const SweepReportSummary& summary);
  void rollbackQuietly() noexcept;
  // sqlite_aggregates.cc: aggregateSweep's stream, in its transaction (writer_.mu held): the
  // scan of the rows ordered by pair, and the write of each finished group (and, `last`, of
  // the totals).
  struct AggregateScan;
  Status scanSweepRows(const std::string& sweep_id, uint32_t plan_size, AggregateScan& scan);
  Status writeAggregates(const std::string& sweep_id, AggregateScan& scan, bool last);
  // A Status for SQLite result code `rc` from statement `what` on connection `c`.
  Status error(const Conn& c, int rc, const std::string& what) const;

  const std::string path_;
  std::function<void()> on_query_row_;  // tests only
  Conn writer_;
  std::unique_ptr<Conn> reader_;  // null for ":memory:"
};

}  // namespace gdrmesh
