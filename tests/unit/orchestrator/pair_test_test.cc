// The pair test's protocol against fake workers on a manual clock.
#include "coordinator/orchestrator/pair_test.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "common/capabilities.h"
#include "tests/support/fake_worker_channel.h"

namespace gdrmesh {
namespace {

using testing::FakeDirectory;

class PairTestTest : public ::testing::Test {
 protected:
  PairTestTest() : dir_(clock_) {
    dir_.add("a");
    dir_.add("b");
    spec_.initiator.worker = "a";
    spec_.target.worker = "b";
    spec_.iterations = 10;
  }

  PairTestOutcome runToEnd(double max_seconds = 600) {
    PairEndpoints ep{dir_.get(spec_.initiator.worker), dir_.get(spec_.target.worker),
                     dir_.channel(spec_.initiator.worker), dir_.channel(spec_.target.worker)};
    std::optional<PairTestOutcome> out;
    runPairTest(spec_, ep, clock_, options_, "t-1", 42,
                [&](PairTestOutcome o) { out = std::move(o); });
    for (double t = 0; !out && t < max_seconds; t += 0.001) clock_.advanceSeconds(0.001);
    EXPECT_TRUE(out.has_value()) << "the pair test never ended";
    return out ? *out : PairTestOutcome{};
  }

  // Protocol violations as on_violation hears them: "worker: what".
  std::vector<std::string> violations() {
    std::lock_guard<std::mutex> lock(violations_mu_);
    return violations_;
  }

  ManualClock clock_;
  FakeDirectory dir_;
  PairTestSpec spec_;
  std::mutex violations_mu_;
  std::vector<std::string> violations_;
  PairTestOptions options_ = [this] {
    PairTestOptions o;
    o.on_violation = [this](const std::string& worker, const std::string& what) {
      std::lock_guard<std::mutex> lock(violations_mu_);
      violations_.push_back(worker + ": " + what);
    };
    return o;
  }();
};

TEST_F(PairTestTest, LeanProtocolTakesTwoRoundTripsPerSide) {
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kPassed) << o.result.reason;
  EXPECT_EQ(dir_.fake("a").log(), (std::vector<std::string>{"prepare t-1", "start t-1"}));
  EXPECT_EQ(dir_.fake("b").log(),
            (std::vector<std::string>{"prepare t-1 +peer +arm", "finish t-1 +verify"}));
  EXPECT_TRUE(o.result.integrity.ok());
  EXPECT_DOUBLE_EQ(o.result.measurement.bw.avg_gbps, 100);
  EXPECT_EQ(o.result.transport, TransportKind::kEmulated);
  EXPECT_EQ(dir_.fake("a").inFlight(), 0);
  EXPECT_EQ(dir_.fake("b").inFlight(), 0);
}

// Workers whose transport signals the end of a run over the data path: the target's finish
// rides with its prepare, and the worker answers it when the initiator's run has ended.
class EndSignalPairTest : public PairTestTest {
 protected:
  EndSignalPairTest() {
    for (const char* w : {"a", "b"}) {
      dir_.edit(w, [](WorkerStatus& s) { s.inventory.capabilities = {emulatedCapabilities()}; });
    }
  }
};

TEST_F(EndSignalPairTest, ThreeCommandsWhenBothSidesSignalTheEnd) {
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kPassed) << o.result.reason;
  EXPECT_EQ(dir_.fake("a").log(), (std::vector<std::string>{"prepare t-1", "start t-1"}));
  // One command to the target: no finish() follows its prepare.
  EXPECT_EQ(dir_.fake("b").log(), (std::vector<std::string>{"prepare t-1 +peer +arm",
                                                            "finish t-1 +verify (with prepare)"}));
  EXPECT_TRUE(o.result.integrity.ok());
  EXPECT_TRUE(o.result.integrity.checked);
  EXPECT_DOUBLE_EQ(o.result.measurement.bw.avg_gbps, 100);
  EXPECT_EQ(dir_.fake("a").inFlight(), 0);
  EXPECT_EQ(dir_.fake("b").inFlight(), 0);
}

TEST_F(EndSignalPairTest, OneSideWithoutTheSignalKeepsFourCommands) {
  dir_.edit("b", [](WorkerStatus& s) {
    TransportCapabilities c = emulatedCapabilities();
    c.end_signal = false;  // a worker from before the end signal
    s.inventory.capabilities = {c};
  });
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kPassed) << o.result.reason;
  EXPECT_EQ(dir_.fake("b").log(),
            (std::vector<std::string>{"prepare t-1 +peer +arm", "finish t-1 +verify"}));
}

