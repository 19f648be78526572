// SqliteStore: the contract suite instantiated on a temp-file database, and the SQLite-specific
// behaviour (WAL, schema versions and migrations, error paths, full disk).
#include "coordinator/store/sqlite_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "tests/support/temp_dir.h"
#include "tests/unit/store/store_contract_test.h"

namespace gdrmesh::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// ---------------------------------------------------------------------------------------------
// Contract suite on SqliteStore.

class SqliteHarness : public StoreHarness {
 public:
  static Result<std::unique_ptr<StoreHarness>> make() {
    auto h = std::make_unique<SqliteHarness>();
    if (!h->dir_.ok()) return internalError("mkdtemp failed");
    Status s = h->reopen();
    if (!s.ok()) return s;
    return std::unique_ptr<StoreHarness>(std::move(h));
  }
  ResultStore& store() override { return *store_; }
  SweepStore& sweeps() override { return *store_; }
  ActionStore& actions() override { return *store_; }
  HookStateStore& hookState() override { return *store_; }
  TestPathStore& paths() override { return *store_; }
  FabricHistory& fabric() override { return *store_; }
  LinkCounterStore& linkCounters() override { return *store_; }
  bool persistent() const override { return true; }
  Status reopen() override {
    store_.reset();
    auto s = SqliteStore::open(dir_.file("results.db"));
    if (!s.ok()) return s.status();
    store_ = std::move(s).value();
    return Status();
  }

 private:
  TempDir dir_;
  std::unique_ptr<SqliteStore> store_;
};

class MemoryHarness : public StoreHarness {
 public:
  static Result<std::unique_ptr<StoreHarness>> make() {
    auto s = SqliteStore::open(":memory:");
    if (!s.ok()) return s.status();
    auto h = std::make_unique<MemoryHarness>();
    h->store_ = std::move(s).value();
    return std::unique_ptr<StoreHarness>(std::move(h));
  }
  ResultStore& store() override { return *store_; }
  SweepStore& sweeps() override { return *store_; }
  ActionStore& actions() override { return *store_; }
  HookStateStore& hookState() override { return *store_; }
  TestPathStore& paths() override { return *store_; }
  FabricHistory& fabric() override { return *store_; }
  LinkCounterStore& linkCounters() override { return *store_; }
  bool persistent() const override { return false; }
  Status reopen() override { return unimplemented("in-memory store"); }

 private:
  std::unique_ptr<SqliteStore> store_;
};

INSTANTIATE_TEST_SUITE_P(Sqlite, ResultStoreContractTest,
                         ::testing::Values(StoreFactory{"SqliteFile", &SqliteHarness::make},
                                           StoreFactory{"SqliteMemory", &MemoryHarness::make}),
                         storeFactoryName);

// ---------------------------------------------------------------------------------------------
// A plain SQLite connection, as another program (or another coordinator) would hold.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) ADD_FAILURE() << sqlite3_errmsg(db_);
  }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  int exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (err) {
      last_error_ = err;
      sqlite3_free(err);
    }
    return rc;
  }
  // First column of the first row, as text ("" when no row).
  std::string one(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
      return "";
    }
    std::string out;
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    }
    sqlite3_finalize(s);
    return out;
  }
  const std::string& lastError() const { return last_error_; }

 private:
  sqlite3* db_ = nullptr;
  std::string last_error_;
};

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()) << "mkdtemp failed"; }
  std::string dbPath() const { return dir_.file("gdrmesh.db"); }
  std::unique_ptr<SqliteStore> openOk(const SqliteStoreOptions& options = {}) {
    auto s = SqliteStore::open(dbPath(), options);
    EXPECT_TRUE(s.ok()) << s.status().toString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  TempDir dir_;
};

TEST_F(SqliteStoreTest, WalModeIsOn) {
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  auto mode = store->journalMode();
  ASSERT_TRUE(mode.ok()) << mode.status().toString();
  EXPECT_EQ(*mode, "wal");
  // WAL is a property of the file: another connection sees it too.
  RawDb raw(dbPath());
  EXPECT_EQ(raw.one("PRAGMA journal_mode"), "wal");
}

TEST_F(SqliteStoreTest, NewDatabaseIsAtTheLatestSchemaVersion) {
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  auto v = store->schemaVersion();
  ASSERT_TRUE(v.ok()) << v.status().toString();
  EXPECT_EQ(*v, SqliteStore::latestSchemaVersion());
  EXPECT_GE(SqliteStore::latestSchemaVersion(), 1);
}

TEST_F(SqliteStoreTest, RowsAreFlattenedWithTypesNamesAndGpuDirect) {
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->insertResult(makeFullResult("t-cols")).ok());
  TestResult passed = makeFullResult("t-gdr");
  passed.status = TestStatus::kPassed;
  ASSERT_TRUE(store->insertResult(passed).ok());
  TestResult staged = makeResult("t-staged", "a", "b", 5);
  staged.transport = TransportKind::kVerbs;
  staged.initiator.memory = MemoryKind::kCuda;
  staged.initiator.reg_path = RegPath::kStaged;
  ASSERT_FALSE(staged.gpudirect());
  ASSERT_TRUE(store->insertResult(staged).ok());

  RawDb raw(dbPath());
  const std::string where = " FROM results WHERE test_id = 't-cols'";
  // A FAILED test never claims GPUDirect, even on a dma-buf path; the PASSED twin does.
  EXPECT_EQ(raw.one("SELECT gpudirect" + where), "0");
  EXPECT_EQ(raw.one("SELECT gpudirect FROM results WHERE test_id = 't-gdr'"), "1");
  EXPECT_EQ(raw.one("SELECT status" + where), "FAILED");
  EXPECT_EQ(raw.one("SELECT transport" + where), "verbs");
  EXPECT_EQ(raw.one("SELECT op || ',' || mode" + where), "write_imm,lat");
  EXPECT_EQ(raw.one("SELECT initiator_memory || ',' || initiator_reg_path" + where), "cuda,dmabuf");
  EXPECT_EQ(raw.one("SELECT target_memory || ',' || target_reg_path" + where), "host,staged");
  EXPECT_EQ(raw.one("SELECT typeof(bw_avg_gbps) || typeof(lat_median_us)" + where), "realreal");
  EXPECT_EQ(raw.one("SELECT typeof(lat_stdev_us)" + where), "null");  // NaN
  EXPECT_EQ(raw.one("SELECT ctr_errors" + where), "5");
  EXPECT_EQ(raw.one("SELECT gpudirect FROM results WHERE test_id = 't-staged'"), "0");
  for (const char* index :
       {"results_started_ms", "results_run_plan_status", "results_run_started",
        "results_status_started", "results_initiator_started", "results_target_started",
        "results_pair_started", "sweeps_created_ms", "sweeps_state_created_ms",
        "schedule_runs_schedule_due", "sweep_aggregates_pair"}) {
    EXPECT_EQ(raw.one(std::string("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND "
                                  "name = '") +
                      index + "'"),
              "1")
        << index;
  }
}

TEST_F(SqliteStoreTest, RegPathAutoIsRefusedForAPassedResult) {
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  TestResult r = makeResult("t-auto", "a", "b", 1);
  r.status = TestStatus::kPassed;
  r.target.reg_path = RegPath::kAuto;
  auto id = store->insertResult(r);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(id.status().message(), HasSubstr("auto"));
}

