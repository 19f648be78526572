// ResultWriter: batching, flush, order, a full disk and recovery, refused rows, shutdown.
#include "coordinator/store/result_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/store/sqlite_store.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/store/store_contract_test.h"

namespace gdrmesh::testing {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr auto kBound = seconds(20);  // a wait that ends the test, never a hang

// A ResultStore in front of a real one: records each insertResults batch size, can hold
// insertResults at a gate, and can refuse every write as a full disk.
class RecordingStore final : public ResultStore {
 public:
  explicit RecordingStore(ResultStore& inner) : inner_(inner) {}

  Result<int64_t> insertResult(const TestResult& r) override {
    if (full_.load()) return fullDisk();
    return inner_.insertResult(r);
  }
  Result<std::vector<int64_t>> insertResults(const std::vector<TestResult>& rs) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      batches_.push_back(rs.size());
      ++entered_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return !held_; });
    }
    if (full_.load()) return fullDisk();
    return inner_.insertResults(rs);
  }
  Result<std::vector<TestResult>> queryResults(const ResultQuery& q) override {
    return inner_.queryResults(q);
  }
  Result<std::optional<TestResult>> getResult(const std::string& id) override {
    return inner_.getResult(id);
  }
  Status upsertWorker(const WorkerRecord& w) override { return inner_.upsertWorker(w); }
  Result<std::vector<WorkerRecord>> listWorkers() override { return inner_.listWorkers(); }
  Result<bool> removeWorker(const std::string& n) override { return inner_.removeWorker(n); }
  Result<uint64_t> countResults(const ResultQuery& q) override { return inner_.countResults(q); }
  Result<std::vector<TestResult>> queryHistory(const HistoryQuery& q) override {
    return inner_.queryHistory(q);
  }
  Result<uint64_t> deleteResultsBefore(int64_t cutoff_ms, uint32_t max_rows) override {
    return inner_.deleteResultsBefore(cutoff_ms, max_rows);
  }
  Status markTestStarted(const TestResult& t) override { return inner_.markTestStarted(t); }
  Status clearTestStarted(const std::string& id) override { return inner_.clearTestStarted(id); }
  Result<std::vector<TestResult>> unfinishedTests() override { return inner_.unfinishedTests(); }

  void hold() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = true;
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_ = false;
    }
    cv_.notify_all();
  }
  bool waitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kBound, [&] { return entered_ >= n; });
  }
  void setFull(bool full) { full_.store(full); }
  std::vector<size_t> batches() {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }

 private:
  static Status fullDisk() {
    return Status(Code::kResourceExhausted, "database disk is full: test.db", "free space");
  }
  ResultStore& inner_;
  std::atomic<bool> full_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  int entered_ = 0;
  std::vector<size_t> batches_;
};

// What the on_stored callbacks reported, in call order.
class Reports {
 public:
  ResultWriter::OnStored on(const std::string& test_id) {
    return [this, test_id](Result<int64_t> r) {
      std::lock_guard<std::mutex> lock(mu_);
      if (r.ok()) {
        ids_.push_back(test_id);
        row_ids_.push_back(*r);
      } else {
        errors_.push_back(test_id + ": " + r.status().toString());
        codes_.push_back(r.status().code());
      }
      cv_.notify_all();
    };
  }
  bool waitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kBound, [&] { return ids_.size() + errors_.size() >= n; });
  }
  std::vector<std::string> stored() {
    std::lock_guard<std::mutex> lock(mu_);
    return ids_;
  }
  std::vector<int64_t> rowIds() {
    std::lock_guard<std::mutex> lock(mu_);
    return row_ids_;
  }
  std::vector<std::string> errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }
  std::vector<Code> codes() {
    std::lock_guard<std::mutex> lock(mu_);
    return codes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> ids_;
  std::vector<int64_t> row_ids_;
  std::vector<std::string> errors_;
  std::vector<Code> codes_;
};

TestResult row(const std::string& id, int64_t started_ms = 1) {
  TestResult r = makeResult(id, "a", "b", started_ms);
  r.initiator.reg_path = r.target.reg_path = RegPath::kHost;
  return r;
}

class ResultWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = SqliteStore::open(":memory:");
    ASSERT_TRUE(s.ok()) << s.status().toString();
    sqlite_ = std::move(s).value();
    store_ = std::make_unique<RecordingStore>(*sqlite_);
  }
  size_t storedRows() {
    ResultQuery all;
    all.limit = 0;
    auto r = sqlite_->queryResults(all);
    EXPECT_TRUE(r.ok()) << r.status().toString();
    return r.ok() ? r->size() : 0;
  }
  std::unique_ptr<SqliteStore> sqlite_;
  std::unique_ptr<RecordingStore> store_;
  ManualClock clock_;  // the batch delay and the backoff move only when a test says so
};