TEST_F(EndSignalPairTest, ReadFinishedByTheTargetBeforeTheInitiatorAnswers) {
  spec_.op = Op::kRead;
  // The initiator's reply comes long after its end signal reached the target.
  dir_.fake("a").behaviour.run_seconds = 0.5;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kPassed) << o.result.reason;
  EXPECT_EQ(dir_.fake("a").log().back(), "start t-1 +verify");
  EXPECT_TRUE(o.result.integrity.ok());
}

TEST_F(EndSignalPairTest, ACorruptDestinationStillFails) {
  dir_.fake("b").behaviour.wrong_bytes = 9;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("data integrity"), std::string::npos) << o.result.reason;
}

TEST_F(EndSignalPairTest, AFailedRunReleasesTheTargetWaitingForTheEnd) {
  dir_.fake("a").behaviour.fail_run = failedPrecondition("remote access error");
  auto o = runToEnd(30);
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("run on a: remote access error"), std::string::npos)
      << o.result.reason;
  // Released at once, not left to wait out the run's timeout.
  EXPECT_EQ(dir_.fake("b").log().back(), "release t-1");
  EXPECT_EQ(dir_.fake("b").inFlight(), 0);
}

TEST_F(EndSignalPairTest, ATargetThatNeverHearsTheEndIsBoundedByItsDeadline) {
  dir_.fake("b").behaviour.hold = {"finish"};
  spec_.timeout_seconds = 5;
  auto o = runToEnd(120);
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("verify on b"), std::string::npos) << o.result.reason;
  EXPECT_TRUE(o.transient);
}

TEST_F(EndSignalPairTest, APrepareFailureEndsTheTestOnce) {
  dir_.fake("b").behaviour.fail_prepare = failedPrecondition("port 1 of mlx5_0 is down");
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("prepare on b: port 1 of mlx5_0 is down"), std::string::npos)
      << o.result.reason;
  EXPECT_EQ(dir_.fake("a").inFlight(), 0);
}

TEST_F(EndSignalPairTest, TheTargetLostWhileTheInitiatorRunsIsNamed) {
  dir_.fake("a").behaviour.run_seconds = 1;
  PairEndpoints ep{dir_.get("a"), dir_.get("b"), dir_.channel("a"), dir_.channel("b")};
  std::optional<PairTestOutcome> out;
  runPairTest(spec_, ep, clock_, PairTestOptions{}, "t-1", 42,
              [&](PairTestOutcome o) { out = std::move(o); });
  clock_.advanceSeconds(0.1);
  ASSERT_FALSE(out.has_value());
  dir_.fake("b").lose();
  for (int i = 0; i < 3000 && !out; ++i) clock_.advanceSeconds(0.001);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->result.status, TestStatus::kFailed);
  EXPECT_NE(out->result.reason.find("worker lost: b"), std::string::npos) << out->result.reason;
  EXPECT_TRUE(out->transient);
}

TEST_F(PairTestTest, ReadIsVerifiedOnTheInitiator) {
  spec_.op = Op::kRead;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kPassed) << o.result.reason;
  EXPECT_EQ(dir_.fake("a").log().back(), "start t-1 +verify");
  EXPECT_EQ(dir_.fake("b").log().back(), "finish t-1");
}

TEST_F(PairTestTest, RdmaCmUsesTheClassicPhases) {
  spec_.use_rdma_cm = true;
  spec_.transport = TransportKind::kVerbs;
  for (auto* n : {"a", "b"}) (void)n;
  auto o = runToEnd();
  // Neither fake offers verbs: SKIPPED with the reason, and nothing was sent.
  EXPECT_EQ(o.result.status, TestStatus::kSkipped);
  EXPECT_NE(o.result.reason.find("transport verbs not available"), std::string::npos);
  EXPECT_TRUE(dir_.fake("a").log().empty());
}

TEST_F(PairTestTest, RdmaCmRunsTheClassicPhasesOnBothSides) {
  dir_.setTransports("a", {"verbs"});
  dir_.setTransports("b", {"verbs"});
  spec_.use_rdma_cm = true;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kPassed) << o.result.reason;
  EXPECT_EQ(o.result.path_mtu, 4096);
  EXPECT_EQ(dir_.fake("a").log(),
            (std::vector<std::string>{"prepare t-1", "connect t-1", "run t-1", "release t-1"}));
  EXPECT_EQ(dir_.fake("b").log(), (std::vector<std::string>{"prepare t-1", "connect t-1", "run t-1",
                                                            "verify t-1", "release t-1"}));
}