TEST_F(SqliteStoreTest, RegPathAutoIsKeptForATestThatNeverRegistered) {
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  TestResult r = makeResult("t-skip", "a", "b", 1);
  r.status = TestStatus::kSkipped;
  r.target.reg_path = RegPath::kAuto;
  ASSERT_TRUE(store->insertResult(r).ok());
  auto back = store->getResult("t-skip");
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ((*back)->target.reg_path, RegPath::kAuto);
}

TEST_F(SqliteStoreTest, FutureSchemaVersionIsRefused) {
  { ASSERT_NE(openOk(), nullptr); }
  const int future = SqliteStore::latestSchemaVersion() + 1;
  {
    RawDb raw(dbPath());
    ASSERT_EQ(raw.exec("PRAGMA user_version = " + std::to_string(future)), SQLITE_OK);
  }
  auto s = SqliteStore::open(dbPath());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr(dbPath()));
  EXPECT_THAT(s.status().message(), HasSubstr("newer"));
  EXPECT_THAT(s.status().message(), HasSubstr(std::to_string(future)));
  EXPECT_FALSE(s.status().fix().empty());
  RawDb raw(dbPath());
  EXPECT_EQ(raw.one("PRAGMA user_version"), std::to_string(future));  // untouched
}

// A later issue adds runs/sweeps tables as migration 2, 3...: this plays that out with a test
// step on a database written by today's build.
TEST_F(SqliteStoreTest, OlderDatabaseIsMigratedAndKeepsItsRows) {
  TestResult want = makeFullResult("t-old");
  {
    auto v1 = openOk();
    ASSERT_NE(v1, nullptr);
    auto id = v1->insertResult(want);
    ASSERT_TRUE(id.ok()) << id.status().toString();
    want.id = *id;
  }
  std::vector<SqliteMigration> next = sqliteSchemaMigrations();
  next.push_back({static_cast<int>(next.size()) + 1,
                  "runs (test)",
                  {"CREATE TABLE runs (run_id TEXT PRIMARY KEY, started_ms INTEGER NOT NULL)",
                   "CREATE INDEX runs_started_ms ON runs (started_ms)"}});
  SqliteStoreOptions options;
  options.migrations = &next;
  {
    auto v2 = openOk(options);
    ASSERT_NE(v2, nullptr);
    auto v = v2->schemaVersion();
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(*v, next.back().version);
    auto got = v2->getResult("t-old");
    ASSERT_TRUE(got.ok()) << got.status().toString();
    ASSERT_TRUE(got->has_value());
    expectSameResult(want, **got);
    EXPECT_TRUE(v2->insertResult(makeResult("t-new", "a", "b", 2)).ok());
  }
  {
    RawDb raw(dbPath());
    EXPECT_EQ(raw.one("SELECT count(*) FROM sqlite_schema WHERE name = 'runs'"), "1");
  }
  // Opening again with the same list is a no-op; the build without step 2 refuses the file.
  EXPECT_NE(openOk(options), nullptr);
  auto old_build = SqliteStore::open(dbPath());
  ASSERT_FALSE(old_build.ok());
  EXPECT_THAT(old_build.status().message(), HasSubstr("newer"));
}

TEST_F(SqliteStoreTest, EmptyVersionZeroFileIsMigratedFromScratch) {
  { std::ofstream(dbPath()).flush(); }  // zero-length file: a valid, empty database
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  auto v = store->schemaVersion();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, SqliteStore::latestSchemaVersion());
  EXPECT_TRUE(store->insertResult(makeResult("t", "a", "b", 1)).ok());
}

TEST_F(SqliteStoreTest, FailedMigrationStepIsRolledBack) {
  { ASSERT_NE(openOk(), nullptr); }
  std::vector<SqliteMigration> broken = sqliteSchemaMigrations();
  const int v2 = static_cast<int>(broken.size()) + 1;
  broken.push_back({v2, "broken", {"CREATE TABLE runs (run_id TEXT)", "THIS IS NOT SQL"}});
  SqliteStoreOptions options;
  options.migrations = &broken;
  auto s = SqliteStore::open(dbPath(), options);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("schema migration " + std::to_string(v2)));
  EXPECT_THAT(s.status().message(), HasSubstr("broken"));
  RawDb raw(dbPath());
  EXPECT_EQ(raw.one("PRAGMA user_version"), std::to_string(v2 - 1));
  EXPECT_EQ(raw.one("SELECT count(*) FROM sqlite_schema WHERE name = 'runs'"), "0");
}

TEST_F(SqliteStoreTest, NonDatabaseFileGivesAClearError) {
  {
    std::ofstream f(dbPath());
    for (int i = 0; i < 200; ++i) f << "this is a text file, not a database\n";
  }
  auto s = SqliteStore::open(dbPath());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kFailedPrecondition) << s.status().toString();
  EXPECT_THAT(s.status().message(), HasSubstr("not a database"));
  EXPECT_THAT(s.status().message(), HasSubstr(dbPath()));
  EXPECT_THAT(s.status().fix(), HasSubstr("--db"));
}

// A corrupt database's fix is the .dump salvage of docs/operations.md, which works with Debian
// 12's sqlite3 3.40.1; it used to suggest `.recover`, which fails there on a gdrmesh database.
TEST_F(SqliteStoreTest, CorruptDatabaseFixGivesTheDumpSalvage) {
  {
    auto s = SqliteStore::open(dbPath());
    ASSERT_TRUE(s.ok()) << s.status().toString();
  }
  {
    // Page 1's b-tree (after the 100-byte file header) overwritten: the schema is unreadable.
    std::fstream f(dbPath(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    const std::string garbage(400, '\xa5');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  auto s = SqliteStore::open(dbPath());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kDataLoss) << s.status().toString();
  EXPECT_THAT(s.status().message(), HasSubstr("database is corrupt: " + dbPath()));
  const std::string fix = s.status().fix();
  EXPECT_THAT(fix, HasSubstr("sqlite3 " + dbPath() + " .dump | sqlite3 " + dbPath() + ".salvaged"))
      << fix;
  EXPECT_THAT(fix, HasSubstr("PRAGMA user_version")) << fix;
  EXPECT_THAT(fix, HasSubstr("docs/operations.md")) << fix;
  EXPECT_THAT(fix, ::testing::Not(HasSubstr(".recover"))) << fix;
}

TEST_F(SqliteStoreTest, ForeignSqliteDatabaseIsRefusedUntouched) {
  {
    RawDb raw(dbPath());
    ASSERT_EQ(raw.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x')"),
              SQLITE_OK);
  }
  auto s = SqliteStore::open(dbPath());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr("not a gdrmesh database"));
  RawDb raw(dbPath());
  EXPECT_EQ(raw.one("SELECT count(*) FROM sqlite_schema WHERE name = 'results'"), "0");
  EXPECT_EQ(raw.one("PRAGMA journal_mode"), "delete");  // not switched to WAL
}

TEST_F(SqliteStoreTest, MissingDirectoryIsNamedWithTheFix) {
  const std::string dir = dir_.file("no/such/dir");
  auto s = SqliteStore::open(dir + "/gdrmesh.db");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kNotFound);
  EXPECT_THAT(s.status().message(), HasSubstr(dir));
  EXPECT_THAT(s.status().fix(), HasSubstr("mkdir -p " + dir));
}

