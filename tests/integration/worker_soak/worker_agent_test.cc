// Tests of worker/service: the bounded command pool, and a WorkerAgent (in-process, over real
// gRPC to the in-test coordinator) that refuses commands beyond its pool with
// RESOURCE_EXHAUSTED and still serves releases when every command thread waits for a run.
#include "worker/service/worker_agent.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/integration/worker_soak/soak_coordinator.h"
#include "worker/service/command_pool.h"
#include "worker/session/session.h"
#include "worker/transport/emulated/emulated_transport.h"

namespace gdrmesh {
namespace {

using std::chrono::milliseconds;
namespace pb = ::gdrmesh::v1;

// A gate that tasks wait on until the test opens it.
class Gate {
 public:
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool waitForWaiters(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return waiting_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool open_ = false;
};

TEST(CommandPool, BoundsThreadsAndQueueAndRefusesBeyond) {
  CommandPool pool({2, 3});
  Gate gate;
  std::atomic<int> ran{0};
  std::mutex ran_mu;
  std::condition_variable ran_cv;
  auto task = [&] {
    gate.wait();
    std::lock_guard<std::mutex> lock(ran_mu);
    ++ran;
    ran_cv.notify_all();
  };
  ASSERT_TRUE(pool.submit(task));
  ASSERT_TRUE(pool.submit(task));
  ASSERT_TRUE(gate.waitForWaiters(2));  // both threads busy
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(pool.submit(task)) << i;
  EXPECT_FALSE(pool.submit(task)) << "a full queue must refuse";
  EXPECT_EQ(pool.threads(), 2u);
  EXPECT_EQ(pool.queued(), 3u);
  gate.open();
  {
    // join() drops what is still queued (a stream that ended): let the queue drain first.
    std::unique_lock<std::mutex> lock(ran_mu);
    EXPECT_TRUE(ran_cv.wait_for(lock, std::chrono::seconds(20), [&] { return ran.load() == 5; }));
  }
  pool.join();
  EXPECT_EQ(ran.load(), 5);
  EXPECT_EQ(pool.threads(), 0u);
  EXPECT_FALSE(pool.submit(task)) << "a joined pool takes no work";
}

TEST(CommandPool, StopDropsQueuedTasksAndJoinWaitsForRunningOnes) {
  CommandPool pool({1, 8});
  Gate gate;
  std::atomic<int> ran{0};
  ASSERT_TRUE(pool.submit([&] {
    gate.wait();
    ++ran;
  }));
  ASSERT_TRUE(gate.waitForWaiters(1));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(pool.submit([&] { ++ran; }));
  EXPECT_EQ(pool.stop(), 4u);
  gate.open();
  pool.join();
  EXPECT_EQ(ran.load(), 1);
}

TEST(CommandPool, ThreadsAreReusedNotStartedPerTask) {
  CommandPool pool({4, 64});
  for (int round = 0; round < 200; ++round) {
    std::promise<void> done;
    ASSERT_TRUE(pool.submit([&] { done.set_value(); }));
    done.get_future().wait();
  }
  EXPECT_LE(pool.threads(), 4u);
}

// One in-process worker with tiny pools, registered with the in-test coordinator.
class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sessions_.addTransport(std::make_unique<EmulatedTransport>());
    WorkerOptions o;
    o.coordinator = coordinator_.address();
    o.name = "tiny";
    o.data_host = "127.0.0.1";
    o.reconnect = false;
    o.command_threads = 1;
    o.control_threads = 1;
    o.command_queue = 1;
    agent_ = std::make_unique<WorkerAgent>(o, Inventory{}, sessions_);
    runner_ = std::thread([this] { (void)agent_->run(); });
    link_ = coordinator_.waitFor("tiny", milliseconds(20000));
    ASSERT_NE(link_, nullptr);
  }
  void TearDown() override {
    agent_->stop();
    runner_.join();
    EXPECT_EQ(sessions_.active(), 0u) << "sessions outlived the stream";
  }
  // Prepares an armed SEND target that waits for an initiator that never comes.
  void prepareArmed(const std::string& id) {
    pb::CoordinatorCommand c;
    auto* spec = c.mutable_prepare()->mutable_spec();
    spec->set_test_id(id);
    spec->set_role(pb::ROLE_TARGET);
    spec->set_op(pb::OP_SEND);
    spec->set_buffer_size(4096);
    spec->set_transport(pb::TRANSPORT_EMULATED);
    spec->set_memory(pb::MEMORY_KIND_HOST);
    c.mutable_prepare()->mutable_peer()->set_transport(pb::TRANSPORT_EMULATED);
    c.mutable_prepare()->mutable_arm()->set_message_size(64);
    c.mutable_prepare()->mutable_arm()->set_iterations(8);
    c.mutable_prepare()->mutable_arm()->set_timeout_seconds(60);
    auto r = link_->call(c, milliseconds(20000));
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(r->status().ok()) << r->status().message();
  }
  std::future<std::optional<pb::CommandReply>> finishAsync(const std::string& id) {
    pb::CoordinatorCommand c;
    c.mutable_finish()->set_test_id(id);
    c.mutable_finish()->set_timeout_seconds(60);
    return std::async(std::launch::async,
                      [this, c] { return link_->call(c, milliseconds(30000)); });
  }