ResultWriter::Options slow(size_t max_batch) {
  ResultWriter::Options o;
  o.max_batch = max_batch;
  o.max_delay_ms = 3600 * 1000;  // only a full batch, a flush or the destructor writes
  return o;
}

TEST_F(ResultWriterTest, FullBatchesAreWrittenAtOnceTheRestOnFlush) {
  Reports reports;
  ResultWriter writer(*store_, clock_, slow(4));
  for (int i = 0; i < 10; ++i) {
    const std::string id = "t" + std::to_string(i);
    writer.submit(row(id), reports.on(id));
  }
  ASSERT_TRUE(reports.waitFor(8)) << "the two full batches were not written";
  EXPECT_EQ(storedRows(), 8u);  // the last 2 wait for companions (an hour)
  writer.flush();
  EXPECT_EQ(writer.pending(), 0u);
  EXPECT_THAT(store_->batches(), ElementsAre(4u, 4u, 2u));
  EXPECT_EQ(reports.stored().size(), 10u);
  EXPECT_EQ(storedRows(), 10u);
  EXPECT_TRUE(writer.lastError().ok());
}

TEST_F(ResultWriterTest, APartialBatchIsWrittenAfterMaxDelay) {
  Reports reports;
  ResultWriter::Options o;
  o.max_batch = 256;
  o.max_delay_ms = 3600 * 1000;
  ResultWriter writer(*store_, clock_, o);
  for (int i = 0; i < 3; ++i) writer.submit(row("t" + std::to_string(i)), reports.on("t"));
  clock_.advanceSeconds(3600);  // the delay is a timer on the injected clock
  ASSERT_TRUE(reports.waitFor(3)) << "no flush, and max_delay did not write the rows";
  EXPECT_EQ(storedRows(), 3u);
}

TEST_F(ResultWriterTest, SubmitNeverWaitsForTheStore) {
  Reports reports;
  store_->hold();  // the writer thread will sit inside insertResults
  ResultWriter writer(*store_, clock_, slow(8));
  for (int i = 0; i < 8; ++i) writer.submit(row("a" + std::to_string(i)), reports.on("a"));
  ASSERT_TRUE(store_->waitEntered(1));
  // The writer is stuck in the store; submitting goes on regardless.
  for (int i = 0; i < 1000; ++i) writer.submit(row("b" + std::to_string(i)), reports.on("b"));
  EXPECT_EQ(writer.pending(), 1008u);
  EXPECT_EQ(storedRows(), 0u);
  store_->release();
  writer.flush();
  EXPECT_EQ(writer.pending(), 0u);
  EXPECT_EQ(storedRows(), 1008u);
  EXPECT_EQ(reports.stored().size(), 1008u);
}

TEST_F(ResultWriterTest, RowsAndCallbacksKeepSubmitOrder) {
  Reports reports;
  constexpr int kRows = 1000;
  {
    ResultWriter::Options o;
    o.max_batch = 7;
    o.max_delay_ms = 1;
    ResultWriter writer(*store_, clock_, o);
    for (int i = 0; i < kRows; ++i) {
      const std::string id = "t" + std::to_string(i);
      writer.submit(row(id, i), reports.on(id));
    }
    writer.flush();
  }
  const std::vector<std::string> stored = reports.stored();
  const std::vector<int64_t> row_ids = reports.rowIds();
  ASSERT_EQ(stored.size(), size_t{kRows});
  for (int i = 0; i < kRows; ++i) {
    ASSERT_EQ(stored[i], "t" + std::to_string(i));
    if (i > 0) {
      ASSERT_GT(row_ids[i], row_ids[i - 1]) << "row " << i;
    }
  }
  // The ids the callbacks got are the rows' ids in the store.
  auto got = sqlite_->getResult("t500");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->id, row_ids[500]);
  for (size_t b : store_->batches()) EXPECT_LE(b, 7u);
}

TEST_F(ResultWriterTest, ManyProducersLoseNothing) {
  Reports reports;
  constexpr int kThreads = 8;
  constexpr int kPerThread = 250;
  {
    ResultWriter writer(*store_, clock_, ResultWriter::Options());
    std::vector<std::thread> producers;
    for (int t = 0; t < kThreads; ++t) {
      producers.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          const std::string id = "p" + std::to_string(t) + "-" + std::to_string(i);
          writer.submit(row(id, i), reports.on(id));
        }
      });
    }
    for (auto& p : producers) p.join();
  }  // the destructor flushes
  EXPECT_EQ(storedRows(), size_t{kThreads * kPerThread});
  EXPECT_EQ(reports.stored().size(), size_t{kThreads * kPerThread});
  // Each producer's rows in its own order.
  std::vector<int> next(kThreads, 0);
  for (const std::string& id : reports.stored()) {
    const int t = std::stoi(id.substr(1, id.find('-') - 1));
    const int i = std::stoi(id.substr(id.find('-') + 1));
    ASSERT_EQ(i, next[t]) << id;
    ++next[t];
  }
}