TEST_F(SqliteStoreTest, UnwritableDirectoryIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permissions are not enforced";
  const std::string ro = dir_.file("ro");
  ASSERT_EQ(::mkdir(ro.c_str(), 0500), 0);
  auto s = SqliteStore::open(ro + "/gdrmesh.db");
  ::chmod(ro.c_str(), 0700);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kPermissionDenied) << s.status().toString();
  EXPECT_THAT(s.status().message(), HasSubstr(ro));
}

TEST_F(SqliteStoreTest, DatabaseLockedByAnotherProcessAtOpen) {
  RawDb other(dbPath());
  ASSERT_EQ(other.exec("BEGIN EXCLUSIVE; CREATE TABLE x (a)"), SQLITE_OK) << other.lastError();
  SqliteStoreOptions options;
  options.busy_timeout_ms = 50;
  auto s = SqliteStore::open(dbPath(), options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kUnavailable) << s.status().toString();
  EXPECT_THAT(s.status().message(), HasSubstr("locked by another process"));
  EXPECT_THAT(s.status().message(), HasSubstr(dbPath()));
  EXPECT_FALSE(s.status().fix().empty());
}

TEST_F(SqliteStoreTest, WriteWhileAnotherConnectionHoldsTheWriteLock) {
  SqliteStoreOptions options;
  options.busy_timeout_ms = 50;
  auto store = openOk(options);
  ASSERT_NE(store, nullptr);
  RawDb other(dbPath());
  ASSERT_EQ(other.exec("BEGIN IMMEDIATE"), SQLITE_OK) << other.lastError();
  auto id = store->insertResult(makeResult("t-locked", "a", "b", 1));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kUnavailable) << id.status().toString();
  // Readers are not blocked in WAL mode.
  EXPECT_TRUE(store->queryResults(ResultQuery{}).ok());
  ASSERT_EQ(other.exec("COMMIT"), SQLITE_OK);
  EXPECT_TRUE(store->insertResult(makeResult("t-locked", "a", "b", 1)).ok());
}

TEST_F(SqliteStoreTest, FullDiskIsResourceExhaustedAndRecovers) {
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->insertResult(makeResult("t-before", "a", "b", 1)).ok());
  ASSERT_TRUE(store->upsertWorker({"w", "h", "{}", 1, 1}).ok());

  // No page beyond the current ones: the "disk" is full.
  auto pages = store->pageCountForTesting();
  ASSERT_TRUE(pages.ok()) << pages.status().toString();
  ASSERT_TRUE(store->setMaxPageCountForTesting(*pages).ok());

  TestResult big = makeResult("t-big", "a", "b", 2);
  big.reason = std::string(256 * 1024, 'x');  // needs many new pages
  auto id = store->insertResult(big);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kResourceExhausted) << id.status().toString();
  EXPECT_THAT(id.status().message(), HasSubstr("database disk is full: " + dbPath()));
  EXPECT_THAT(id.status().fix(), HasSubstr("free space"));

  // Nothing half-written; reads still work while full.
  auto got = store->getResult("t-big");
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_FALSE(got->has_value());
  ResultQuery all;
  all.limit = 0;
  auto rows = store->queryResults(all);
  ASSERT_TRUE(rows.ok()) << rows.status().toString();
  EXPECT_EQ(rows->size(), 1u);

  Status w = store->upsertWorker({"w-big", "h", std::string(256 * 1024, '{'), 3, 3});
  EXPECT_EQ(w.code(), Code::kResourceExhausted) << w.toString();

  // Space comes back: the same store takes the same rows.
  ASSERT_TRUE(store->setMaxPageCountForTesting(1 << 20).ok());
  auto id2 = store->insertResult(big);
  ASSERT_TRUE(id2.ok()) << id2.status().toString();
  got = store->getResult("t-big");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->reason.size(), big.reason.size());
  EXPECT_TRUE(store->upsertWorker({"w-big", "h", std::string(256 * 1024, '{'), 3, 3}).ok());
  auto workers = store->listWorkers();
  ASSERT_TRUE(workers.ok());
  EXPECT_EQ(workers->size(), 2u);
}

TEST_F(SqliteStoreTest, InMemoryDatabaseWorks) {
  auto s = SqliteStore::open(":memory:");
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_TRUE((*s)->insertResult(makeResult("t", "a", "b", 1)).ok());
  auto mode = (*s)->journalMode();
  ASSERT_TRUE(mode.ok());
  EXPECT_EQ(*mode, "memory");
}

TEST_F(SqliteStoreTest, EmptyPathIsInvalid) {
  auto s = SqliteStore::open("");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Migration 2 on a database written by a build that stopped at migration 1.

TEST_F(SqliteStoreTest, VersionOneDatabaseGainsSweepsAndPlanIndex) {
  const std::vector<SqliteMigration> v1(sqliteSchemaMigrations().begin(),
                                        sqliteSchemaMigrations().begin() + 1);
  SqliteStoreOptions old_build;
  old_build.migrations = &v1;
  {
    auto store = openOk(old_build);
    ASSERT_NE(store, nullptr);
    RawDb raw(dbPath());
    ASSERT_EQ(raw.one("PRAGMA user_version"), "1");
    EXPECT_EQ(raw.one("SELECT count(*) FROM pragma_table_info('results') WHERE name = "
                      "'plan_index'"),
              "0");
  }
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  auto v = store->schemaVersion();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, SqliteStore::latestSchemaVersion());
  TestResult want = makeFullResult("t-v2");
  want.plan_index = 7;
  auto id = store->insertResult(want);
  ASSERT_TRUE(id.ok()) << id.status().toString();
  RawDb raw(dbPath());
  EXPECT_EQ(raw.one("SELECT plan_index FROM results WHERE test_id = 't-v2'"), "7");
  for (const char* gone :
       {"results_run_id", "results_status", "results_initiator_worker", "results_target_worker"}) {
    EXPECT_EQ(
        raw.one(std::string("SELECT count(*) FROM sqlite_schema WHERE name = '") + gone + "'"), "0")
        << gone;
  }
  EXPECT_EQ(raw.one("SELECT count(*) FROM sqlite_schema WHERE name IN ('sweeps', "
                    "'sweep_test_starts', 'schedule_runs')"),
            "3");
}