TEST_F(PairTestTest, RdmaCmRunFailureAbortsThePeerAndNamesTheFirstError) {
  dir_.setTransports("a", {"verbs"});
  dir_.setTransports("b", {"verbs"});
  spec_.use_rdma_cm = true;
  dir_.fake("a").behaviour.fail_run = failedPrecondition("remote access error");
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("run on a: remote access error"), std::string::npos)
      << o.result.reason;
  EXPECT_EQ(dir_.fake("a").inFlight(), 0);
  EXPECT_EQ(dir_.fake("b").inFlight(), 0);
}

TEST_F(PairTestTest, CorruptionIsAFailureNamingTheBytes) {
  dir_.fake("b").behaviour.wrong_bytes = 9;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("data integrity"), std::string::npos) << o.result.reason;
  EXPECT_FALSE(o.transient);
}

TEST_F(PairTestTest, PrepareFailureReleasesTheOtherSide) {
  dir_.fake("b").behaviour.fail_prepare = failedPrecondition("port 1 of mlx5_0 is down");
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("prepare on b: port 1 of mlx5_0 is down"), std::string::npos)
      << o.result.reason;
  EXPECT_EQ(dir_.fake("a").inFlight(), 0) << "the initiator was not released";
}

TEST_F(PairTestTest, AMuteTargetIsBoundedByTheCommandTimeout) {
  dir_.fake("b").behaviour.mute = true;
  const auto t0 = clock_.now();
  auto o = runToEnd();
  const double took = std::chrono::duration<double>(clock_.now() - t0).count();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("did not answer"), std::string::npos) << o.result.reason;
  EXPECT_TRUE(o.transient);
  EXPECT_LT(took, 15.0) << "a worker that never answers must cost one command timeout";
}

TEST_F(PairTestTest, OfflineWorkerIsNamed) {
  dir_.setOffline("b");
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("worker b is offline"), std::string::npos) << o.result.reason;
}

// A transient error is often the echo of a peer that died: the test waits up to
// lost_grace_seconds for a loss to show, and ends as soon as it does, naming the lost worker
// first and keeping the error it saw.
TEST_F(PairTestTest, ATransientErrorEndsAsSoonAsTheLostPeerShows) {
  dir_.fake("a").behaviour.fail_run = unavailable("connection reset by peer");
  clock_.schedule(clock_.after(1.0), [this] { dir_.fake("b").lose(); });
  const auto t0 = clock_.now();
  auto o = runToEnd();
  const double took = std::chrono::duration<double>(clock_.now() - t0).count();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_EQ(o.result.reason,
            "worker lost: b disconnected during run; run on a: connection reset by peer");
  EXPECT_TRUE(o.transient);
  EXPECT_GT(PairTestOptions{}.lost_grace_seconds, 1.5);
  EXPECT_LT(took, 1.0 + 0.0015) << "the test waited out its grace after the loss showed";
}

// Issue #9: a target stopped mid-run (SIGSTOP) keeps its sockets open, so the initiator's run
// does not fail; the test must end once the target is declared lost, not at the run deadline.
TEST_F(PairTestTest, ATargetLostWhileTheInitiatorRunsEndsTheTestAtOnce) {
  dir_.fake("a").behaviour.run_seconds = 500;  // blocked on the stopped peer
  clock_.schedule(clock_.after(3.0), [this] { dir_.fake("b").lose(); });
  const auto t0 = clock_.now();
  auto o = runToEnd();
  const double took = std::chrono::duration<double>(clock_.now() - t0).count();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("worker lost: b disconnected during run"), std::string::npos)
      << o.result.reason;
  EXPECT_TRUE(o.transient);
  EXPECT_LT(took, 3.0 + 0.0015) << "the test waited on the running side after its peer was lost";
  // The side still running was told to stop.
  auto log = dir_.fake("a").log();
  EXPECT_EQ(log.back().rfind("release t-1", 0), 0u) << log.back();
}

TEST_F(PairTestTest, AnInitiatorLostDuringEndpointExchangeIsNamed) {
  dir_.fake("b").behaviour.mute = true;  // the target's prepare never answers
  clock_.schedule(clock_.after(1.0), [this] { dir_.fake("a").lose(); });
  const auto t0 = clock_.now();
  auto o = runToEnd();
  const double took = std::chrono::duration<double>(clock_.now() - t0).count();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("worker lost: a disconnected during prepare"), std::string::npos)
      << o.result.reason;
  EXPECT_LT(took, 1.0 + 0.0015);
}

// ------------------------------------------------------------------ loss as an event

