// What the files of one running pair test share (pair_test_*.cc): the PairTestRun class, whose
// phases (pair_test_run.cc), reading of replies (pair_test_outcome.cc) and endings
// (pair_test_endings.cc) live in their own files. Private to coordinator/orchestrator; the
// protocol is described in pair_test.h.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/sync/mutex.h"
#include "coordinator/orchestrator/pair_test.h"

namespace gdrmesh {
namespace pair_test_detail {

bool hasTransport(const Inventory& inv, TransportKind t);

// An unknown worker (removed since the plan was made) is offline with no inventory.
std::shared_ptr<const WorkerStatus> orOffline(std::shared_ptr<const WorkerStatus> w,
                                              const std::string& name);

// The state of one running pair test. Owned by the callbacks that are still pending.
class PairTestRun : public std::enable_shared_from_this<PairTestRun> {
 public:
  PairTestRun(PairTestSpec spec, PairEndpoints ep, Clock& clock, PairTestOptions options,
              std::function<void(PairTestOutcome)> done)
      : spec_(std::move(spec)),
        ep_(std::move(ep)),
        clock_(clock),
        options_(std::move(options)),
        done_(std::move(done)) {}

  void begin(std::string test_id, uint64_t seed);

 private:
  using Self = std::shared_ptr<PairTestRun>;
  WorkerChannel& ini() { return *ep_.initiator_channel; }
  WorkerChannel& tgt() { return *ep_.target_channel; }
  Clock::TimePoint cmdDeadline() { return clock_.after(options_.command_timeout_seconds); }
  Clock::TimePoint runDeadline() {
    return clock_.after(spec_.runTimeoutSeconds() + options_.command_timeout_seconds);
  }

  SideSpec sideSpec(Role role) const;
  RunSpec runSpec() const;
  // mu_ held: what a prepared endpoint says about itself, where it fits what was asked.
  void record(Role role, const EndpointDesc& d, EndpointRecord* e)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The test id: set by begin() before any command goes out and never written after, so read
  // without mu_ (the other fields of r_ change under it).
  const std::string& testId() const ABSL_NO_THREAD_SAFETY_ANALYSIS { return r_.test_id; }
  const std::string& nameOf(Role role) const {
    return role == Role::kInitiator ? ep_.initiator->name : ep_.target->name;
  }

  // Lean protocol.
  void leanPrepareTarget();
  void leanStart();
  void leanFinish();
  // The target's finish: verify unless READ (the initiator is the destination then).
  FinishCommand finishCommand(double timeout_seconds) const;
  // Three commands (end_signal_): the target's finish rides with its prepare, and its reply
  // and the initiator's start reply may come in either order; the test ends when both have.
  void onStarted(Result<SideOutcome> o);
  void onFinished(Result<SideOutcome> o);
  void leanJoined();
  void leanPassed();
  // Classic protocol.
  void classicPrepare();
  void classicConnect();
  void classicRun();
  void classicVerify();