// Migration 5: a claim of GPUDirect stored under the old rule ("either side") is withdrawn where
// one GPU side was staged; a claim every GPU side supports stays.
TEST_F(SqliteStoreTest, VersionThreeGpuDirectClaimsFollowThePerSideRule) {
  const std::vector<SqliteMigration> v3(sqliteSchemaMigrations().begin(),
                                        sqliteSchemaMigrations().begin() + 3);
  SqliteStoreOptions old_build;
  old_build.migrations = &v3;
  {
    auto store = openOk(old_build);
    ASSERT_NE(store, nullptr);
    TestResult mixed = makeResult("t-mixed", "a", "b", 5);
    mixed.status = TestStatus::kPassed;
    mixed.transport = TransportKind::kVerbs;
    mixed.initiator.memory = mixed.target.memory = MemoryKind::kCuda;
    mixed.initiator.reg_path = RegPath::kDmabuf;
    mixed.target.reg_path = RegPath::kStaged;
    TestResult host_to_gpu = mixed;
    host_to_gpu.test_id = "t-h2g";
    host_to_gpu.initiator.memory = MemoryKind::kHost;
    host_to_gpu.initiator.reg_path = RegPath::kHost;
    host_to_gpu.target.reg_path = RegPath::kPeermem;
    // Today's insert names the columns of later migrations (8: cpu_binding): present while
    // the rows go in, gone again before the upgrade adds them.
    RawDb raw(dbPath());
    for (const char* side : {"initiator", "target"}) {
      ASSERT_EQ(raw.exec(std::string("ALTER TABLE results ADD COLUMN ") + side +
                         "_cpu_binding TEXT NOT NULL DEFAULT ''"),
                SQLITE_OK);
    }
    ASSERT_TRUE(store->insertResult(mixed).ok());
    ASSERT_TRUE(store->insertResult(host_to_gpu).ok());
    for (const char* side : {"initiator", "target"}) {
      ASSERT_EQ(raw.exec(std::string("ALTER TABLE results DROP COLUMN ") + side + "_cpu_binding"),
                SQLITE_OK);
    }
    ASSERT_EQ(raw.one("PRAGMA user_version"), "3");
    // As the old rule wrote them: both claimed.
    ASSERT_EQ(raw.exec("UPDATE results SET gpudirect = 1"), SQLITE_OK);
  }
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  RawDb raw(dbPath());
  EXPECT_EQ(raw.one("PRAGMA user_version"), std::to_string(SqliteStore::latestSchemaVersion()));
  EXPECT_EQ(raw.one("SELECT gpudirect FROM results WHERE test_id = 't-mixed'"), "0");
  EXPECT_EQ(raw.one("SELECT gpudirect FROM results WHERE test_id = 't-h2g'"), "1");
}

// The upgrade across the fabric tables: a database a build stopped at migration 11 wrote (the
// schema before test_path_hops and fabric_snapshots), with rows in it, opened by this build:
// every later migration applies in order, the old rows read back, the new tables work.
TEST_F(SqliteStoreTest, VersionElevenDatabaseGainsTheFabricTablesAndKeepsItsRows) {
  const std::vector<SqliteMigration> v11(sqliteSchemaMigrations().begin(),
                                         sqliteSchemaMigrations().begin() + 11);
  ASSERT_EQ(v11.back().version, 11);
  SqliteStoreOptions old_build;
  old_build.migrations = &v11;
  const TestResult result = makeFullResult("t-v11");
  SweepRecord sweep;
  sweep.id = "s-v11";
  sweep.state = "finished";
  sweep.pattern = "all-pairs";
  sweep.spec_json = "{}";
  sweep.plan_json = "{}";
  sweep.created_ms = 10;
  sweep.finished_ms = 12;
  sweep.tests_total = 1;
  sweep.verdict = "PASS";
  {
    auto store = openOk(old_build);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->insertResult(result).ok());
    ASSERT_TRUE(store->createSweep(sweep).ok());
    ASSERT_TRUE(store->setHookSuspects({"link:leaf01[5]"}).ok());
    RawDb raw(dbPath());
    ASSERT_EQ(raw.one("PRAGMA user_version"), "11");
    ASSERT_EQ(raw.one("SELECT count(*) FROM sqlite_schema WHERE name IN ('test_path_hops', "
                      "'fabric_snapshots', 'fabric_findings')"),
              "0");
  }
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  RawDb raw(dbPath());
  EXPECT_EQ(raw.one("PRAGMA user_version"), std::to_string(SqliteStore::latestSchemaVersion()));
  // Every step after 11 applied: each one's tables are there.
  EXPECT_EQ(raw.one("SELECT count(*) FROM sqlite_schema WHERE name IN ('test_path_hops', "
                    "'test_path_hops_sweep', 'test_path_hops_link', 'fabric_snapshots', "
                    "'fabric_snapshots_taken_ms', 'fabric_snapshots_worker', 'fabric_findings')"),
            "7");
  // The old rows read back as they went in.
  auto got = store->getResult("t-v11");
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->initiator.worker, result.initiator.worker);
  EXPECT_EQ((*got)->target.nic, result.target.nic);
  EXPECT_EQ((*got)->measurement.bw.avg_gbps, result.measurement.bw.avg_gbps);
  EXPECT_EQ((*got)->initiator.cpu_binding, result.initiator.cpu_binding);
  auto sw = store->getSweep("s-v11");
  ASSERT_TRUE(sw.ok() && sw->has_value());
  EXPECT_EQ((*sw)->verdict, "PASS");
  EXPECT_EQ((*sw)->tests_total, 1U);
  auto suspects = store->hookSuspects();
  ASSERT_TRUE(suspects.ok());
  EXPECT_EQ(*suspects, std::set<std::string>{"link:leaf01[5]"});
  // The new tables take rows.
  PathHopRecord hop;
  hop.test_id = "t-v11";
  hop.sweep_id = "s-v11";
  hop.direction = "forward";
  hop.switch_name = "leaf01";
  hop.switch_guid = 0x1001;
  hop.in_port = 1;
  hop.out_port = 5;
  ASSERT_TRUE(store->putTestPaths({hop}).ok());
  auto path = store->testPath("t-v11");
  ASSERT_TRUE(path.ok() && path->size() == 1U);
  EXPECT_EQ(path->front().out_port, 5);
  FabricSnapshotRecord snap;
  snap.taken_ms = 20;
  snap.worker = "h1";
  snap.outcome = "skipped";
  snap.detail = "no InfiniBand device on h1";
  auto snap_id = store->recordFabricSnapshot(snap, {});
  ASSERT_TRUE(snap_id.ok()) << snap_id.status().toString();
  auto snaps = store->listFabricSnapshots(FabricSnapshotQuery{});
  ASSERT_TRUE(snaps.ok()) << snaps.status().toString();
  ASSERT_EQ(snaps->size(), 1U);
  EXPECT_EQ(snaps->front().worker, "h1");
}

