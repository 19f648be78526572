// A bounded pool for the coordinator's commands: at most `max_threads` threads, started as
// demand grows and kept until join(), and at most `max_queued` commands waiting for one. A
// full pool refuses work at once (submit() returns false) so the caller can answer the command
// with RESOURCE_EXHAUSTED instead of growing without bound. No thread outlives join().
//
// Thread contract: submit(), stop(), queued() and threads() may be called from any thread;
// join() from one thread that is not a task of this pool; the destructor stops and joins.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "common/sync/mutex.h"

namespace gdrmesh {

class CommandPool {
 public:
  struct Options {
    size_t max_threads = 8;
    size_t max_queued = 256;
  };
  explicit CommandPool(Options options);
  ~CommandPool();
  CommandPool(const CommandPool&) = delete;
  CommandPool& operator=(const CommandPool&) = delete;

  // Queues `task`; false when the queue is full, the pool is closed, or no thread can be
  // started and none is running (the task is then dropped).
  bool submit(std::function<void()> task);
  // Stops accepting and starting work, and drops the tasks still queued (returns how many).
  // Tasks already running go on; join() waits for them.
  size_t stop();
  // Waits for the running tasks and joins every thread (stops first if needed).
  void join();

  size_t queued() const;
  size_t threads() const;
  const Options& options() const { return options_; }

 private:
  void loop();

  const Options options_;
  mutable Mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
  size_t idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gdrmesh
