// A result the store refuses (disk full) is spooled, kept by the coordinator's result writer,
// listed, and written once the store accepts it again. Time is a ManualClock: no sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <string>

#include "coordinator/service/coordinator_server.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh {
namespace {

// A store whose inserts fail with "disk full" until told otherwise.
class FlakyStore final : public ResultStore {
 public:
  std::atomic<bool> full{true};
  Result<int64_t> insertResult(const TestResult& r) override {
    if (full.load()) {
      return Status(Code::kResourceExhausted, "database disk is full: test.db", "free space");
    }
    std::lock_guard<std::mutex> lock(mu_);
    rows_.push_back(r);
    return static_cast<int64_t>(rows_.size());
  }
  Result<std::vector<int64_t>> insertResults(const std::vector<TestResult>& rs) override {
    if (full.load()) {
      return Status(Code::kResourceExhausted, "database disk is full: test.db", "free space");
    }
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int64_t> ids;
    for (const TestResult& r : rs) {
      rows_.push_back(r);
      ids.push_back(static_cast<int64_t>(rows_.size()));
    }
    return ids;
  }
  Result<std::vector<TestResult>> queryResults(const ResultQuery&) override {
    std::lock_guard<std::mutex> lock(mu_);
    return rows_;
  }
  Result<std::optional<TestResult>> getResult(const std::string& test_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const TestResult& r : rows_) {
      if (r.test_id == test_id) return std::optional<TestResult>(r);
    }
    return std::optional<TestResult>();
  }
  Status upsertWorker(const WorkerRecord&) override { return {}; }
  Result<std::vector<WorkerRecord>> listWorkers() override { return std::vector<WorkerRecord>(); }
  Result<bool> removeWorker(const std::string&) override { return false; }
  Result<uint64_t> countResults(const ResultQuery&) override {
    std::lock_guard<std::mutex> lock(mu_);
    return uint64_t{rows_.size()};
  }
  Result<std::vector<TestResult>> queryHistory(const HistoryQuery&) override {
    return unimplemented("FlakyStore keeps no history");
  }
  Result<uint64_t> deleteResultsBefore(int64_t, uint32_t) override {
    return unimplemented("retention is not part of this fake");
  }
  Status markTestStarted(const TestResult&) override { return {}; }
  Status clearTestStarted(const std::string&) override { return {}; }
  Result<std::vector<TestResult>> unfinishedTests() override { return std::vector<TestResult>(); }
  size_t stored() {
    std::lock_guard<std::mutex> lock(mu_);
    return rows_.size();
  }

 private:
  std::mutex mu_;
  std::vector<TestResult> rows_;
};

// The lines of a file (0 when there is none).
size_t linesOf(const std::string& path) {
  std::ifstream f(path);
  size_t n = 0;
  for (std::string line; std::getline(f, line);) ++n;
  return n;
}

TestResult result(const std::string& id) {
  TestResult r;
  r.test_id = id;
  r.status = TestStatus::kPassed;
  r.initiator.reg_path = r.target.reg_path = RegPath::kHost;
  return r;
}

TEST(CoordinatorStoreRetry, RefusedResultsAreKeptAndWrittenWhenTheStoreRecovers) {
  FlakyStore store;
  testing::TempDir dir;
  ASSERT_TRUE(dir.ok());
  CoordinatorOptions opts;
  opts.listen = "127.0.0.1:0";
  opts.spool_path = dir.file("test.db.spool");
  auto sweeps = SqliteStore::open(":memory:");
  ASSERT_TRUE(sweeps.ok());
  ManualClock clock;  // the writer's backoff moves only with it
  CoordinatorServer server(opts, store, **sweeps, clock);

  TestResult a = result("t-a"), b = result("t-b");
  Status sa = server.storeResult(a);
  Status sb = server.storeResult(b);
  EXPECT_EQ(sa.code(), Code::kResourceExhausted);
  EXPECT_NE(sa.message().find("disk is full"), std::string::npos);
  EXPECT_NE(sa.message().find("durable in the spool"), std::string::npos) << sa.toString();
  EXPECT_EQ(sa.fix(), "free space");
  EXPECT_EQ(sb.code(), Code::kResourceExhausted);
  ASSERT_EQ(server.unstored().size(), 2u);
  EXPECT_EQ(server.unstored().front().test_id, "t-b");  // newest first, as queries list
  EXPECT_EQ(store.stored(), 0u);
  EXPECT_EQ(linesOf(opts.spool_path), 2u) << "a held result is durable (spooled) before the answer";

  store.full.store(false);
  // The retry is the result writer's, after its backoff on the injected clock (at most 2 s);
  // shutdown() waits for every held result to be stored.
  clock.advanceSeconds(2);
  server.shutdown();
  EXPECT_TRUE(server.unstored().empty()) << "the refused results were not retried";
  ASSERT_EQ(store.stored(), 2u) << "stored exactly once each";
  auto rows = store.queryResults(ResultQuery());
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].test_id, "t-a");  // written in the order they were produced
  EXPECT_EQ((*rows)[1].test_id, "t-b");
  EXPECT_FALSE(std::ifstream(opts.spool_path).good())
      << "the spool is replayed (and removed) once all is stored";
}

}  // namespace
}  // namespace gdrmesh
