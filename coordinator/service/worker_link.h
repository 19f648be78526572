// One registered worker's command channel on the wire: sends CoordinatorCommands down the
// worker's stream and matches the CommandReplies coming back, asynchronously. Each call's
// callback runs exactly once: with the reply, with "worker lost" when the stream is gone, or
// with kDeadlineExceeded at the deadline (a timer on the injected clock; nobody polls).
//
// Thread contract: thread-safe. call() from any thread; onReply()/fail() from the stream's
// handler thread or the heartbeat monitor. Callbacks run without the link's lock held, on the
// thread that delivered the outcome (or inline in call() when the worker is already lost).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "common/sync/mutex.h"
#include "coordinator/orchestrator/loss_signal.h"
#include "gdrmesh/v1/gdrmesh.pb.h"

namespace gdrmesh {

class WorkerLink : public std::enable_shared_from_this<WorkerLink> {
 public:
  // Writes one message on the worker's stream; false when the stream is broken. Called with
  // the link's write lock held: one writer at a time.
  using Writer = std::function<bool(v1::CoordinatorMessage&&)>;  // takes the message over
  using Callback = std::function<void(Result<v1::CommandReply>)>;

  WorkerLink(std::string worker, Clock& clock, Writer writer, std::function<void()> cancel_stream);

  // Sends a command (request_id is assigned here). A reply with a failed CommandStatus is
  // delivered as that Status (the worker's code, message and fix).
  void call(v1::CoordinatorCommand command, Clock::TimePoint deadline, Callback done);
  // A reply the worker will send unasked under a request id of its own (a target's finish
  // sent with its prepare): the id to put in the command, registered before the command goes
  // out, with its deadline and callback as call()'s. 0 with `done` run at once when the
  // worker is lost already.
  uint64_t expect(Clock::TimePoint deadline, Callback done);
  // Ends an expected reply that will not come (its command failed) with `st`; nothing when it
  // has been answered already.
  void settle(uint64_t request_id, const Status& st);

  void onReply(v1::CommandReply&& reply);  // taken over: the callback gets it without a copy
  // Marks the worker lost: fails every pending call, cancels the stream, then tells the
  // loss's subscribers (once; later calls do nothing). Every path that declares a worker lost
  // or offline comes here: its stream ended, its heartbeats stopped, the coordinator stops.
  void fail(const std::string& reason);
  bool lost() const;
  // See WorkerChannel::onLost.
  std::unique_ptr<LossSubscription> onLost(LossSignal::Callback on_lost) {
    return lost_signal_.subscribe(std::move(on_lost));
  }
  // Forgets the stream (its handler is returning): later fail() calls no longer touch it.
  void detachStream();
  const std::string& worker() const { return worker_; }
  size_t pending() const;

 private:
  struct Pending {
    Callback done;
    Clock::TimerId timer = 0;
  };
  void expire(uint64_t request_id);

  const std::string worker_;
  Clock& clock_;
  Writer writer_;
  Mutex cancel_mu_;
  std::function<void()> cancel_stream_ ABSL_GUARDED_BY(cancel_mu_);
  mutable Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
  std::optional<std::string> lost_reason_ ABSL_GUARDED_BY(mu_);
  Mutex write_mu_;  // serialises writes on the stream
  LossSignal lost_signal_;
};

}  // namespace gdrmesh