// One pair test whose outcomes are counted, for the loss tests below.
struct LossRun {
  explicit LossRun(bool classic) : dir(clock) {
    dir.add("a");
    dir.add("b");
    spec.initiator.worker = "a";
    spec.target.worker = "b";
    spec.iterations = 10;
    if (classic) {
      dir.setTransports("a", {"verbs"});
      dir.setTransports("b", {"verbs"});
      spec.use_rdma_cm = true;
    }
  }
  void start() {
    PairEndpoints ep{dir.get("a"), dir.get("b"), dir.channel("a"), dir.channel("b")};
    runPairTest(spec, ep, clock, PairTestOptions{}, "t-1", 42, [this](PairTestOutcome o) {
      ++outcomes;
      out = std::move(o);
    });
  }
  // Advances in 0.1 ms steps until `worker` has been sent `command` (false: never, in 5 s).
  bool runUntilSent(const std::string& worker, const std::string& command) {
    for (int i = 0; i < 50000; ++i) {
      for (const auto& line : dir.fake(worker).log()) {
        if (line.rfind(command + " ", 0) == 0) return true;
      }
      if (out) return false;
      clock.advanceSeconds(0.0001);
    }
    return false;
  }

  ManualClock clock;
  FakeDirectory dir;
  PairTestSpec spec;
  std::optional<PairTestOutcome> out;
  int outcomes = 0;
};

struct LossCase {
  bool classic;
  const char* held_worker;   // never answers this command, so the test waits on it
  const char* held_command;  // "prepare", "connect", "run", "verify", "start", "finish"
  const char* phase;         // the phase the test is in then
};

class PairTestLossTest : public ::testing::TestWithParam<std::tuple<LossCase, const char*>> {};

// The loss of either worker, in every phase, whichever side the test waits on: the test ends
// before the clock moves, naming the lost worker and the phase, and the survivor is released.
TEST_P(PairTestLossTest, ALossInAnyPhaseEndsTheTestWithoutMovingTheClock) {
  const LossCase& c = std::get<0>(GetParam());
  const std::string lost = std::get<1>(GetParam());
  const std::string survivor = lost == "a" ? "b" : "a";
  LossRun run(c.classic);
  run.dir.fake(c.held_worker).behaviour.hold = {c.held_command};
  run.start();
  ASSERT_TRUE(run.runUntilSent(c.held_worker, c.held_command))
      << c.held_command << " was never sent to " << c.held_worker;
  ASSERT_FALSE(run.out.has_value()) << run.out->result.reason;
  const auto before = run.clock.now();
  run.dir.fake(lost).lose();
  EXPECT_EQ(run.clock.now(), before);
  ASSERT_TRUE(run.out.has_value()) << "the loss of " << lost << " did not end the test";
  EXPECT_EQ(run.outcomes, 1);
  EXPECT_EQ(run.out->result.status, TestStatus::kFailed);
  EXPECT_EQ(run.out->result.reason.rfind(
                "worker lost: " + lost + " disconnected during " + c.phase + "; ", 0),
            0u)
      << run.out->result.reason;
  EXPECT_TRUE(run.out->transient);
  EXPECT_EQ(run.dir.fake("a").lossSubscribers(), 0u);
  EXPECT_EQ(run.dir.fake("b").lossSubscribers(), 0u);
  // Whatever the held and lost sides answer later (deadlines), the result stays the one given,
  // and the survivor ends released (unless its own prepare was never answered).
  run.clock.advanceSeconds(1000);
  EXPECT_EQ(run.outcomes, 1);
  if (!(survivor == c.held_worker && std::string(c.held_command) == "prepare")) {
    EXPECT_EQ(run.dir.fake(survivor).inFlight(), 0) << survivor << " was not released";
  }
}

INSTANTIATE_TEST_SUITE_P(
    PhasesAndSides, PairTestLossTest,
    ::testing::Combine(::testing::Values(LossCase{false, "a", "prepare", "prepare"},
                                         LossCase{false, "b", "prepare", "prepare"},
                                         LossCase{false, "a", "start", "run"},
                                         LossCase{false, "b", "finish", "verify"},
                                         LossCase{true, "a", "prepare", "prepare"},
                                         LossCase{true, "b", "connect", "connect"},
                                         LossCase{true, "a", "run", "run"},
                                         LossCase{true, "b", "verify", "verify"}),
                       ::testing::Values("a", "b")),
    [](const auto& p) {
      const LossCase& c = std::get<0>(p.param);
      return std::string(c.classic ? "classic_" : "lean_") + c.held_command + "_held_by_" +
             c.held_worker + "_lost_" + std::get<1>(p.param);
    });

