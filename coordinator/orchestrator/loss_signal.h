// A worker's loss as an event: WorkerChannel implementations own one LossSignal, fire it once
// when the worker's stream is declared gone, and hand out its subscriptions (see
// WorkerChannel::onLost). Nobody polls.
//
// Contract:
//   - fire() runs every subscribed callback exactly once, outside the signal's lock, on the
//     firing thread; later fire() calls do nothing.
//   - subscribe() after fire() runs the callback inline, before it returns (a subscriber that
//     arrives late still hears of the loss); subscribe() racing fire() runs it exactly once,
//     on one of the two threads.
//   - Destroying a LossSubscription unsubscribes: once its destructor has returned, its
//     callback is not running and never will. If the callback is running on another thread,
//     the destructor waits for it to return; destroyed from inside its own callback, it does
//     not wait. So never destroy a subscription while holding a lock its callback takes.
//   - A subscription may outlive its signal (and the channel that owned it).
//
// Thread contract: thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/sync/mutex.h"

namespace gdrmesh {

class LossSubscription {
 public:
  virtual ~LossSubscription() = default;
};

class LossSignal {
 public:
  // `reason`: what declared the worker lost ("(disconnected)", "(no heartbeat for 3000 ms)").
  using Callback = std::function<void(const std::string& reason)>;

  LossSignal();
  ~LossSignal();
  LossSignal(const LossSignal&) = delete;
  LossSignal& operator=(const LossSignal&) = delete;

  std::unique_ptr<LossSubscription> subscribe(Callback on_lost);
  // True when this call fired the signal (false: it had fired already).
  bool fire(const std::string& reason);
  bool fired() const;
  size_t subscribers() const;  // still waiting for the loss (tests)

 private:
  struct State {
    mutable Mutex mu;  // guards everything below
    std::condition_variable cv;
    bool fired ABSL_GUARDED_BY(mu) = false;
    std::string reason ABSL_GUARDED_BY(mu);
    uint64_t next_id ABSL_GUARDED_BY(mu) = 1;
    std::map<uint64_t, Callback> waiting ABSL_GUARDED_BY(mu);
    uint64_t running_id ABSL_GUARDED_BY(mu) = 0;  // the callback running now (fire()), 0 when none
    std::thread::id running_thread;
  };
  class Subscription;
  std::shared_ptr<State> state_;
};

}  // namespace gdrmesh