  SessionManager::Options options_;
  HostMemoryProvider memory_;
  SessionManager sessions_{memory_, options_};
  testing::SoakCoordinator coordinator_;
  std::unique_ptr<WorkerAgent> agent_;
  std::thread runner_;
  std::shared_ptr<testing::SoakLink> link_;
};

TEST_F(AgentTest, AFullPoolRefusesWithResourceExhaustedAndReleasesStillGetThrough) {
  const std::vector<std::string> ids{"t1", "t2", "t3"};
  for (const auto& id : ids) prepareArmed(id);
  // One command thread and one queue slot: three blocking finishes cannot all be taken.
  std::vector<std::future<std::optional<pb::CommandReply>>> finishes;
  for (const auto& id : ids) finishes.push_back(finishAsync(id));
  // A refusal comes back at once, while the others still wait for their runs.
  int refused = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto settle = t0 + std::chrono::seconds(3);
  for (auto& f : finishes) {
    if (f.wait_until(settle) != std::future_status::ready) continue;
    auto r = f.get();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status().code(), "RESOURCE_EXHAUSTED") << r->status().message();
    EXPECT_NE(r->status().message().find("tiny: finish refused"), std::string::npos)
        << r->status().message();
    EXPECT_NE(r->status().fix().find("concurren"), std::string::npos) << r->status().fix();
    ++refused;
  }
  EXPECT_GE(refused, 1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // Releases run on the control pool: they end the waiting finishes promptly.
  for (const auto& id : ids) {
    pb::CoordinatorCommand c;
    c.mutable_release()->set_test_id(id);
    auto r = link_->call(c, milliseconds(10000));
    ASSERT_TRUE(r.has_value()) << "release of " << id << " got no reply";
    EXPECT_TRUE(r->status().ok()) << r->status().message();
  }
  for (auto& f : finishes) {
    if (!f.valid()) continue;
    ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    auto r = f.get();
    ASSERT_TRUE(r.has_value());
    EXPECT_FALSE(r->status().ok());  // aborted, or not found when released first
  }
  EXPECT_EQ(sessions_.active(), 0u);
}

TEST_F(AgentTest, LeanCommandsOfAnUnknownTestAnswerNotFound) {
  pb::CoordinatorCommand c;
  c.mutable_start()->set_test_id("nope");
  auto r = link_->call(c, milliseconds(10000));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status().code(), "NOT_FOUND");
  c.Clear();
  c.mutable_finish()->set_test_id("nope");
  r = link_->call(c, milliseconds(10000));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status().code(), "NOT_FOUND");
}

}  // namespace
}  // namespace gdrmesh