// A worker lost before the test begins: the subscription hears of it at once, and no command
// goes to either worker.
TEST(PairTestLoss, AWorkerLostBeforeTheTestBeginsEndsItAtOnce) {
  for (const char* lost : {"a", "b"}) {
    LossRun run(false);
    run.dir.fake(lost).lose();
    run.start();
    ASSERT_TRUE(run.out.has_value()) << lost;
    EXPECT_EQ(run.outcomes, 1);
    EXPECT_EQ(run.out->result.status, TestStatus::kFailed);
    EXPECT_EQ(run.out->result.reason.rfind(
                  std::string("worker lost: ") + lost + " disconnected during prepare; ", 0),
              0u)
        << run.out->result.reason;
    EXPECT_TRUE(run.dir.fake("a").log().empty()) << run.dir.fake("a").log().front();
    EXPECT_TRUE(run.dir.fake("b").log().empty()) << run.dir.fake("b").log().front();
    EXPECT_EQ(run.dir.fake("a").lossSubscribers(), 0u);
    EXPECT_EQ(run.dir.fake("b").lossSubscribers(), 0u);
  }
}

// A test that has ended hears no loss: its subscriptions are gone with it.
TEST(PairTestLoss, NoLossIsHeardAfterTheTestEnded) {
  LossRun run(false);
  run.start();
  EXPECT_EQ(run.dir.fake("a").lossSubscribers(), 1u);
  EXPECT_EQ(run.dir.fake("b").lossSubscribers(), 1u);
  for (int i = 0; i < 1000 && !run.out; ++i) run.clock.advanceSeconds(0.001);
  ASSERT_TRUE(run.out.has_value());
  ASSERT_EQ(run.out->result.status, TestStatus::kPassed) << run.out->result.reason;
  EXPECT_EQ(run.dir.fake("a").lossSubscribers(), 0u);
  EXPECT_EQ(run.dir.fake("b").lossSubscribers(), 0u);
  run.dir.fake("a").lose();
  run.dir.fake("b").lose();
  EXPECT_EQ(run.outcomes, 1);
  EXPECT_EQ(run.out->result.status, TestStatus::kPassed);
}

// The loss and the test's own end (its deadline) race on two threads: one outcome, always.
TEST(PairTestLoss, ALossRacingTheTestsEndGivesOneOutcome) {
  for (int i = 0; i < 200; ++i) {
    LossRun run(false);
    run.dir.fake("b").behaviour.hold = {"finish"};
    run.start();
    ASSERT_TRUE(run.runUntilSent("b", "finish"));
    std::thread loser([&run] { run.dir.fake("b").lose(); });
    run.clock.advanceSeconds(1000);  // the finish deadline ends the test here, unless the loss
    loser.join();                    // did first
    EXPECT_EQ(run.outcomes, 1);
    ASSERT_TRUE(run.out.has_value());
    EXPECT_EQ(run.out->result.status, TestStatus::kFailed);
  }
}

TEST_F(PairTestTest, OptionsTheTransportIgnoresAreRefusedUpFront) {
  spec_.inline_size = 64;
  Status st = checkPairAgainstInventory(spec_, *dir_.get("a"), *dir_.get("b"));
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--inline"), std::string::npos) << st.message();
}

// Capabilities before operations: an impossible request is refused by the up-front check that
// the control service runs, and the run itself would never contact a worker for it.
TEST_F(PairTestTest, ImpossibleRequestIsRefusedFromCapabilitiesBeforeAnyWorkerIsContacted) {
  for (auto* n : {"a", "b"}) {
    dir_.edit(n, [](WorkerStatus& w) {
      w.inventory.transports = {"emulated"};
      w.inventory.capabilities = {emulatedCapabilities()};
      w.inventory.notes = {"verbs: no RDMA device found"};
    });
  }
  spec_.op = Op::kWriteImm;
  spec_.mode = Mode::kLatency;
  Status st = checkPairAgainstInventory(spec_, *dir_.get("a"), *dir_.get("b"));
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("worker a (SRC, initiator) has no transport that supports --op "
                              "write_imm --mode lat: verbs: not available here (verbs: no RDMA "
                              "device found); emulated: supports bw write, read, send, write_imm"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(dir_.fake("a").log().empty());
  EXPECT_TRUE(dir_.fake("b").log().empty());
  // The same workers run what they support.
  spec_.mode = Mode::kBandwidth;
  EXPECT_TRUE(checkPairAgainstInventory(spec_, *dir_.get("a"), *dir_.get("b")).ok());
}

TEST_F(PairTestTest, AutomaticTransportIsOneThatServesBothSides) {
  TransportCapabilities verbs_no_imm = verbsCapabilities();
  verbs_no_imm.latency_ops = {Op::kWrite, Op::kRead, Op::kSend};
  for (auto* n : {"a", "b"}) {
    dir_.edit(n, [&](WorkerStatus& w) {
      w.inventory.transports = {"verbs", "emulated"};
      w.inventory.capabilities = {verbs_no_imm, emulatedCapabilities()};
    });
  }
  spec_.op = Op::kWriteImm;
  EXPECT_EQ(chooseTransport(spec_, dir_.get("a")->inventory, dir_.get("b")->inventory),
            TransportKind::kVerbs);
  spec_.mode = Mode::kLatency;  // neither serves it: refused, and the choice falls back
  EXPECT_EQ(checkPairAgainstInventory(spec_, *dir_.get("a"), *dir_.get("b")).code(),
            Code::kFailedPrecondition);
  spec_.op = Op::kWrite;
  spec_.initiator.memory = MemoryKind::kCuda;
  spec_.initiator.reg = RegPath::kStaged;
  dir_.edit("a", [](WorkerStatus& w) { w.inventory.gpus.emplace_back(); });
  verbs_no_imm.reg_paths = {RegPath::kHost, RegPath::kDmabuf};  // no staging on verbs here
  dir_.edit("a", [&](WorkerStatus& w) {
    w.inventory.capabilities = {verbs_no_imm, emulatedCapabilities()};
  });
  EXPECT_EQ(chooseTransport(spec_, dir_.get("a")->inventory, dir_.get("b")->inventory),
            TransportKind::kEmulated);
}

TEST_F(PairTestTest, LoopbackOnOneWorkerUsesOneSession) {
  spec_.target.worker = "a";
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kPassed) << o.result.reason;
}

