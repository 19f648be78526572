// A worker is in the registry (the orchestrator may send it commands) a moment before its
// Registered reply goes out: while the coordinator records the worker in the database. A
// command sent in that moment reached the worker before the reply, and the worker dropped the
// stream as broken (seen in tests/integration/channel: "worker lost: a (disconnected)" on a
// prepare sent as soon as the worker showed online). The reply must always come first.
// A real CoordinatorServer on loopback; the database write is held open by the test.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "coordinator/service/coordinator_server.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/stream_worker.h"

namespace gdrmesh {
namespace {

// SQLite, with upsertWorker (the step between the registry and the Registered reply) held
// until the test opens the gate.
class GatedStore final : public ResultStore {
 public:
  explicit GatedStore(ResultStore& inner) : inner_(inner) {}
  void open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool waitEntered(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return entered_; });
  }
  Status upsertWorker(const WorkerRecord& w) override {
    std::unique_lock<std::mutex> lock(mu_);
    entered_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    lock.unlock();
    return inner_.upsertWorker(w);
  }
  Result<int64_t> insertResult(const TestResult& r) override { return inner_.insertResult(r); }
  Result<std::vector<TestResult>> queryResults(const ResultQuery& q) override {
    return inner_.queryResults(q);
  }
  Result<std::optional<TestResult>> getResult(const std::string& id) override {
    return inner_.getResult(id);
  }
  Result<std::vector<WorkerRecord>> listWorkers() override { return inner_.listWorkers(); }
  Result<bool> removeWorker(const std::string& name) override { return inner_.removeWorker(name); }
  Result<std::vector<int64_t>> insertResults(const std::vector<TestResult>& rs) override {
    return inner_.insertResults(rs);
  }
  Result<uint64_t> countResults(const ResultQuery& q) override { return inner_.countResults(q); }
  Result<std::vector<TestResult>> queryHistory(const HistoryQuery& q) override {
    return inner_.queryHistory(q);
  }
  Result<uint64_t> deleteResultsBefore(int64_t cutoff, uint32_t max_rows) override {
    return inner_.deleteResultsBefore(cutoff, max_rows);
  }
  Status markTestStarted(const TestResult& r) override { return inner_.markTestStarted(r); }
  Status clearTestStarted(const std::string& id) override { return inner_.clearTestStarted(id); }
  Result<std::vector<TestResult>> unfinishedTests() override { return inner_.unfinishedTests(); }

 private:
  ResultStore& inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool entered_ = false;
  bool open_ = false;
};

TEST(RegistrationOrder, ACommandSentAsSoonAsTheWorkerIsListedFollowsItsRegisteredReply) {
  auto sqlite = SqliteStore::open(":memory:");
  ASSERT_TRUE(sqlite.ok()) << sqlite.status().toString();
  GatedStore store(**sqlite);
  CoordinatorOptions opts;
  opts.listen = "127.0.0.1:0";
  SystemClock clock;
  CoordinatorServer server(opts, store, **sqlite, clock);
  auto port = server.start();
  ASSERT_TRUE(port.ok()) << port.status().toString();

  testing::StreamWorker worker("127.0.0.1:" + std::to_string(*port), "w1",
                               testing::StreamWorker::emulatedInventory("w1-host"));
  // The coordinator has put the worker in its registry and now records it in the database.
  ASSERT_TRUE(store.waitEntered(std::chrono::seconds(30)));
  auto channel = server.registry().channel("w1");
  ASSERT_NE(channel, nullptr) << "the worker is listed before it is recorded";
  channel->release("t-early", "registration order test", clock.after(30), [](Result<bool>) {});
  store.open();

  ASSERT_TRUE(worker.waitCommands(1, std::chrono::milliseconds(30000)));
  const std::vector<std::string> seen = worker.messages();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], "registered") << "a command reached the worker before its Registered reply";
  EXPECT_EQ(seen[1], "release");
  EXPECT_FALSE(channel->lost());
  server.shutdown();
  server.wait();
}

}  // namespace
}  // namespace gdrmesh