  // mu_ held: keeps a side's description for the peer and the record.
  void recordPrepared(Role role, const EndpointDesc& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Classic protocol: one side's reply to a phase sent to both. The last reply fails the test
  // with the first error, or moves on to `next`.
  void joinPhase(const char* phase, Role role, const Status& st, void (PairTestRun::*next)());
  void releaseAll(const std::string& why);
  void fail(const std::string& phase, const std::string& worker, const Status& st);
  void failNow(const std::string& phase, const std::string& worker, const Status& st);
  void complete(TestStatus status, std::string reason, bool transient = false);
  // Subscribes to both workers' loss: a lost worker fails the test at once, naming it, and
  // releases the other side (which may be blocked on the lost peer; a stopped peer keeps its
  // sockets open). Runs the loss inline when a side is lost already.
  void watchLoss();
  void onLost(const std::string& who);
  void setPhase(const char* phase) {
    MutexLock lock(mu_);
    phase_ = phase;
  }
  // mu_ held: one side's reply. Only what that side was asked counts: integrity from the
  // destination when `verify_asked`, figures from the side that measured (the initiator; the
  // target too in a bidirectional test, for its own direction). Anything else it claims is a
  // protocol violation.
  void addOutcome(Role role, const SideOutcome& o, bool verify_asked)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // mu_ held: records a protocol violation by `role`'s worker; the test cannot pass.
  void violation(Role role, const std::string& what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // mu_ held: a result's reason, the violations (if any) first, then `why`.
  std::string withViolations(const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sealed test: checks the destination's digest against the source's pattern; on a mismatch
  // reveals the seed to the destination so it counts and locates the wrong bytes. Then `then`.
  void checkSealed(const std::function<void()>& then);
  // Rejects figures no link could produce: not finite or negative (any transport); verbs: a
  // direction above the ports' rate (the expected rate of the host's class where the config
  // declares one, else the registered rate), or no rate to bound it by. "" when fine.
  std::string impossibleFigures() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PairTestSpec spec_;
  PairEndpoints ep_;
  Clock& clock_;
  const PairTestOptions options_;
  std::function<void(PairTestOutcome)> done_;
  std::atomic<bool> finished_{false};

  // Set by begin() before any command goes out, read-only after.
  TransportKind transport_ = TransportKind::kEmulated;
  Mutex mu_;  // callbacks of the two sides may race
  TestResult r_ ABSL_GUARDED_BY(mu_);
  EndpointDesc ini_desc_ ABSL_GUARDED_BY(mu_), tgt_desc_ ABSL_GUARDED_BY(mu_);
  bool ini_prepared_ ABSL_GUARDED_BY(mu_) = false, tgt_prepared_ ABSL_GUARDED_BY(mu_) = false;
  double staging_ ABSL_GUARDED_BY(mu_) = 0;
  // Bidirectional test: the target's figures for its own direction (target -> initiator).
  std::optional<Measurement> reverse_ ABSL_GUARDED_BY(mu_);
  // Protocol violations, as "worker W: what"; reported through options_.on_violation.
  std::vector<std::pair<std::string, std::string>> violations_ ABSL_GUARDED_BY(mu_);
  int pending_ ABSL_GUARDED_BY(mu_) = 0;  // classic: replies still expected in the current phase
  Status first_error_ ABSL_GUARDED_BY(mu_);
  std::string first_error_worker_ ABSL_GUARDED_BY(mu_);
  std::string first_error_phase_ ABSL_GUARDED_BY(mu_);
  const char* phase_ ABSL_GUARDED_BY(mu_) = "prepare";  // the phase in flight, for onLost()
  // Held until the test ends; dropped (outside mu_) by complete(), so no loss is heard after.
  std::unique_ptr<LossSubscription> ini_loss_ ABSL_GUARDED_BY(mu_), tgt_loss_ ABSL_GUARDED_BY(mu_);
  // fail(): a transient error waiting lost_grace_seconds for a lost stream to show. A loss
  // heard meanwhile ends the test at once with this error (named after the lost worker).
  struct Grace {
    std::string phase, worker;
    Status status;
  };
  std::optional<Grace> grace_ ABSL_GUARDED_BY(mu_);
  uint64_t seed_ = 1;
  // Both workers signal the end over the data path: three commands per test (see above).
  bool end_signal_ = false;
  std::optional<Result<SideOutcome>> started_ ABSL_GUARDED_BY(mu_),
      finished_reply_ ABSL_GUARDED_BY(mu_);  // end_signal_: replies so far
  // Sealed test (neither side simulated): each side's own pattern, drawn here; a destination
  // never learns its source's seed before it has reported a digest of what landed.
  bool sealed_ = false;
  uint64_t ini_fill_ = 0, tgt_fill_ = 0;
  // The target's session id: the test id, or "<test id>.target" when both sides are on one
  // worker (a loopback test), since a worker keys its sessions by id.
  std::string tgt_sid_;
  // Phase timings, logged at debug (--log-level debug), or at info when GDRMESH_TRACE_PAIR is
  // set (diagnosis of slow tests).
  std::vector<std::pair<const char*, Clock::TimePoint>> trace_ ABSL_GUARDED_BY(mu_);
  void mark(const char* what) {
    MutexLock lock(mu_);
    trace_.emplace_back(what, clock_.now());
  }
};

}  // namespace pair_test_detail
}  // namespace gdrmesh