// Migration 7: the verdict counts of every stored report are counted into its sweeps row, so
// `gdrmesh sweeps` shows a FAIL sweep's failing verdicts for sweeps judged before it existed;
// a report that is not JSON counts nothing (and does not stop the migration).
TEST_F(SqliteStoreTest, VersionSixReportsGiveTheirVerdictCountsToTheList) {
  const std::vector<SqliteMigration> v6(sqliteSchemaMigrations().begin(),
                                        sqliteSchemaMigrations().begin() + 6);
  SqliteStoreOptions old_build;
  old_build.migrations = &v6;
  {
    auto store = openOk(old_build);
    ASSERT_NE(store, nullptr);
    RawDb raw(dbPath());
    ASSERT_EQ(raw.one("PRAGMA user_version"), "6");
    ASSERT_EQ(raw.exec("INSERT INTO sweeps (id, state, pattern, name, spec_json, plan_json, "
                       "created_ms, started_ms, finished_ms, tests_total, reason, verdict) VALUES "
                       "('s-fail', 'finished', 'all-pairs', '', '{}', '{}', 10, 11, 12, 4, '', "
                       "'FAIL'), ('s-bad', 'finished', 'all-pairs', '', '{}', '{}', 20, 21, 22, "
                       "1, '', 'PASS'), ('s-none', 'running', 'all-pairs', '', '{}', '{}', 30, 31, "
                       "0, 2, '', '')"),
              SQLITE_OK);
    ASSERT_EQ(raw.exec("INSERT INTO sweep_reports (sweep_id, revision, report_json) VALUES "
                       "('s-fail', 1, '{\"notes\":[],\"verdicts\":[{\"verdict\":\"PASS\"},"
                       "{\"verdict\":\"FAIL\"},{\"verdict\":\"FAIL\"},{\"verdict\":"
                       "\"SKIP\"},{\"verdict\":\"FAIL\",\"retest\":true}]}'), "
                       "('s-bad', 1, 'not json')"),
              SQLITE_OK);
  }
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  auto list = store->listSweeps(0, "");
  ASSERT_TRUE(list.ok()) << list.status().toString();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[2].id, "s-fail");
  EXPECT_EQ((*list)[2].verdicts_pass, 1u);
  EXPECT_EQ((*list)[2].verdicts_fail, 3u);
  EXPECT_EQ((*list)[2].verdicts_skip, 1u);
  EXPECT_EQ((*list)[1].id, "s-bad");
  EXPECT_EQ((*list)[1].verdicts_fail, 0u);
  EXPECT_EQ((*list)[0].verdicts_pass + (*list)[0].verdicts_fail + (*list)[0].verdicts_skip, 0u);
}

// Migration 6: reports move from the sweeps row into sweep_reports; a sweep without one keeps
// none; the column is gone, so a list never walks a report's pages.
TEST_F(SqliteStoreTest, VersionFiveReportsMoveToTheirOwnTable) {
  const std::vector<SqliteMigration> v5(sqliteSchemaMigrations().begin(),
                                        sqliteSchemaMigrations().begin() + 5);
  SqliteStoreOptions old_build;
  old_build.migrations = &v5;
  const std::string report(200000, 'r');  // overflow pages, as a real report has
  {
    auto store = openOk(old_build);
    ASSERT_NE(store, nullptr);
    RawDb raw(dbPath());
    ASSERT_EQ(raw.one("PRAGMA user_version"), "5");
    ASSERT_EQ(raw.exec("INSERT INTO sweeps (id, state, pattern, name, spec_json, plan_json, "
                       "report_json, created_ms, started_ms, finished_ms, tests_total, reason, "
                       "verdict) VALUES ('s-judged', 'finished', 'all-pairs', '', '{}', '[]', '" +
                       report +
                       "', 10, 11, 12, 6, '', 'PASS'), ('s-running', 'running', 'rails', '', "
                       "'{}', '[]', '', 20, 21, 0, 4, '', '')"),
              SQLITE_OK);
  }
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  RawDb raw(dbPath());
  EXPECT_EQ(raw.one("PRAGMA user_version"), std::to_string(SqliteStore::latestSchemaVersion()));
  EXPECT_EQ(raw.one("SELECT count(*) FROM pragma_table_info('sweeps') WHERE name = "
                    "'report_json'"),
            "0");
  // Migration 10 made rows of the reports and dropped sweep_reports: the judged sweep has a
  // report (its text was not JSON: an empty one), the running one none.
  EXPECT_EQ(raw.one("SELECT count(*) FROM sqlite_schema WHERE name = 'sweep_reports'"), "0");
  auto judged = store->getSweep("s-judged");
  ASSERT_TRUE(judged.ok()) << judged.status().toString();
  ASSERT_TRUE(judged->has_value());
  EXPECT_EQ((*judged)->verdict, "PASS");
  EXPECT_EQ((*judged)->tests_total, 6u);
  auto stored = store->sweepReportSummary("s-judged");
  ASSERT_TRUE(stored.ok() && stored->has_value());
  auto none = store->sweepReportSummary("s-running");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto list = store->listSweeps(0, "");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, "s-running");
}

// Migration 7: each side's CPU binding; rows stored before it read as "" (unknown), new rows
// keep theirs.
TEST_F(SqliteStoreTest, VersionSixResultsGainAnEmptyCpuBinding) {
  const std::vector<SqliteMigration> v6(sqliteSchemaMigrations().begin(),
                                        sqliteSchemaMigrations().begin() + 6);
  SqliteStoreOptions old_build;
  old_build.migrations = &v6;
  {
    auto store = openOk(old_build);
    ASSERT_NE(store, nullptr);
    RawDb raw(dbPath());
    ASSERT_EQ(raw.one("PRAGMA user_version"), "6");
    EXPECT_EQ(raw.one("SELECT count(*) FROM pragma_table_info('results') WHERE name LIKE "
                      "'%cpu_binding'"),
              "0");
    // Today's insert names the new columns: present while the row goes in, gone before the
    // upgrade.
    for (const char* side : {"initiator", "target"}) {
      ASSERT_EQ(raw.exec(std::string("ALTER TABLE results ADD COLUMN ") + side +
                         "_cpu_binding TEXT NOT NULL DEFAULT ''"),
                SQLITE_OK);
    }
    ASSERT_TRUE(store->insertResult(makeResult("t-old", "a", "b", 1)).ok());
    for (const char* side : {"initiator", "target"}) {
      ASSERT_EQ(raw.exec(std::string("ALTER TABLE results DROP COLUMN ") + side + "_cpu_binding"),
                SQLITE_OK);
    }
  }
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  RawDb raw(dbPath());
  EXPECT_EQ(raw.one("PRAGMA user_version"), std::to_string(SqliteStore::latestSchemaVersion()));
  auto old = store->getResult("t-old");
  ASSERT_TRUE(old.ok() && old->has_value()) << old.status().toString();
  EXPECT_EQ((*old)->initiator.cpu_binding, "");
  EXPECT_EQ((*old)->target.cpu_binding, "");
  TestResult now = makeResult("t-new", "a", "b", 2);
  now.initiator.cpu_binding = "cpu 3 (numa 0, nic mlx5_0)";
  now.target.cpu_binding = "not bound: rxe0 has no readable numa_node";
  ASSERT_TRUE(store->insertResult(now).ok());
  auto got = store->getResult("t-new");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->initiator.cpu_binding, now.initiator.cpu_binding);
  EXPECT_EQ((*got)->target.cpu_binding, now.target.cpu_binding);
}