TEST_F(ResultWriterTest, DestructorWritesWhatIsQueued) {
  Reports reports;
  {
    ResultWriter writer(*store_, clock_, slow(256));
    for (int i = 0; i < 5; ++i) writer.submit(row("t" + std::to_string(i)), reports.on("t"));
  }
  EXPECT_EQ(storedRows(), 5u);
  EXPECT_EQ(reports.stored().size(), 5u);
}

TEST_F(ResultWriterTest, ARefusedRowIsReportedAndTheRestOfItsBatchStored) {
  ASSERT_TRUE(sqlite_->insertResult(row("taken")).ok());
  Reports reports;
  ResultWriter writer(*store_, clock_, slow(256));
  for (const char* id : {"t0", "taken", "t2", "", "t4"}) writer.submit(row(id), reports.on(id));
  writer.flush();
  EXPECT_THAT(reports.stored(), ElementsAre("t0", "t2", "t4"));
  ASSERT_EQ(reports.errors().size(), 2u);
  EXPECT_THAT(reports.errors()[0], HasSubstr("taken"));
  EXPECT_THAT(reports.codes(), ElementsAre(Code::kInvalidArgument, Code::kInvalidArgument));
  EXPECT_EQ(storedRows(), 4u);
  EXPECT_EQ(writer.pending(), 0u);
}

// The real thing: a SQLite file whose "disk" fills up, then frees.
TEST(ResultWriterDiskTest, AFullDiskKeepsRowsQueuedUntilSpaceReturns) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto opened = SqliteStore::open(dir.file("full.db"));
  ASSERT_TRUE(opened.ok()) << opened.status().toString();
  SqliteStore& store = **opened;
  ASSERT_TRUE(store.insertResult(row("t-before")).ok());
  auto pages = store.pageCountForTesting();
  ASSERT_TRUE(pages.ok());
  ASSERT_TRUE(store.setMaxPageCountForTesting(*pages).ok());

  std::mutex mu;
  std::condition_variable cv;
  int failures = 0;
  Status seen;
  size_t pending_at_failure = 0;
  ManualClock clock;
  ResultSpool spool(ResultSpool::spoolPathFor(store.path()));
  ResultWriter::Options o = slow(256);
  o.spool = &spool;
  o.min_backoff_ms = 1000;
  o.max_backoff_ms = 1000;
  o.on_batch_error = [&](const Status& s, size_t pending) {
    std::lock_guard<std::mutex> lock(mu);
    ++failures;
    seen = s;
    pending_at_failure = pending;
    cv.notify_all();
  };
  Reports reports;
  ResultWriter writer(store, clock, o);
  constexpr int kRows = 20;
  for (int i = 0; i < kRows; ++i) {
    TestResult r = row("t" + std::to_string(i), i);
    r.reason = std::string(16 * 1024, 'x');  // needs new pages
    writer.submit(r, reports.on(r.test_id));
  }
  clock.advanceSeconds(3600);  // the batch delay: the first attempt
  for (int attempt = 1; attempt <= 3; ++attempt) {
    {
      std::unique_lock<std::mutex> lock(mu);
      ASSERT_TRUE(cv.wait_for(lock, kBound, [&] { return failures >= attempt; }))
          << "the writer did not retry the failed batch after its backoff (attempt " << attempt
          << ")";
    }
    // Its backoff is set before on_batch_error runs: moving past it starts the next attempt
    // (the third failure waits for the space below).
    if (attempt < 3) clock.advanceSeconds(1);
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_EQ(failures, 3) << "a retry came before its backoff had passed on the clock";
    EXPECT_EQ(seen.code(), Code::kResourceExhausted) << seen.toString();
    EXPECT_THAT(seen.message(), HasSubstr("disk is full"));
    EXPECT_EQ(pending_at_failure, size_t{kRows});
  }
  EXPECT_EQ(writer.pending(), size_t{kRows});
  EXPECT_EQ(writer.lastError().code(), Code::kResourceExhausted);
  EXPECT_TRUE(reports.stored().empty());
  EXPECT_TRUE(reports.errors().empty()) << "a retried row was reported as failed";
  // Held rows are durable meanwhile: one spool record each (issue #9: a kill -9 loses none).
  {
    std::ifstream spooled(spool.path());
    ASSERT_TRUE(spooled.good()) << "rows held for a retry were not spooled";
    std::string line;
    int lines = 0;
    while (std::getline(spooled, line)) ++lines;
    EXPECT_EQ(lines, kRows);
  }

  ASSERT_TRUE(store.setMaxPageCountForTesting(1 << 20).ok());
  clock.advanceSeconds(1);
  writer.flush();
  EXPECT_EQ(writer.pending(), 0u);
  EXPECT_TRUE(writer.lastError().ok()) << writer.lastError().toString();
  ASSERT_EQ(reports.stored().size(), size_t{kRows});
  for (int i = 0; i < kRows; ++i) EXPECT_EQ(reports.stored()[i], "t" + std::to_string(i));
  ResultQuery all;
  all.limit = 0;
  auto rows = store.queryResults(all);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), size_t{kRows} + 1);
  EXPECT_FALSE(std::ifstream(spool.path()).good())
      << "the spool is removed once every spooled row is stored";
}

