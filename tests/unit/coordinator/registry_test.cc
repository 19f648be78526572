// `gdrmesh worker remove`: the registry forgets a worker (unknown: NOT_FOUND naming it; online:
// refused unless forced, and then its stream is ended), and the coordinator removes its stored
// row in the same step while its results stay. Real SQLite, a real WorkerLink, no gRPC.
#include "coordinator/service/registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/service/coordinator_server.h"
#include "coordinator/store/sqlite_store.h"

namespace gdrmesh {
namespace {

WorkerStatus worker(const std::string& name) {
  WorkerStatus w;
  w.name = name;
  w.peer = "ipv4:127.0.0.1:5555";
  w.inventory.hostname = name + "-host";
  return w;
}

// A link whose stream writes succeed and whose cancellation is counted.
struct FakeStream {
  std::atomic<int> cancelled{0};
  std::shared_ptr<WorkerLink> link(const std::string& name, Clock& clock) {
    return std::make_shared<WorkerLink>(
        name, clock, [](v1::CoordinatorMessage&&) { return true; }, [this] { ++cancelled; });
  }
};

// Issue #23: a protocol violation is counted against the worker where `gdrmesh workers` shows
// it, and a reconnection does not clear it.
TEST(RegistryViolations, AreCountedInTheWorkersFindingsAcrossReconnections) {
  ManualClock clock;
  FakeStream stream;
  Registry r;
  auto link = stream.link("rogue", clock);
  ASSERT_TRUE(r.add(worker("rogue"), link).ok());
  EXPECT_EQ(r.noteViolation("rogue", "integrity: unasked"), 1u);
  EXPECT_EQ(r.noteViolation("rogue", "measurement: 9999 Gb/s"), 2u);
  ASSERT_EQ(r.get("rogue")->findings.size(), 1u);
  EXPECT_EQ(r.get("rogue")->findings[0],
            "2 protocol violations in pair tests, last: measurement: 9999 Gb/s");
  r.remove("rogue", link.get());
  ASSERT_TRUE(r.add(worker("rogue"), stream.link("rogue", clock)).ok());
  ASSERT_EQ(r.get("rogue")->findings.size(), 1u);
  EXPECT_EQ(r.get("rogue")->findings[0].rfind("2 protocol violations", 0), 0u);
}

// Registration and loss are events (WorkerDirectory::watch): a waiting sweep wakes on them
// instead of polling. Each callback sees the change already made, and none runs after unwatch.
TEST(RegistryEvents, RegistrationLossAndRemovalAreAnnouncedOnceTheyShow) {
  ManualClock clock;
  FakeStream stream;
  Registry r;
  std::vector<std::string> seen;
  const auto id = r.watch([&](const std::string& name) {
    auto w = r.get(name);
    seen.push_back(name + ":" + (w ? (w->online() ? "online" : "offline") : "gone"));
  });
  auto link = stream.link("w1", clock);
  ASSERT_TRUE(r.add(worker("w1"), link).ok());
  ASSERT_FALSE(r.add(worker("w1"), stream.link("w1", clock)).ok());  // refused: no event
  r.heartbeat("w1", clock.unixMs(), 0);                              // not a registration
  r.remove("w1", link.get());
  ASSERT_TRUE(r.forget("w1", false).ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"w1:online", "w1:offline", "w1:gone"}));
  r.unwatch(id);
  ASSERT_TRUE(r.add(worker("w2"), stream.link("w2", clock)).ok());
  EXPECT_EQ(seen.size(), 3u) << "a callback ran after unwatch";
}

TEST(RegistryForget, AnUnknownNameIsNotFoundAndNamesIt) {
  Registry r;
  r.addKnown(worker("good"));
  auto f = r.forget("nosuch", false);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Code::kNotFound);
  EXPECT_NE(f.status().message().find("'nosuch'"), std::string::npos) << f.status().message();
  EXPECT_NE(f.status().message().find("good"), std::string::npos) << "lists the known workers";
  EXPECT_EQ(r.list().size(), 1u);
}

