// A target's finish sent with its prepare (three commands per pair test): the channel puts the
// finish's own request id in the prepare, matches the worker's unasked finish reply to it, and
// ends it exactly once when no reply can come (failed prepare, lost worker, deadline).
// A real WorkerLink on a manual clock; the stream is a function that keeps what is written.
#include "coordinator/service/grpc_worker_channel.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "convert.h"

namespace gdrmesh {
namespace {

namespace pb = ::gdrmesh::v1;

class PrepareFinishingTest : public ::testing::Test {
 protected:
  PrepareFinishingTest()
      : link_(std::make_shared<WorkerLink>(
            "w2", clock_,
            [this](pb::CoordinatorMessage&& m) {
              sent_.push_back(m.command());
              return true;
            },
            [] {})),
        channel_(link_) {}

  // Sends a target's prepare with its finish; the callbacks record what they hear.
  void send() {
    PrepareCommand c;
    c.side.endpoint.test_id = "t-1";
    c.side.endpoint.role = Role::kTarget;
    c.arm = RunSpec{};
    c.arm->end_signal = true;
    c.peer = EndpointDesc{};
    c.peer->fields = EmulatedDesc{"127.0.0.1", 1};
    FinishCommand f;
    f.test_id = "t-1";
    f.verify = true;
    f.verify_length = 4096;
    f.timeout_seconds = 130;
    c.finish = f;
    channel_.prepareFinishing(
        c, clock_.after(10), [this](Result<EndpointDesc> d) { prepared_.push_back(d.status()); },
        clock_.after(140),
        [this](Result<SideOutcome> o) {
          finished_.push_back(o.status());
          if (o.ok()) outcome_ = *o;
        });
  }

  void reply(uint64_t id, const std::function<void(pb::CommandReply&)>& fill) {
    pb::CommandReply r;
    r.set_request_id(id);
    convert::toProto(Status(), r.mutable_status());
    fill(r);
    link_->onReply(std::move(r));
  }

  ManualClock clock_;
  std::vector<pb::CoordinatorCommand> sent_;
  std::shared_ptr<WorkerLink> link_;
  GrpcWorkerChannel channel_;
  std::vector<Status> prepared_, finished_;
  std::optional<SideOutcome> outcome_;
};

TEST_F(PrepareFinishingTest, TheFinishTravelsWithThePrepareUnderItsOwnId) {
  send();
  ASSERT_EQ(sent_.size(), 1u);
  const auto& p = sent_[0].prepare();
  ASSERT_TRUE(p.has_finish());
  EXPECT_EQ(p.finish().test_id(), "t-1");
  EXPECT_TRUE(p.finish().verify());
  EXPECT_EQ(p.finish().verify_length(), 4096u);
  EXPECT_TRUE(p.arm().end_signal());
  EXPECT_NE(p.finish_request_id(), 0u);
  EXPECT_NE(p.finish_request_id(), sent_[0].request_id());
  EXPECT_EQ(link_->pending(), 2u);

  reply(sent_[0].request_id(), [](pb::CommandReply& r) {
    r.mutable_prepare()->mutable_local()->mutable_emulated()->set_tcp_port(7);
  });
  ASSERT_EQ(prepared_.size(), 1u);
  EXPECT_TRUE(prepared_[0].ok()) << prepared_[0].toString();
  EXPECT_TRUE(finished_.empty()) << "the finish answered before the worker sent it";

  reply(p.finish_request_id(), [](pb::CommandReply& r) {
    auto* i = r.mutable_finish()->mutable_integrity();
    i->set_checked(true);
    i->set_bytes_checked(4096);
  });
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_TRUE(finished_[0].ok()) << finished_[0].toString();
  ASSERT_TRUE(outcome_.has_value());
  EXPECT_TRUE(outcome_->verified);
  EXPECT_EQ(outcome_->integrity.bytes_checked, 4096u);
  EXPECT_EQ(link_->pending(), 0u);
}

TEST_F(PrepareFinishingTest, AFinishReplyBeforeThePrepareReplyIsKept) {
  send();
  reply(sent_[0].prepare().finish_request_id(), [](pb::CommandReply& r) { r.mutable_finish(); });
  reply(sent_[0].request_id(), [](pb::CommandReply& r) { r.mutable_prepare(); });
  EXPECT_EQ(prepared_.size(), 1u);
  EXPECT_EQ(finished_.size(), 1u);
  EXPECT_EQ(link_->pending(), 0u);
}

TEST_F(PrepareFinishingTest, AFailedPrepareEndsTheFinishWithItsError) {
  send();
  reply(sent_[0].request_id(), [](pb::CommandReply& r) {
    convert::toProto(failedPrecondition("port 1 of rxe0 is down"), r.mutable_status());
  });
  ASSERT_EQ(prepared_.size(), 1u);
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_EQ(finished_[0].code(), Code::kFailedPrecondition);
  EXPECT_NE(finished_[0].message().find("port 1 of rxe0 is down"), std::string::npos);
  EXPECT_EQ(link_->pending(), 0u) << "the finish's id was left waiting for its deadline";
}

TEST_F(PrepareFinishingTest, ALostWorkerEndsTheFinish) {
  send();
  reply(sent_[0].request_id(), [](pb::CommandReply& r) { r.mutable_prepare(); });
  link_->fail("(stream closed)");
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_EQ(finished_[0].code(), Code::kUnavailable);
  EXPECT_NE(finished_[0].message().find("worker lost: w2"), std::string::npos);
}

TEST_F(PrepareFinishingTest, AFinishThatNeverComesEndsAtItsDeadline) {
  send();
  reply(sent_[0].request_id(), [](pb::CommandReply& r) { r.mutable_prepare(); });
  clock_.advanceSeconds(139);
  EXPECT_TRUE(finished_.empty());
  clock_.advanceSeconds(2);
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_EQ(finished_[0].code(), Code::kDeadlineExceeded);
}

TEST_F(PrepareFinishingTest, AWorkerLostBeforehandFailsBothAtOnce) {
  link_->fail("(heartbeats missed)");
  send();
  EXPECT_TRUE(sent_.empty());
  ASSERT_EQ(prepared_.size(), 1u);
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_EQ(prepared_[0].code(), Code::kUnavailable);
  EXPECT_EQ(finished_[0].code(), Code::kUnavailable);
}

}  // namespace
}  // namespace gdrmesh
