// How a pair test ends: releasing both sides, failing (after a grace for a loss to show),
// hearing a worker's loss, and the outcome handed to `done`.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "common/log.h"
#include "common/measurement.h"
#include "common/sync/mutex.h"
#include "coordinator/orchestrator/pair_test_run.h"

namespace gdrmesh {
namespace pair_test_detail {
namespace {

bool transientCode(Code c) {
  return c == Code::kUnavailable || c == Code::kDeadlineExceeded || c == Code::kAborted ||
         c == Code::kResourceExhausted;
}

}  // namespace

void PairTestRun::releaseAll(const std::string& why) {
  bool ini_p, tgt_p;
  {
    MutexLock lock(mu_);
    ini_p = ini_prepared_;
    tgt_p = tgt_prepared_;
    ini_prepared_ = tgt_prepared_ = false;
  }
  // Fire and forget: the result does not wait for the releases.
  if (tgt_p) tgt().release(tgt_sid_, why, cmdDeadline(), [](const Result<bool>&) {});
  if (ini_p) ini().release(testId(), why, cmdDeadline(), [](const Result<bool>&) {});
}

void PairTestRun::fail(const std::string& phase, const std::string& worker, const Status& st) {
  // A transport error is often the echo of a peer that died: give a lost stream a moment to
  // show, and name the lost worker first.
  if (transientCode(st.code()) && !ini().lost() && !tgt().lost() &&
      options_.lost_grace_seconds > 0) {
    releaseAll(phase + " failed");
    {
      MutexLock lock(mu_);
      if (!grace_) grace_ = Grace{phase, worker, st};
    }
    Self self = shared_from_this();
    clock_.schedule(clock_.after(options_.lost_grace_seconds),
                    [self, phase, worker, st] { self->failNow(phase, worker, st); });
    return;
  }
  failNow(phase, worker, st);
}

void PairTestRun::failNow(const std::string& phase, const std::string& worker, const Status& st) {
  releaseAll(phase + " failed");
  std::string reason;
  bool lost = false;
  for (const auto* ch : {&ep_.target_channel, &ep_.initiator_channel}) {
    if ((*ch)->lost()) {
      reason += "worker lost: " + (*ch)->worker() + " disconnected during " + phase + "; ";
      lost = true;
    }
  }
  reason += phase + " on " + worker + ": " + st.message();
  if (!st.fix().empty()) reason += " (fix: " + st.fix() + ")";
  TestStatus status =
      st.code() == Code::kUnimplemented ? TestStatus::kSkipped : TestStatus::kFailed;
  complete(status, reason, lost || transientCode(st.code()));
}

void PairTestRun::watchLoss() {
  std::weak_ptr<PairTestRun> weak = weak_from_this();
  auto subscribe = [&weak](WorkerChannel& ch) {
    return ch.onLost([weak, who = ch.worker()](const std::string&) {
      // The subscription holds no reference: a test that has ended (and dropped it) is gone.
      if (auto self = weak.lock()) self->onLost(who);
    });
  };
  auto ini_sub = subscribe(ini());
  auto tgt_sub = subscribe(tgt());
  UniqueLock lock(mu_);
  // complete() sets finished_ before it takes the subscriptions under mu_: either it finds
  // them here, or they are dropped now (outside the lock: an unsubscriber may wait).
  if (finished_.load()) {
    lock.unlock();
    return;
  }
  ini_loss_ = std::move(ini_sub);
  tgt_loss_ = std::move(tgt_sub);
}

void PairTestRun::onLost(const std::string& who) {
  if (finished_.load()) return;
  std::string phase;
  std::optional<Grace> grace;
  {
    MutexLock lock(mu_);
    phase = phase_;
    grace = grace_;
  }
  // Waiting out a transient error's grace: that error, now that the loss has shown.
  if (grace) return failNow(grace->phase, grace->worker, grace->status);
  failNow(phase, who,
          unavailable("worker " + who + " stopped answering (stream closed or heartbeats missed)",
                      "check that worker's host and process (`gdrmesh workers`)"));
}

void PairTestRun::complete(TestStatus status, std::string reason, bool transient) {
  if (finished_.exchange(true)) return;
  PairTestOutcome out;
  std::unique_ptr<LossSubscription> ini_loss, tgt_loss;
  std::vector<std::pair<std::string, std::string>> violations;
  {
    MutexLock lock(mu_);
    ini_loss = std::move(ini_loss_);
    tgt_loss = std::move(tgt_loss_);
    violations = violations_;
    if (!violations_.empty()) {
      // A reply that claimed what it was not asked: the test cannot pass, whatever else it saw.
      if (status != TestStatus::kFailed && status != TestStatus::kError) {
        status = TestStatus::kFailed;
        transient = false;
      }
      reason = withViolations(reason);
    }
    if (reverse_ && r_.measurement.has_bandwidth) {
      // Bidirectional: both directions together, each as its sender measured it.
      auto& bw = r_.measurement.bw;
      const auto& rev = reverse_->bw;
      bw.bytes += rev.bytes;
      bw.messages += rev.messages;
      bw.seconds = std::max(bw.seconds, rev.seconds);
      bw.avg_gbps += rev.avg_gbps;
      bw.peak_gbps += rev.peak_gbps;
      bw.msg_rate_mpps += rev.msg_rate_mpps;
    }
    if (staging_ > 0 && r_.measurement.has_bandwidth) {
      // Staged path: the host<->GPU copies are part of the transfer time.
      r_.measurement.staging_seconds = staging_;
      auto& bw = r_.measurement.bw;
      bw = bandwidthFromTotals(bw.bytes, bw.messages, bw.seconds + staging_);
    }
    r_.status = status;
    r_.reason = std::move(reason);
    r_.finished_ms = clock_.unixMs();
    out.result = r_;
  }
  out.transient = transient;
  static const bool kTrace = std::getenv("GDRMESH_TRACE_PAIR") != nullptr;
  if (kTrace || logEnabled(LogLevel::kDebug)) {
    MutexLock lock(mu_);
    std::string line = "pair " + r_.test_id + ":";
    for (size_t i = 1; i < trace_.size(); ++i) {
      line += " " + std::string(trace_[i].first) + " +" +
              std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                                 trace_[i].second - trace_[i - 1].second)
                                 .count()) +
              "us";
    }
    if (!trace_.empty()) {
      line += " end +" +
              std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                                 clock_.now() - trace_.back().second)
                                 .count()) +
              "us";
    }
    ComponentLog("coordinator", &clock_)
        .at(kTrace ? LogLevel::kInfo : LogLevel::kDebug, line,
            {{"test", r_.test_id}, {"sweep", r_.run_id}});
  }
  // Unsubscribed before the result leaves: no loss is heard once the test has ended (a
  // callback running on another thread now is waited for; it finds finished_ set).
  ini_loss.reset();
  tgt_loss.reset();
  if (options_.on_violation) {
    for (const auto& [worker, what] : violations) options_.on_violation(worker, what);
  }
  auto done = std::move(done_);
  done(std::move(out));
}

}  // namespace pair_test_detail
}  // namespace gdrmesh