TEST(RegistryForget, AnOfflineWorkerIsForgotten) {
  Registry r;
  r.addKnown(worker("junk"));
  r.addKnown(worker("good"));
  bool also_ran = false;
  auto f = r.forget("junk", false, [&] {
    also_ran = true;
    return Status();
  });
  ASSERT_TRUE(f.ok()) << f.status().toString();
  EXPECT_TRUE(also_ran);
  EXPECT_EQ(f->link, nullptr);
  EXPECT_EQ(r.get("junk"), nullptr);
  EXPECT_EQ(r.channel("junk"), nullptr);
  ASSERT_EQ(r.list().size(), 1u);
  EXPECT_EQ(r.list()[0].name, "good");
}

TEST(RegistryForget, AnOnlineWorkerIsRefusedWithoutForce) {
  ManualClock clock;
  FakeStream stream;
  Registry r;
  ASSERT_TRUE(r.add(worker("busy"), stream.link("busy", clock)).ok());
  bool also_ran = false;
  auto f = r.forget("busy", false, [&] {
    also_ran = true;
    return Status();
  });
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(f.status().message().find("'busy' is online"), std::string::npos);
  EXPECT_NE(f.status().fix().find("--force"), std::string::npos) << f.status().fix();
  EXPECT_FALSE(also_ran) << "nothing is removed from the store when the worker stays";
  ASSERT_NE(r.get("busy"), nullptr);
  EXPECT_TRUE(r.get("busy")->online());
  EXPECT_EQ(stream.cancelled.load(), 0);
}

TEST(RegistryForget, ForceReturnsTheOnlineLinkAndTheNameIsFreeAgain) {
  ManualClock clock;
  FakeStream stream;
  Registry r;
  auto link = stream.link("busy", clock);
  ASSERT_TRUE(r.add(worker("busy"), link).ok());
  auto f = r.forget("busy", true);
  ASSERT_TRUE(f.ok()) << f.status().toString();
  EXPECT_EQ(f->link, link);
  EXPECT_EQ(r.get("busy"), nullptr);
  // The old stream ending later must not touch a worker registered again under the name.
  FakeStream again;
  ASSERT_TRUE(r.add(worker("busy"), again.link("busy", clock)).ok());
  r.remove("busy", link.get());
  ASSERT_NE(r.get("busy"), nullptr);
  EXPECT_TRUE(r.get("busy")->online());
}

TEST(RegistryForget, AFailingStoreLeavesTheWorkerListed) {
  Registry r;
  r.addKnown(worker("junk"));
  auto f = r.forget("junk", false, [] {
    return Status(Code::kResourceExhausted, "database disk is full: x.db", "free space");
  });
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Code::kResourceExhausted);
  EXPECT_NE(r.get("junk"), nullptr);
}

class CoordinatorRemoveWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = SqliteStore::open(":memory:");
    ASSERT_TRUE(s.ok()) << s.status().toString();
    store_ = std::move(*s);
  }
  std::unique_ptr<SqliteStore> store_;
  SystemClock clock_;
};

TEST_F(CoordinatorRemoveWorker, RemovesTheStoredRowAndKeepsTheResults) {
  ASSERT_TRUE(store_->upsertWorker({"junk", "junk-host", "{}", 1, 1}).ok());
  ASSERT_TRUE(store_->upsertWorker({"good", "good-host", "{}", 1, 1}).ok());
  TestResult t;
  t.test_id = "t-junk";
  t.status = TestStatus::kPassed;
  t.initiator.worker = "junk";
  t.target.worker = "good";
  t.initiator.reg_path = t.target.reg_path = RegPath::kHost;
  ASSERT_TRUE(store_->insertResult(t).ok());
  CoordinatorOptions opts;
  opts.listen = "127.0.0.1:0";
  CoordinatorServer server(opts, *store_, *store_, clock_);
  ASSERT_TRUE(server.start().ok());
  ASSERT_NE(server.registry().get("junk"), nullptr) << "known from the store, offline";

  auto removed = server.removeWorker("junk", false, "admin 'alice'");
  ASSERT_TRUE(removed.ok()) << removed.status().toString();
  EXPECT_FALSE(*removed);
  EXPECT_EQ(server.registry().get("junk"), nullptr);
  auto rows = store_->listWorkers();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].name, "good");
  auto kept = store_->getResult("t-junk");
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->has_value());

  auto again = server.removeWorker("junk", false, "admin 'alice'");
  EXPECT_EQ(again.status().code(), Code::kNotFound);
  server.shutdown();
}

