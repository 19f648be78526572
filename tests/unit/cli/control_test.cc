// How a failed RPC becomes a message and an exit code: the channel versus a worker.
#include "cli/control.h"

#include <gtest/gtest.h>

namespace gdrmesh::cli {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

std::vector<pb::WorkerInfo> workers() {
  pb::WorkerInfo a;
  a.set_name("a");
  a.set_state("online");
  pb::WorkerInfo b;
  b.set_name("b");
  b.set_state("offline");
  b.set_last_heartbeat_ms(kNow - 180'000);
  b.mutable_inventory()->set_hostname("node-b");
  return {a, b};
}

TEST(IsConnectionFailure, ByGrpcText) {
  EXPECT_TRUE(isConnectionFailure(grpc::StatusCode::UNAVAILABLE,
                                  "failed to connect to all addresses; last error: UNKNOWN: "
                                  "ipv4:127.0.0.1:1: Failed to connect to remote host: "
                                  "Connection refused"));
  EXPECT_TRUE(isConnectionFailure(grpc::StatusCode::UNAVAILABLE, "DNS resolution failed for x"));
  EXPECT_FALSE(
      isConnectionFailure(grpc::StatusCode::UNAVAILABLE, "initiator: worker 'b' is offline"));
  EXPECT_FALSE(
      isConnectionFailure(grpc::StatusCode::NOT_FOUND, "failed to connect to all addresses"));
}

TEST(ClassifyRpcFailure, ChannelFailureIsUnreachable) {
  auto f = classifyRpcFailure("c:7070", "RunTest", grpc::StatusCode::UNAVAILABLE,
                              "failed to connect to all addresses", {"a", "b"}, workers(), kNow);
  EXPECT_EQ(f.exit_code, kExitUnreachable);
  EXPECT_NE(f.message.find("coordinator c:7070 unreachable"), std::string::npos);
  auto probe_failed = classifyRpcFailure("c:7070", "RunTest", grpc::StatusCode::UNAVAILABLE,
                                         "something", {}, std::nullopt, kNow);
  EXPECT_EQ(probe_failed.exit_code, kExitUnreachable);
}

TEST(ClassifyRpcFailure, OfflineWorkerIsAFailureWithItsHeartbeat) {
  auto f = classifyRpcFailure("c:7070", "RunTest", grpc::StatusCode::UNAVAILABLE,
                              "target: worker 'b' is offline", {"a", "b"}, workers(), kNow);
  EXPECT_EQ(f.exit_code, kExitFailed);
  EXPECT_NE(f.message.find("worker b is offline (last heartbeat 3m00s ago)"), std::string::npos)
      << f.message;
  EXPECT_NE(f.message.find("node-b"), std::string::npos) << f.message;
}

TEST(ClassifyRpcFailure, UnknownWorkerIsBadInputListingTheKnownOnes) {
  auto f = classifyRpcFailure("c:7070", "RunTest", grpc::StatusCode::NOT_FOUND,
                              "target: unknown worker 'z'", {"a", "z"}, workers(), kNow);
  EXPECT_EQ(f.exit_code, kExitUsage);
  EXPECT_NE(f.message.find("worker 'z' is not registered"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("known: a, b (offline)"), std::string::npos) << f.message;
}

TEST(ClassifyRpcFailure, CoordinatorAnswersKeepTheirMessage) {
  auto bad = classifyRpcFailure("c", "RunTest", grpc::StatusCode::INVALID_ARGUMENT,
                                "size: must be > 0", {"a"}, std::nullopt, kNow);
  EXPECT_EQ(bad.exit_code, kExitUsage);
  EXPECT_EQ(bad.message, "gdrmesh: size: must be > 0");
  auto slow = classifyRpcFailure("c", "RunTest", grpc::StatusCode::DEADLINE_EXCEEDED,
                                 "Deadline Exceeded", {"a"}, workers(), kNow);
  EXPECT_EQ(slow.exit_code, kExitFailed);  // reachable (the probe answered): the test was slow
  auto old = classifyRpcFailure("c", "StartSweep", grpc::StatusCode::UNIMPLEMENTED, "", {},
                                std::nullopt, kNow);
  EXPECT_EQ(old.exit_code, kExitInternal);
  EXPECT_NE(old.message.find("does not implement StartSweep"), std::string::npos);
}

TEST(SweepExitCode, OnlyFinishedPassIsZero) {
  ClientOptions o;
  FollowOutcome f;
  f.last = pb::SweepProgress();
  f.last->set_state("finished");
  f.last->set_verdict("PASS");
  EXPECT_EQ(sweepExitCode(o, f, "s"), kExitOk);
  f.last->set_verdict("FAIL");
  EXPECT_EQ(sweepExitCode(o, f, "s"), kExitFailed);
  f.last->set_state("cancelled");
  EXPECT_EQ(sweepExitCode(o, f, "s"), kExitFailed);
  f.interrupted = true;
  EXPECT_EQ(sweepExitCode(o, f, "s"), kExitInterrupted);
}

}  // namespace
}  // namespace gdrmesh::cli
