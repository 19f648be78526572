// A sweep's end is streamed as soon as it is judged (report_pending true), before its rows are
// stored (issue #19). The CLI's follow stops at that end, so the report is fetched and printed
// at once; awaitReportStored then follows until the coordinator says the report is stored, so
// that the command exits only once what it leaves behind (history, aggregates) is there. An
// in-process gRPC server plays the coordinator's FollowSweep; every wait is on a latch.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cli/cli.h"
#include "cli/control.h"

namespace gdrmesh::cli {
namespace {

// FollowSweep: "running", then the end with report_pending; then it waits for release() and
// sends the end with the report stored (or, with `fail_stored`, ends the stream in an error).
class StoringCoordinator final : public pb::ControlService::Service {
 public:
  std::atomic<bool> fail_stored{false};
  std::atomic<int> follows{0};

  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  // Blocks until `n` FollowSweep streams have sent the pending end.
  bool waitPendingSent(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return pending_sent_ >= n; });
  }

  grpc::Status FollowSweep(grpc::ServerContext* ctx, const pb::SweepIdRequest* req,
                           grpc::ServerWriter<pb::SweepProgress>* writer) override {
    ++follows;
    pb::SweepProgress p;
    p.set_id(req->id());
    p.set_state("running");
    writer->Write(p);
    p.set_state("finished");
    p.set_verdict("PASS");
    p.set_report_pending(true);
    writer->Write(p);
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++pending_sent_;
      cv_.notify_all();
      // Until released, or the client goes (it stops reading at the end it wanted).
      while (!released_ && !ctx->IsCancelled()) {
        cv_.wait_for(lock, std::chrono::milliseconds(20));
      }
      if (!released_) return grpc::Status::CANCELLED;
    }
    if (fail_stored) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "coordinator stopped");
    p.set_report_pending(false);
    writer->Write(p);
    return grpc::Status::OK;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  int pending_sent_ = 0;
};

class FollowStoredTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.RegisterService(&service_);
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = pb::ControlService::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }
  void TearDown() override {
    service_.release();
    server_->Shutdown();
  }

  StoringCoordinator service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<pb::ControlService::Stub> stub_;
};

TEST_F(FollowStoredTest, TheFollowEndsAtTheJudgedEndAndTheCommandWaitsForTheStoredReport) {
  // The follow returns at the end while the coordinator still holds its stream open (before:
  // it read until the stream ended, i.e. until the report was stored).
  const FollowOutcome f = followSweep(*stub_, "s", [](const pb::SweepProgress&) {});
  ASSERT_TRUE(f.status.ok()) << f.status.error_message();
  ASSERT_TRUE(f.last.has_value());
  EXPECT_EQ(f.last->state(), "finished");
  EXPECT_TRUE(f.last->report_pending());

  ClientOptions o;
  std::atomic<bool> returned{false};
  int rc = -1;
  std::thread waiter([&] {
    rc = awaitReportStored(o, *stub_, *f.last, kExitOk);
    returned = true;
  });
  // The wait follows again and is at the pending end: it has not returned.
  ASSERT_TRUE(service_.waitPendingSent(2));
  EXPECT_FALSE(returned.load());
  service_.release();
  waiter.join();
  EXPECT_EQ(rc, kExitOk);
  EXPECT_EQ(service_.follows.load(), 2);
}

TEST_F(FollowStoredTest, AStoredReportNeedsNoWait) {
  pb::SweepProgress stored;
  stored.set_id("s");
  stored.set_state("finished");
  ClientOptions o;
  EXPECT_EQ(awaitReportStored(o, *stub_, stored, kExitFailed), kExitFailed);
  EXPECT_EQ(service_.follows.load(), 0);
}

TEST_F(FollowStoredTest, AStreamThatFailsBeforeTheReportIsStoredFailsTheCommand) {
  service_.fail_stored = true;
  pb::SweepProgress pending;
  pending.set_id("s");
  pending.set_state("finished");
  pending.set_report_pending(true);
  ClientOptions o;
  int rc = -1;
  std::thread waiter([&] { rc = awaitReportStored(o, *stub_, pending, kExitOk); });
  ASSERT_TRUE(service_.waitPendingSent(1));
  service_.release();
  waiter.join();
  EXPECT_NE(rc, kExitOk);
}

}  // namespace
}  // namespace gdrmesh::cli