// Migration 10 on a database of schema 8: every verdict, suspect and note of the JSON reports
// becomes a row (the fields of a whole-document dump, typed as the JSON reader read them), the
// reports' table goes, and the queries of the pages use their indexes.
TEST_F(SqliteStoreTest, VersionEightReportsBecomeRows) {
  const std::vector<SqliteMigration> v8(sqliteSchemaMigrations().begin(),
                                        sqliteSchemaMigrations().begin() + 8);
  SqliteStoreOptions old_build;
  old_build.migrations = &v8;
  {
    auto store = openOk(old_build);
    ASSERT_NE(store, nullptr);
    RawDb raw(dbPath());
    ASSERT_EQ(raw.one("PRAGMA user_version"), "8");
    ASSERT_EQ(raw.exec("INSERT INTO sweeps (id, state, pattern, name, spec_json, plan_json, "
                       "created_ms, started_ms, finished_ms, tests_total, reason, verdict) VALUES "
                       "('s-a', 'finished', 'all-pairs', '', '{}', '{}', 10, 11, 12, 2, '', "
                       "'FAIL'), ('s-b', 'running', 'all-pairs', '', '{}', '{}', 20, 21, 0, 2, "
                       "'', '')"),
              SQLITE_OK);
    ASSERT_EQ(raw.exec(R"(INSERT INTO sweep_reports (sweep_id, revision, report_json) VALUES )"
                       R"(('s-a', 2, '{"notes":["n1","n2"],"suspects":[{"evidence":["e"],)"
                       R"("kind":"nic","name":"h1/mlx5_0","score":0.75}],"verdicts":[)"
                       R"({"dst":"h1/mlx5_0","mode":"lat","op":"send","reasons":["r1","r2"],)"
                       R"("retest":true,"size":4096,"src":"h0","test_id":"t-0",)"
                       R"("topo_class":"SYS","unit":"us","value":3.5,"verdict":"FAIL"},)"
                       R"({"dst":"h0","mode":"bw","op":"write","reasons":[],"retest":false,)"
                       R"("size":65536,"src":"h1/mlx5_0","test_id":"t-1","topo_class":"",)"
                       R"("unit":"Gb/s","value":null,"verdict":"PASS"}]}'))"),
              SQLITE_OK);
  }
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  RawDb raw(dbPath());
  EXPECT_EQ(raw.one("PRAGMA user_version"), std::to_string(SqliteStore::latestSchemaVersion()));
  EXPECT_EQ(raw.one("SELECT count(*) FROM sqlite_schema WHERE name = 'sweep_reports'"), "0");
  EXPECT_EQ(raw.one("SELECT group_concat(src_host || '>' || dst_host, ' ') FROM sweep_verdicts"),
            "h0>h1 h1>h0");
  VerdictQuery q;
  q.sweep_id = "s-a";
  auto rows = store->sweepVerdicts(q);
  ASSERT_TRUE(rows.ok()) << rows.status().toString();
  ASSERT_EQ(rows->size(), 2u);
  const VerdictRecord& v = (*rows)[0];
  EXPECT_EQ(v.seq, 0u);
  EXPECT_EQ(v.test_id, "t-0");
  EXPECT_EQ(v.src, "h0");
  EXPECT_EQ(v.dst, "h1/mlx5_0");
  EXPECT_EQ(v.op, Op::kSend);
  EXPECT_EQ(v.mode, Mode::kLatency);
  EXPECT_EQ(v.message_size, 4096u);
  EXPECT_EQ(v.verdict, "FAIL");
  EXPECT_EQ(v.reasons, (std::vector<std::string>{"r1", "r2"}));
  EXPECT_EQ(v.value, 3.5);
  EXPECT_EQ(v.unit, "us");
  EXPECT_EQ(v.topo_class, "SYS");
  EXPECT_TRUE(v.retest);
  EXPECT_EQ((*rows)[1].value, 0.0);  // null
  EXPECT_TRUE((*rows)[1].reasons.empty());
  EXPECT_FALSE((*rows)[1].retest);
  auto summary = store->sweepReportSummary("s-a");
  ASSERT_TRUE(summary.ok() && summary->has_value());
  EXPECT_EQ((*summary)->notes, (std::vector<std::string>{"n1", "n2"}));
  ASSERT_EQ((*summary)->suspects.size(), 1u);
  EXPECT_EQ((*summary)->suspects[0].kind, "nic");
  EXPECT_EQ((*summary)->suspects[0].score, 0.75);
  EXPECT_EQ((*summary)->suspects[0].evidence, std::vector<std::string>{"e"});
  EXPECT_EQ((*summary)->figures_json, "");  // summed up when first read
  auto none = store->sweepReportSummary("s-b");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  // The failing page from the partial index; a pair and a host from theirs.
  VerdictQuery failing;
  failing.sweep_id = "s-a";
  failing.verdict = "FAIL";
  auto plan = store->explainSweepVerdictsForTesting(failing);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_THAT(*plan, ::testing::Contains(::testing::HasSubstr("sweep_verdicts_fail")));
  VerdictQuery pair;
  pair.sweep_id = "s-a";
  pair.src_host = "h0";
  pair.dst_host = "h1";
  plan = store->explainSweepVerdictsForTesting(pair);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(*plan, ::testing::Contains(::testing::HasSubstr("sweep_verdicts_src")));
  VerdictQuery host;
  host.sweep_id = "s-a";
  host.host = "h1";
  plan = store->explainSweepVerdictsForTesting(host);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(*plan, ::testing::Contains(::testing::HasSubstr("sweep_verdicts_src")));
  EXPECT_THAT(*plan, ::testing::Contains(::testing::HasSubstr("sweep_verdicts_dst")));
}

TEST_F(SqliteStoreTest, RowsOfVersionOneReadBackWithPlanIndexMinusOne) {
  const std::vector<SqliteMigration> v1(sqliteSchemaMigrations().begin(),
                                        sqliteSchemaMigrations().begin() + 1);
  SqliteStoreOptions old_build;
  old_build.migrations = &v1;
  {
    auto store = openOk(old_build);
    ASSERT_NE(store, nullptr);
    RawDb raw(dbPath());
    // Every NOT NULL column of v1 gets a value; a v1 row has no plan_index.
    std::string cols, values;
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(dbPath().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "SELECT name, type FROM pragma_table_info('results') "
                                 "WHERE name <> 'id'",
                                 -1, &st, nullptr),
              SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
      const std::string name = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      const std::string type = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
      if (!cols.empty()) {
        cols += ", ";
        values += ", ";
      }
      cols += name;
      if (name == "test_id") {
        values += "'t-old'";
      } else if (name == "op") {
        values += "'write'";
      } else if (name == "mode") {
        values += "'bw'";
      } else if (name == "transport") {
        values += "'verbs'";
      } else if (name.find("memory") != std::string::npos) {
        values += "'host'";
      } else if (name.find("reg_path") != std::string::npos) {
        values += "'host'";
      } else if (name == "status") {
        values += "'PASSED'";
      } else if (type == "TEXT") {
        values += "''";
      } else {
        values += "0";
      }
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    ASSERT_EQ(raw.exec("INSERT INTO results (" + cols + ") VALUES (" + values + ")"), SQLITE_OK)
        << raw.lastError();
  }
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  auto got = store->getResult("t-old");
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->plan_index, -1);
}

// ---------------------------------------------------------------------------------------------
// Query plans: every queryResults filter combination reads rows in ORDER BY order from an index.

