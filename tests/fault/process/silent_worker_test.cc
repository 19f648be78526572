// A worker that never answers (issue #9): it registers and heartbeats, so it is never declared
// lost, but it takes a test's commands and never replies, as a worker whose host hangs inside a
// command would. The pair test must end by the per-phase command deadline as a stored FAILED
// row naming the silent worker and the phase, and the coordinator keeps serving.
//
// The silent worker is tests/support/stream_worker.h: this test process on the coordinator's
// real gRPC stream. Waits are bounded waits on observable state.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/support/local_cluster.h"
#include "tests/support/stream_worker.h"

namespace gdrmesh::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Steady = std::chrono::steady_clock;

// The coordinator runs with `--command-timeout 3s` (the default is 10 s): the deadline of each
// command (prepare, connect, verify, release); PairTestOptions gives 2 s of grace for a lost
// stream to show before a deadline is blamed on the worker.
constexpr auto kCommandDeadline = seconds(3);
constexpr auto kLostGrace = seconds(2);

// j[key] as a string, "" when absent.
std::string text(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

TEST(SilentWorker, APairTestWithAWorkerThatNeverAnswersEndsAtTheDeadlineNamingIt) {
  LocalCluster c;
  c.startCoordinator({"--command-timeout", "3s"});
  c.startWorker("a");
  StreamWorker silent(c.address(), "silent", StreamWorker::emulatedInventory("silent-host"));
  ASSERT_TRUE(silent.waitRegistered(milliseconds(15000))) << silent.status().error_message();

  const auto t0 = Steady::now();
  auto r = c.cli(
      {"test", "a", "silent", "--size", "64KiB", "--iters", "10", "--timeout", "1", "-o", "json"});
  const auto took = Steady::now() - t0;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  const std::string status = text(j, "status");
  EXPECT_TRUE(status == "FAILED" || status == "ERROR") << j.dump(2);
  const std::string reason = text(j, "reason");
  EXPECT_NE(reason.find("prepare on silent"), std::string::npos) << reason;
  EXPECT_NE(reason.find("did not answer"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("worker lost"), std::string::npos)
      << "a silent worker still heartbeats: it is not lost, it is blamed by the deadline";
  // Bounded by the deadline, not the test's run timeout or the CLI's.
  EXPECT_GE(took, kCommandDeadline - seconds(1));
  EXPECT_LT(took, kCommandDeadline + kLostGrace + seconds(4))
      << "the deadline is --command-timeout, not the 10 s default";
  ASSERT_TRUE(silent.waitCommands(1, milliseconds(1000)));
  EXPECT_EQ(silent.commands().front(), "prepare") << "the target is prepared first";

  // The stored row says the same.
  const std::string test_id = text(j, "test_id");
  auto rows = c.query("SELECT status, reason FROM results WHERE test_id = '" + test_id + "'");
  ASSERT_EQ(rows.size(), 1u) << test_id;
  EXPECT_EQ(rows[0]["status"], status);
  EXPECT_NE(rows[0]["reason"].find("prepare on silent"), std::string::npos) << rows[0]["reason"];

  // The coordinator keeps serving: the honest worker's resources were released and it runs a
  // test of its own; the silent worker is still listed online (it heartbeats).
  EXPECT_TRUE(c.waitFor([](const json& ws) {
    for (const auto& w : ws) {
      if (w["name"] == "a") return w["active_tests"] == 0;
    }
    return false;
  })) << "the honest side kept its resources";
  auto again = c.cli({"test", "a", "a", "--size", "64KiB", "--iters", "10", "-o", "json"});
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_TRUE(c.waitFor([](const json& ws) {
    for (const auto& w : ws) {
      if (w["name"] == "silent") return w["state"] == "online";
    }
    return false;
  }));
}

TEST(SilentWorker, ACommandTimeoutOutOfRangeIsRefusedNamingTheFlag) {
  LocalCluster c;
  const std::string db = c.dir() + "/refused.db";
  for (const char* bad : {"0", "50ms", "2h", "soon"}) {
    auto r = c.cli({"coordinator", "--listen", "127.0.0.1:0", "--db", db, "--insecure",
                    "--command-timeout", bad},
                   false);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("--command-timeout"), std::string::npos) << bad << ": " << r.err;
  }
}

}  // namespace
}  // namespace gdrmesh::testing
