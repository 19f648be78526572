// A one-shot event: set() once, wait() until it is set. For a thread that has nothing to do
// until something ends (an Executor's on_done, a one-pair run's result): it sleeps on a
// condition variable, with no clock and no polling.
//
// Thread contract: thread-safe; set() may run on any thread, and the waiter may destroy the
// event as soon as wait() returns (set() notifies with the mutex held, so it has finished with
// the event by then).
#pragma once

#include <condition_variable>

#include "common/sync/mutex.h"

namespace gdrmesh {

class Event {
 public:
  void set() {
    MutexLock lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool isSet() {
    MutexLock lock(mu_);
    return set_;
  }
  void wait() {
    UniqueLock lock(mu_);
    cv_.wait(lock.native(), [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return set_; });
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  bool set_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gdrmesh