// Sealed tests (issue #9): the destination reports a digest of what landed before it can know
// what should have landed; the coordinator checks it.
TEST_F(PairTestTest, SealedTestPassesOnADigestWithoutRevealingTheSeed) {
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kPassed) << o.result.reason;
  EXPECT_TRUE(o.result.integrity.ok());
  EXPECT_TRUE(o.result.integrity.digested);
  EXPECT_EQ(dir_.fake("b").reveals(), 0);
}

TEST_F(PairTestTest, SealedMismatchRevealsTheSeedAndCountsTheWrongBytes) {
  dir_.fake("b").behaviour.wrong_bytes = 7;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_EQ(o.result.integrity.wrong_bytes, 7u);
  EXPECT_EQ(dir_.fake("b").reveals(), 1);
  EXPECT_EQ(dir_.fake("b").log().back(), "verify t-1 +reveal");
  EXPECT_NE(o.result.reason.find("data integrity: 7 of"), std::string::npos) << o.result.reason;
}

TEST_F(PairTestTest, ADestinationThatNeverGotTheDataCannotForgeAPass) {
  dir_.fake("b").behaviour.forge_digest = true;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("forged or broken digest"), std::string::npos) << o.result.reason;
  EXPECT_EQ(o.result.integrity.wrong_bytes, o.result.integrity.bytes_checked);
}

TEST_F(PairTestTest, ADestinationClaimingACheckInsteadOfADigestIsNotTrusted) {
  dir_.fake("b").behaviour.claim_check = true;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("a check it could not have made"), std::string::npos)
      << o.result.reason;
  EXPECT_FALSE(o.result.integrity.ok());
}

TEST_F(PairTestTest, ReadIsSealedOnTheInitiatorToo) {
  spec_.op = Op::kRead;
  dir_.fake("a").behaviour.forge_digest = true;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_EQ(dir_.fake("a").reveals(), 1);
}

TEST_F(PairTestTest, RdmaCmClassicPathIsSealed) {
  dir_.setTransports("a", {"verbs"});
  dir_.setTransports("b", {"verbs"});
  spec_.use_rdma_cm = true;
  dir_.fake("b").behaviour.wrong_bytes = 3;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_EQ(o.result.integrity.wrong_bytes, 3u);
  EXPECT_EQ(dir_.fake("b").log(),
            (std::vector<std::string>{"prepare t-1", "connect t-1", "run t-1", "verify t-1",
                                      "verify t-1 +reveal", "release t-1"}));
}

TEST_F(PairTestTest, SimulatedWorkersAreNotSealedAndNeverReveal) {
  for (auto* n : {"a", "b"}) dir_.edit(n, [](WorkerStatus& w) { w.simulated = true; });
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kPassed) << o.result.reason;
  EXPECT_FALSE(o.result.integrity.digested);
}