TEST_F(SqliteStoreTest, QueryResultsNeverSortsTheMatchingRows) {
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < 50; ++i) {
    TestResult r = makeResult(
        "t" + std::to_string(i), "w" + std::to_string(i % 5), "w" + std::to_string(i % 7), i,
        i % 3 ? TestStatus::kPassed : TestStatus::kFailed, "r" + std::to_string(i % 4));
    r.initiator.reg_path = r.target.reg_path = RegPath::kHost;
    ASSERT_TRUE(store->insertResult(r).ok());
  }
  for (int mask = 0; mask < 16; ++mask) {
    ResultQuery q;
    if (mask & 1) q.worker = "w1";
    if (mask & 2) q.status = TestStatus::kFailed;
    if (mask & 4) q.run_id = "r1";
    if (mask & 8) q.since_ms = 10;
    auto plan = store->explainQueryResultsForTesting(q);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    std::string text;
    for (const std::string& line : *plan) text += line + "\n";
    SCOPED_TRACE("filters " + std::to_string(mask) + ":\n" + text);
    EXPECT_THAT(text, Not(HasSubstr("TEMP B-TREE")));
    EXPECT_THAT(text, HasSubstr("USING INDEX"));
    EXPECT_THAT(text, Not(HasSubstr("SCAN results\n")));  // never a full table scan
  }
  // The worker filter lists a test from a worker to itself once (the UNION ALL halves exclude
  // each other); checked on data in the contract suite, here on a plan that has two halves.
  ResultQuery worker;
  worker.worker = "w1";
  auto plan = store->explainQueryResultsForTesting(worker);
  ASSERT_TRUE(plan.ok());
  std::string text;
  for (const std::string& line : *plan) text += line + "\n";
  EXPECT_THAT(text, HasSubstr("results_initiator_started"));
  EXPECT_THAT(text, HasSubstr("results_target_started"));
}

// A sweep's rows in plan order, page by page (GetSweep's results): from results_run_plan_status;
// ties on plan_index broken by the row id; the keyset resumes exactly after a page.
TEST_F(SqliteStoreTest, PlanOrderPagesWalkOneSweepInPlanOrder) {
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  std::vector<std::string> want;
  for (int i = 0; i < 30; ++i) {
    // Inserted out of plan order, two rows at plan index 7 (a retest stored under it), and a
    // row of another run between them.
    const int plan = (i * 11) % 29;
    TestResult r = makeResult("t" + std::to_string(i), "w1", "w2", i, TestStatus::kPassed, "run-a");
    r.plan_index = plan;
    ASSERT_TRUE(store->insertResult(r).ok());
    TestResult other =
        makeResult("o" + std::to_string(i), "w1", "w2", i, TestStatus::kPassed, "run-b");
    other.plan_index = plan;
    ASSERT_TRUE(store->insertResult(other).ok());
  }
  ResultQuery all;
  all.run_id = "run-a";
  all.plan_order = true;
  all.limit = 0;
  auto whole = store->queryResults(all);
  ASSERT_TRUE(whole.ok()) << whole.status().toString();
  ASSERT_EQ(whole->size(), 30u);
  for (size_t i = 1; i < whole->size(); ++i) {
    const auto& a = (*whole)[i - 1];
    const auto& b = (*whole)[i];
    EXPECT_TRUE(a.plan_index < b.plan_index || (a.plan_index == b.plan_index && a.id < b.id)) << i;
    EXPECT_EQ(b.run_id, "run-a");
  }
  std::vector<std::string> paged;
  ResultQuery q = all;
  q.limit = 4;
  for (int pages = 0; pages < 20; ++pages) {
    auto page = store->queryResults(q);
    ASSERT_TRUE(page.ok()) << page.status().toString();
    for (const auto& r : *page) paged.push_back(r.test_id);
    if (page->size() < q.limit) break;
    q.after_plan_index = page->back().plan_index;
    q.after_id = page->back().id;
  }
  std::vector<std::string> whole_ids;
  for (const auto& r : *whole) whole_ids.push_back(r.test_id);
  EXPECT_EQ(paged, whole_ids);
  auto plan = store->explainQueryResultsForTesting(all);
  ASSERT_TRUE(plan.ok());
  std::string text;
  for (const std::string& line : *plan) text += line + "\n";
  // The index gives plan order; only rows that share a plan index are sorted by id (the
  // "right part"), never the whole sweep.
  EXPECT_THAT(text, HasSubstr("USING INDEX results_run_plan_status"));
  EXPECT_THAT(text, Not(HasSubstr("TEMP B-TREE FOR ORDER BY")));
  ResultQuery no_run;
  no_run.plan_order = true;
  auto refused = store->queryResults(no_run);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("run_id"));
}

TEST_F(SqliteStoreTest, HistoryAndCountQueriesUseTheirIndexes) {
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  auto text = [](const Result<std::vector<std::string>>& plan) {
    EXPECT_TRUE(plan.ok()) << plan.status().toString();
    std::string out;
    if (plan.ok()) {
      for (const std::string& line : *plan) out += line + "\n";
    }
    return out;
  };
  for (int mask = 0; mask < 16; ++mask) {
    HistoryQuery q;
    q.src = "a";
    q.dst = "b";
    if (mask & 1) q.message_size = 4096;
    if (mask & 2) q.op = Op::kRead;
    if (mask & 4) q.mode = Mode::kLatency;
    if (mask & 8) q.both_directions = false;
    const std::string plan = text(store->explainQueryHistoryForTesting(q));
    SCOPED_TRACE("history filters " + std::to_string(mask) + ":\n" + plan);
    EXPECT_THAT(plan, HasSubstr("results_pair_started"));
    EXPECT_THAT(plan, Not(HasSubstr("TEMP B-TREE")));
    EXPECT_THAT(plan, Not(HasSubstr("SCAN results\n")));
  }
  for (int mask = 0; mask < 8; ++mask) {
    ResultQuery q;
    if (mask & 1) q.worker = "w1";
    if (mask & 2) q.status = TestStatus::kFailed;
    if (mask & 4) q.run_id = "r1";
    const std::string plan = text(store->explainCountResultsForTesting(q));
    SCOPED_TRACE("count filters " + std::to_string(mask) + ":\n" + plan);
    EXPECT_THAT(plan, HasSubstr("USING"));
    EXPECT_THAT(plan, Not(HasSubstr("TEMP B-TREE")));
  }
}

TEST_F(SqliteStoreTest, SweepAndScheduleQueriesUseTheirIndexes) {
  { ASSERT_NE(openOk(), nullptr); }
  RawDb raw(dbPath());
  auto plan = [&](const std::string& sql) {
    std::string out;
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(dbPath().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + sql).c_str(), -1, &st, nullptr),
              SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
      out += reinterpret_cast<const char*>(sqlite3_column_text(st, 3));
      out += "\n";
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  };
  // The statements SqliteStore runs (same text).
  EXPECT_THAT(plan("SELECT rowid FROM sweeps ORDER BY created_ms DESC, rowid DESC LIMIT 5"),
              AllOf(HasSubstr("sweeps_created_ms"), Not(HasSubstr("TEMP B-TREE"))));
  EXPECT_THAT(plan("SELECT rowid FROM sweeps WHERE state = ?1 ORDER BY created_ms DESC, rowid "
                   "DESC LIMIT 5"),
              AllOf(HasSubstr("sweeps_state_created_ms"), Not(HasSubstr("TEMP B-TREE"))));
  EXPECT_THAT(plan("SELECT due_ms FROM schedule_runs WHERE schedule = ?1 ORDER BY due_ms DESC, "
                   "id DESC LIMIT ?2"),
              AllOf(HasSubstr("schedule_runs_schedule_due"), Not(HasSubstr("TEMP B-TREE"))));
  EXPECT_THAT(plan("SELECT st.plan_index FROM sweep_test_starts st WHERE st.sweep_id = ?1 AND "
                   "NOT EXISTS (SELECT 1 FROM results r WHERE r.run_id = st.sweep_id AND "
                   "r.plan_index = st.plan_index) ORDER BY st.plan_index"),
              AllOf(HasSubstr("results_run_plan_status"), Not(HasSubstr("TEMP B-TREE"))));
  // A sweep's counts from the covering index alone; pair history and the retention batch
  // straight from their indexes.
  EXPECT_THAT(plan("SELECT count(DISTINCT CASE WHEN plan_index >= 0 AND plan_index < ?2 THEN "
                   "plan_index END), total(status IN ('FAILED', 'ERROR')), "
                   "total(status = 'SKIPPED'), count(*) FROM results WHERE run_id = ?1"),
              HasSubstr("USING COVERING INDEX results_run_plan_status"));
  EXPECT_THAT(plan("SELECT id FROM results WHERE initiator_worker = ?1 AND target_worker = ?2 "
                   "ORDER BY started_ms DESC, id DESC LIMIT 50"),
              AllOf(HasSubstr("results_pair_started"), Not(HasSubstr("TEMP B-TREE"))));
  EXPECT_THAT(plan("SELECT src FROM sweep_aggregates WHERE src = ?1 AND dst = ?2 AND "
                   "started_ms < ?3 ORDER BY started_ms DESC LIMIT ?4"),
              AllOf(HasSubstr("sweep_aggregates_pair"), Not(HasSubstr("TEMP B-TREE"))));
  EXPECT_THAT(plan("SELECT id FROM results WHERE started_ms < ?1 ORDER BY started_ms LIMIT ?2"),
              AllOf(HasSubstr("results_started_ms"), Not(HasSubstr("TEMP B-TREE"))));
}

