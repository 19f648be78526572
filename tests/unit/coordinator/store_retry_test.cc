// A result the store refuses (disk full) is kept by the coordinator, listed, and written as soon
// as the store accepts it again: nothing is lost while the process lives.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "coordinator/service/coordinator_server.h"
#include "coordinator/store/sqlite_store.h"

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
  Result<std::optional<TestResult>> getResult(const std::string&) override {
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
  Status spoolResult(const TestResult&) override { return {}; }
  Result<SpoolReplay> replaySpool() override { return SpoolReplay(); }
  size_t stored() {
    std::lock_guard<std::mutex> lock(mu_);
    return rows_.size();
  }

 private:
  std::mutex mu_;
  std::vector<TestResult> rows_;
};

TestResult result(const std::string& id) {
  TestResult r;
  r.test_id = id;
  r.status = TestStatus::kPassed;
  r.initiator.reg_path = r.target.reg_path = RegPath::kHost;
  return r;
}

TEST(CoordinatorStoreRetry, RefusedResultsAreKeptAndWrittenWhenTheStoreRecovers) {
  FlakyStore store;
  CoordinatorOptions opts;
  opts.listen = "127.0.0.1:0";
  opts.heartbeat_interval_ms = 50;  // the retry runs on the monitor's tick
  auto sweeps = SqliteStore::open(":memory:");
  ASSERT_TRUE(sweeps.ok());
  SystemClock clock;
  CoordinatorServer server(opts, store, **sweeps, clock);
  ASSERT_TRUE(server.start().ok());

  TestResult a = result("t-a"), b = result("t-b");
  Status sa = server.storeResult(a);
  Status sb = server.storeResult(b);
  EXPECT_EQ(sa.code(), Code::kResourceExhausted);
  EXPECT_NE(sa.message().find("disk is full"), std::string::npos);
  EXPECT_EQ(sb.code(), Code::kResourceExhausted);
  ASSERT_EQ(server.unstored().size(), 2u);
  EXPECT_EQ(server.unstored().front().test_id, "t-b");  // newest first, as queries list
  EXPECT_EQ(store.stored(), 0u);

  store.full.store(false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!server.unstored().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(server.unstored().empty()) << "the monitor did not retry the refused results";
  ASSERT_EQ(store.stored(), 2u);
  auto rows = store.queryResults(ResultQuery());
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].test_id, "t-a");  // written in the order they were produced
  EXPECT_EQ((*rows)[1].test_id, "t-b");
  server.shutdown();
}

}  // namespace
}  // namespace gdrmesh