TEST_F(PairTestTest, AFigureAboveThePortRateIsRejected) {
  dir_.setTransports("a", {"verbs"});
  dir_.setTransports("b", {"verbs"});
  dir_.fake("a").behaviour.bandwidth_gbps = 400;  // the fakes' ports are 200 Gb/s
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("impossible figure rejected: 400.0 Gb/s"), std::string::npos)
      << o.result.reason;
  dir_.fake("a").behaviour.bandwidth_gbps = 190;
  auto ok = runToEnd();
  EXPECT_EQ(ok.result.status, TestStatus::kPassed) << ok.result.reason;
}

// Issue #23: which side's reply counts. Integrity only from the destination, when asked;
// figures only from the side that measured; anything else a side claims is a protocol
// violation that fails the test and is recorded against that worker.
TEST_F(PairTestTest, ARogueReadTargetCannotReplaceTheInitiatorsDigest) {
  spec_.op = Op::kRead;  // the target is the source: it knows its own pattern's digest
  spec_.message_size = 65536;
  dir_.fake("a").behaviour.wrong_bytes = 65254;  // it served the honest initiator zeros
  dir_.fake("b").behaviour.claim_integrity = true;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed) << o.result.reason;
  EXPECT_EQ(o.result.integrity.wrong_bytes, 65254u);
  EXPECT_NE(o.result.reason.find("protocol violation by worker b: integrity"), std::string::npos)
      << o.result.reason;
  EXPECT_NE(o.result.reason.find("data integrity: 65254 of"), std::string::npos) << o.result.reason;
  ASSERT_EQ(violations().size(), 1u);
  EXPECT_EQ(violations()[0].rfind("b: integrity:", 0), 0u) << violations()[0];
}

TEST_F(PairTestTest, AnUnaskedDigestFailsTheTestEvenWhenTheDataLanded) {
  spec_.op = Op::kRead;
  dir_.fake("b").behaviour.claim_integrity = true;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed) << o.result.reason;
  EXPECT_TRUE(o.result.integrity.ok());  // the initiator's own digest, which matched
  EXPECT_EQ(violations().size(), 1u);
}

TEST_F(PairTestTest, AWriteSourceSendingADigestIsAViolationToo) {
  dir_.fake("a").behaviour.claim_integrity = true;  // the initiator is the source of a write
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed) << o.result.reason;
  EXPECT_NE(o.result.reason.find("protocol violation by worker a: integrity"), std::string::npos)
      << o.result.reason;
}

TEST_F(PairTestTest, ATargetCannotOverwriteTheInitiatorsFigures) {
  dir_.fake("a").behaviour.bandwidth_gbps = 17;
  dir_.fake("b").behaviour.claim_gbps = 9999;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed) << o.result.reason;
  EXPECT_DOUBLE_EQ(o.result.measurement.bw.avg_gbps, 17);
  EXPECT_NE(o.result.reason.find("protocol violation by worker b: measurement"), std::string::npos)
      << o.result.reason;
  ASSERT_EQ(violations().size(), 1u);
  EXPECT_EQ(violations()[0].rfind("b: measurement:", 0), 0u) << violations()[0];
}

TEST_F(EndSignalPairTest, ATargetCannotOverwriteTheInitiatorsFiguresWithTheEndSignal) {
  dir_.fake("a").behaviour.bandwidth_gbps = 17;
  dir_.fake("b").behaviour.claim_gbps = 9999;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed) << o.result.reason;
  EXPECT_DOUBLE_EQ(o.result.measurement.bw.avg_gbps, 17);
}

TEST_F(PairTestTest, ABidirectionalTestCountsEachDirectionFromItsSender) {
  dir_.setTransports("a", {"verbs"});
  dir_.setTransports("b", {"verbs"});
  spec_.bidirectional = true;
  dir_.fake("a").behaviour.bandwidth_gbps = 150;
  dir_.fake("b").behaviour.claim_gbps = 120;  // its own direction, target -> initiator
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kPassed) << o.result.reason;
  EXPECT_DOUBLE_EQ(o.result.measurement.bw.avg_gbps, 270);
  EXPECT_TRUE(violations().empty());
  // One direction above the ports' rate (200) is impossible, however low the other.
  dir_.fake("a").behaviour.bandwidth_gbps = 10;
  dir_.fake("b").behaviour.claim_gbps = 390;
  auto bad = runToEnd();
  EXPECT_EQ(bad.result.status, TestStatus::kFailed);
  EXPECT_NE(bad.result.reason.find("impossible figure rejected (target -> initiator): 390.0"),
            std::string::npos)
      << bad.result.reason;
}