TEST_F(ResultWriterTest, ShutdownGivesUpAfterTheGraceAndReportsEachRow) {
  store_->setFull(true);
  Reports reports;
  {
    ResultWriter::Options o = slow(2);
    o.min_backoff_ms = 1;
    o.max_backoff_ms = 5;
    o.shutdown_grace_ms = 20;
    SystemClock real;  // the destructor's grace runs out with nobody to move a ManualClock
    ResultWriter writer(*store_, real, o);
    for (int i = 0; i < 5; ++i) {
      writer.submit(row("t" + std::to_string(i)), reports.on("t" + std::to_string(i)));
    }
  }
  EXPECT_TRUE(reports.stored().empty());
  ASSERT_EQ(reports.errors().size(), 5u);
  EXPECT_THAT(reports.errors()[0], HasSubstr("t0 was not stored before the result writer"));
  EXPECT_THAT(reports.errors()[0], HasSubstr("disk is full"));
  EXPECT_THAT(reports.codes(), ::testing::Each(Code::kResourceExhausted));
}

// `gdrmesh test`'s path: write() answers at the row's first attempt, without the batch delay.
TEST_F(ResultWriterTest, WriteAnswersWithTheRowIdAtOnce) {
  ResultWriter writer(*store_, clock_, slow(256));  // an hour's batch delay, never reached
  Result<int64_t> id = writer.write(row("t0"));
  ASSERT_TRUE(id.ok()) << id.status().toString();
  auto got = sqlite_->getResult("t0");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->id, *id);
  EXPECT_TRUE(writer.held().empty());
}

// A refused row is held (listed) and stored exactly once when the store takes writes again; a
// second write() in the first one's backoff is still attempted at once.
TEST_F(ResultWriterTest, WriteReportsARefusalHoldsTheRowAndStoresItOnceTheStoreRecovers) {
  store_->setFull(true);
  Reports reports;
  ResultWriter::Options o = slow(256);
  o.min_backoff_ms = 1000;
  o.max_backoff_ms = 1000;
  ResultWriter writer(*store_, clock_, o);
  Result<int64_t> a = writer.write(row("t-a"), reports.on("t-a"));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), Code::kResourceExhausted);
  EXPECT_THAT(a.status().message(), HasSubstr("disk is full"));
  EXPECT_EQ(a.status().fix(), "free space");
  Result<int64_t> b = writer.write(row("t-b"), reports.on("t-b"));  // the clock has not moved
  ASSERT_FALSE(b.ok());
  std::vector<std::string> held;
  for (const TestResult& r : writer.held()) held.push_back(r.test_id);
  EXPECT_THAT(held, ElementsAre("t-b", "t-a"));  // newest first, as queries list
  EXPECT_TRUE(reports.stored().empty());
  EXPECT_TRUE(reports.errors().empty()) << "a held row was reported as failed";

  store_->setFull(false);
  clock_.advanceSeconds(1);  // the backoff, on the injected clock
  writer.flush();
  EXPECT_THAT(reports.stored(), ElementsAre("t-a", "t-b"));
  EXPECT_TRUE(reports.errors().empty());
  EXPECT_EQ(storedRows(), 2u);
  EXPECT_TRUE(writer.held().empty());
}

TEST_F(ResultWriterTest, FlushFromACallbackDoesNotDeadlock) {
  std::atomic<int> calls{0};
  ResultWriter* self = nullptr;
  ResultWriter writer(*store_, clock_, slow(1));
  self = &writer;
  writer.submit(row("t0"), [&](Result<int64_t>) {
    self->flush();  // returns at once on the writer thread
    ++calls;
  });
  writer.flush();
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace gdrmesh::testing