// ---------------------------------------------------------------------------------------------
// Reads never block writes.

// Counts down once; waiters give up after a bound (a failing test, never a hang).
class Latch {
 public:
  void open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  bool waitFor(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST_F(SqliteStoreTest, ALongReadDoesNotHoldUpInserts) {
  Latch reading, inserted;
  bool insert_seen_during_read = false;
  bool first_row = true;
  SqliteStoreOptions options;
  // Runs on the reader thread, inside queryResults, with its statement open.
  options.on_query_row_for_testing = [&] {
    if (!first_row) return;
    first_row = false;
    reading.open();
    insert_seen_during_read = inserted.waitFor(std::chrono::seconds(20));
  };
  auto store = openOk(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->hasSeparateReader());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(store->insertResult(makeResult("before" + std::to_string(i), "a", "b", i)).ok());
  }

  Result<std::vector<TestResult>> read = std::vector<TestResult>();
  std::thread reader([&] { read = store->queryResults(ResultQuery{}); });
  ASSERT_TRUE(reading.waitFor(std::chrono::seconds(20))) << "the query never read a row";
  // The reader is parked mid-query. A write (and a batch) must go through now.
  auto id = store->insertResult(makeResult("during", "a", "b", 100));
  auto ids = store->insertResults({makeResult("during-batch", "a", "b", 101)});
  inserted.open();
  reader.join();
  ASSERT_TRUE(id.ok()) << id.status().toString();
  ASSERT_TRUE(ids.ok()) << ids.status().toString();
  EXPECT_TRUE(insert_seen_during_read) << "insertResult waited for the reader";
  // The read is one snapshot: it does not see the rows committed while it ran.
  ASSERT_TRUE(read.ok()) << read.status().toString();
  EXPECT_EQ(read->size(), 3u);
  auto after = store->queryResults(ResultQuery{});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size(), 5u);
}

TEST_F(SqliteStoreTest, InMemoryDatabaseHasOneConnectionForBoth) {
  auto s = SqliteStore::open(":memory:");
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_FALSE((*s)->hasSeparateReader());
  ASSERT_TRUE((*s)->insertResults({makeResult("m1", "a", "b", 1)}).ok());
  auto got = (*s)->getResult("m1");
  ASSERT_TRUE(got.ok() && got->has_value());
}

TEST_F(SqliteStoreTest, FullDiskFailsTheWholeBatchAndRecovers) {
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->insertResult(makeResult("t-before", "a", "b", 1)).ok());
  auto pages = store->pageCountForTesting();
  ASSERT_TRUE(pages.ok()) << pages.status().toString();
  ASSERT_TRUE(store->setMaxPageCountForTesting(*pages).ok());

  std::vector<TestResult> batch;
  for (int i = 0; i < 8; ++i) {
    TestResult r = makeResult("t-big" + std::to_string(i), "a", "b", 2 + i);
    r.reason = std::string(64 * 1024, 'x');
    batch.push_back(r);
  }
  auto ids = store->insertResults(batch);
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), Code::kResourceExhausted) << ids.status().toString();
  EXPECT_THAT(ids.status().message(), HasSubstr("database disk is full"));
  EXPECT_THAT(ids.status().message(), HasSubstr("none of the 8 was stored"));
  ResultQuery all;
  all.limit = 0;
  auto rows = store->queryResults(all);
  ASSERT_TRUE(rows.ok()) << rows.status().toString();
  EXPECT_EQ(rows->size(), 1u);

  ASSERT_TRUE(store->setMaxPageCountForTesting(1 << 20).ok());
  ids = store->insertResults(batch);
  ASSERT_TRUE(ids.ok()) << ids.status().toString();
  rows = store->queryResults(all);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 9u);
}

// ---------------------------------------------------------------------------------------------
// Single tests in flight (issue #9): a marker while the test runs, so a restart can record it.

TEST_F(SqliteStoreTest, ATestMarkedStartedIsUnfinishedUntilItsResultIsStored) {
  auto store = openOk();
  ASSERT_NE(store, nullptr);
  TestResult started = makeResult("t-run", "a", "b", 5);
  started.message_size = 4096;
  started.iterations = 7;
  started.initiator.host = "host-a";
  ASSERT_TRUE(store->markTestStarted(started).ok());
  ASSERT_TRUE(store->markTestStarted(makeResult("t-other", "c", "d", 6)).ok());
  auto open = store->unfinishedTests();
  ASSERT_TRUE(open.ok()) << open.status().toString();
  ASSERT_EQ(open->size(), 2u);
  EXPECT_EQ((*open)[0].test_id, "t-run");  // oldest first
  EXPECT_EQ((*open)[0].initiator.worker, "a");
  EXPECT_EQ((*open)[0].initiator.host, "host-a");
  EXPECT_EQ((*open)[0].target.worker, "b");
  EXPECT_EQ((*open)[0].message_size, 4096u);
  EXPECT_EQ((*open)[0].iterations, 7u);
  EXPECT_EQ((*open)[0].started_ms, 5);

  // A stored result closes it even before the marker is cleared (a crash in between).
  ASSERT_TRUE(store->insertResult(makeResult("t-run", "a", "b", 5)).ok());
  open = store->unfinishedTests();
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 1u);
  EXPECT_EQ((*open)[0].test_id, "t-other");
  ASSERT_TRUE(store->clearTestStarted("t-other").ok());
  ASSERT_TRUE(store->clearTestStarted("t-never-marked").ok());
  open = store->unfinishedTests();
  ASSERT_TRUE(open.ok());
  EXPECT_TRUE(open->empty());
  EXPECT_EQ(store->markTestStarted(TestResult{}).code(), Code::kInvalidArgument);
}

// The spool is the result writer's (result_spool_test.cc).

}  // namespace
}  // namespace gdrmesh::testing