TEST_F(PairTestTest, HostMemoryReportedAsGpuDirectIsNotRecordedAsGpuDirect) {
  dir_.setTransports("a", {"verbs"});
  dir_.setTransports("b", {"verbs"});
  dir_.fake("b").behaviour.claim_memory = MemoryKind::kCuda;
  dir_.fake("b").behaviour.claim_reg = RegPath::kDmabuf;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed) << o.result.reason;
  EXPECT_EQ(o.result.target.memory, MemoryKind::kHost);
  EXPECT_EQ(o.result.target.reg_path, RegPath::kHost);
  EXPECT_FALSE(o.result.gpudirect());
  EXPECT_NE(o.result.reason.find("protocol violation by worker b: memory"), std::string::npos)
      << o.result.reason;
}

TEST_F(PairTestTest, ARegistrationPathOtherThanAskedIsAViolation) {
  dir_.setTransports("a", {"verbs"});
  dir_.setTransports("b", {"verbs"});
  for (auto* n : {"a", "b"}) {
    dir_.edit(n, [](WorkerStatus& w) { w.inventory.gpus.resize(1); });
  }
  spec_.initiator.memory = spec_.target.memory = MemoryKind::kCuda;
  spec_.initiator.reg = spec_.target.reg = RegPath::kStaged;
  dir_.fake("a").behaviour.claim_reg = RegPath::kDmabuf;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed) << o.result.reason;
  EXPECT_EQ(o.result.initiator.reg_path, RegPath::kStaged);
  EXPECT_NE(o.result.reason.find("protocol violation by worker a: reg_path"), std::string::npos)
      << o.result.reason;
  // auto leaves the path to the worker: dma-buf is an answer, and GPUDirect.
  dir_.fake("a").behaviour.claim_reg.reset();
  spec_.initiator.reg = spec_.target.reg = RegPath::kAuto;
  auto ok = runToEnd();
  EXPECT_EQ(ok.result.status, TestStatus::kPassed) << ok.result.reason;
  EXPECT_EQ(ok.result.initiator.reg_path, RegPath::kDmabuf);
  EXPECT_TRUE(ok.result.gpudirect());
}

// Issue #23 item 2: the bound on figures cannot be switched off by the worker it bounds.
TEST_F(PairTestTest, NoRegisteredPortRateMeansNoVerbsFigureIsTrusted) {
  dir_.setTransports("a", {"verbs"});
  dir_.setTransports("b", {"verbs"});
  dir_.fake("a").behaviour.bandwidth_gbps = 5000;
  for (auto* n : {"a", "b"}) {
    dir_.edit(n, [](WorkerStatus& w) { w.inventory.nics[0].ports.clear(); });
  }
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("registered no port rate for NIC mlx5_0"), std::string::npos)
      << o.result.reason;
  for (auto* n : {"a", "b"}) {
    dir_.edit(n, [](WorkerStatus& w) {
      NicPort p;
      p.state = "ACTIVE";
      p.rate_gbps = std::nan("");
      w.inventory.nics[0].ports = {p};
    });
  }
  auto nan = runToEnd();
  EXPECT_EQ(nan.result.status, TestStatus::kFailed);
  EXPECT_NE(nan.result.reason.find("impossible figure rejected"), std::string::npos)
      << nan.result.reason;
}

TEST_F(PairTestTest, TheHostClassRateBoundsFiguresInsteadOfTheRegisteredOne) {
  dir_.setTransports("a", {"verbs"});
  dir_.setTransports("b", {"verbs"});
  for (auto* n : {"a", "b"}) {
    dir_.edit(n, [](WorkerStatus& w) {
      w.inventory.nics[0].ports[0].rate_gbps = 1600;  // what it claims
      w.expected_port_rate_gbps = 100;                // what its class has
    });
  }
  dir_.fake("a").behaviour.bandwidth_gbps = 400;
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("400.0 Gb/s reported, above the ports' rate (100 Gb/s)"),
            std::string::npos)
      << o.result.reason;
  // Without any registered port, the class's rate still bounds.
  for (auto* n : {"a", "b"}) {
    dir_.edit(n, [](WorkerStatus& w) { w.inventory.nics[0].ports.clear(); });
  }
  dir_.fake("a").behaviour.bandwidth_gbps = 95;
  auto ok = runToEnd();
  EXPECT_EQ(ok.result.status, TestStatus::kPassed) << ok.result.reason;
}

TEST_F(PairTestTest, ANonFiniteFigureIsRejectedOnEveryTransport) {
  dir_.fake("a").behaviour.bandwidth_gbps = std::numeric_limits<double>::infinity();
  auto o = runToEnd();
  EXPECT_EQ(o.result.status, TestStatus::kFailed);
  EXPECT_NE(o.result.reason.find("negative or not a number"), std::string::npos) << o.result.reason;
}

}  // namespace
}  // namespace gdrmesh
