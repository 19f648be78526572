// SqliteStore: the contract suite instantiated on a temp-file database, and the SQLite-specific
// behaviour (WAL, schema versions and migrations, error paths, full disk).
#include "coordinator/store/sqlite_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "tests/unit/store/store_contract_test.h"
#include "tests/unit/store/temp_dir.h"

namespace gdrmesh::testing {
namespace {

using ::testing::HasSubstr;

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
  for (const char* index : {"results_started_ms", "results_run_id", "results_status",
                            "results_initiator_worker", "results_target_worker"}) {
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

}  // namespace
}  // namespace gdrmesh::testing