TEST_F(CoordinatorRemoveWorker, ForceEndsTheStreamAndFailsPendingCommands) {
  CoordinatorOptions opts;
  opts.listen = "127.0.0.1:0";
  CoordinatorServer server(opts, *store_, *store_, clock_);
  ASSERT_TRUE(server.start().ok());
  FakeStream stream;
  auto link = stream.link("busy", clock_);
  ASSERT_TRUE(server.registry().add(worker("busy"), link).ok());
  ASSERT_TRUE(store_->upsertWorker({"busy", "busy-host", "{}", 1, 1}).ok());
  std::optional<Status> pending;
  link->call(v1::CoordinatorCommand(), clock_.after(600),
             [&](Result<v1::CommandReply> r) { pending = r.status(); });

  auto refused = server.removeWorker("busy", false, "admin 'alice'");
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  EXPECT_FALSE(pending.has_value());
  auto stored = store_->listWorkers();
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->size(), 1u) << "a refused removal keeps the stored row";

  auto removed = server.removeWorker("busy", true, "admin 'alice'");
  ASSERT_TRUE(removed.ok()) << removed.status().toString();
  EXPECT_TRUE(*removed);
  EXPECT_TRUE(link->lost());
  EXPECT_EQ(stream.cancelled.load(), 1) << "the worker's stream is ended";
  ASSERT_TRUE(pending.has_value());
  EXPECT_NE(pending->message().find("worker lost: busy"), std::string::npos) << pending->message();
  EXPECT_EQ(server.registry().get("busy"), nullptr);
  stored = store_->listWorkers();
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(stored->empty());
  server.shutdown();
}

// The heartbeat monitor ticks on the injected clock: a worker silent for heartbeat_misses
// intervals loses its link when a ManualClock moves past them (an hour's interval: the real
// clock would take hours). Its stream's cancellation is the event the test waits for.
TEST(CoordinatorMonitor, ASilentWorkerIsDroppedWhenTheInjectedClockPassesItsMissedHeartbeats) {
  ManualClock clock;
  auto results = SqliteStore::open(":memory:");
  auto sweeps = SqliteStore::open(":memory:");
  ASSERT_TRUE(results.ok() && sweeps.ok());
  CoordinatorOptions opts;
  opts.listen = "127.0.0.1:0";
  opts.heartbeat_interval_ms = 3600 * 1000;
  opts.heartbeat_misses = 2;
  CoordinatorServer server(opts, **results, **sweeps, clock);
  ASSERT_TRUE(server.start().ok());
  std::promise<void> cancelled;
  auto link = std::make_shared<WorkerLink>(
      "quiet", clock, [](v1::CoordinatorMessage&&) { return true; },
      [&cancelled] { cancelled.set_value(); });
  WorkerStatus w = worker("quiet");
  w.last_heartbeat_ms = clock.unixMs();
  ASSERT_TRUE(server.registry().add(w, link).ok());

  clock.advanceSeconds(3 * 3600.0);  // three intervals: past the two missed heartbeats
  ASSERT_EQ(cancelled.get_future().wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "the monitor did not tick on the injected clock";
  EXPECT_TRUE(link->lost());
  server.shutdown();
}

}  // namespace
}  // namespace gdrmesh
