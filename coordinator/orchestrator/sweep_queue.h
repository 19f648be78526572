// The queue of sweeps: starts a sweep (or queues it behind the running one when asked), runs
// one sweep at a time on the queue's own thread (the run itself is SweepRunner's), cancels a
// queued or running sweep, and at start-up resumes the sweeps a previous coordinator left
// running or queued: finished results are kept, the tests that were in flight are recorded as
// ERROR and run again, nothing runs twice.
//
// Thread contract: thread-safe. Callers never block on a running sweep.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "common/result.h"
#include "common/sync/mutex.h"
#include "coordinator/orchestrator/sweep_board.h"
#include "coordinator/orchestrator/sweep_run.h"

namespace gdrmesh {

class SweepQueue {
 public:
  // Starts the queue's thread; `runner` and `board` outlive the queue.
  SweepQueue(SweepRunner& runner, SweepBoard& board);
  ~SweepQueue();
  SweepQueue(const SweepQueue&) = delete;
  SweepQueue& operator=(const SweepQueue&) = delete;

  // Plans and queues a sweep; refused while another is queued or runs, unless spec.queue.
  Result<SweepProgress> start(const SweepSpec& spec);
  // A queued sweep is taken off the queue and stored as cancelled; a running one is asked to
  // stop (its tests in flight end). nullopt: the sweep is neither queued nor running here.
  std::optional<SweepProgress> cancel(const std::string& id);
  // True while a sweep runs or waits.
  bool busy();
  // At start-up: sweeps left running or queued by a previous coordinator (killed, or stopped by
  // a shutdown mid-sweep) are queued again.
  void resumeInterrupted();
  // Stops the thread; a running sweep ends as interrupted (it resumes at the next start).
  void shutdown();

 private:
  void loop();
  // Restores a stored running or queued sweep as a queued LiveSweep; null (and its row ended
  // as interrupted) when it cannot run again.
  std::shared_ptr<LiveSweep> restore(const SweepRecord& rec);
  // Tests that were in flight when the coordinator stopped get an ERROR row, from their markers.
  void recordInterrupted(const SweepRecord& rec, size_t plan_size);
  // The finished results of a resumed sweep, kept (s->plan_size set).
  void keepFinished(LiveSweep& s);
  void enqueue(const std::shared_ptr<LiveSweep>& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(board_.mu);

  SweepRunner& runner_;
  SweepBoard& board_;
  std::deque<std::shared_ptr<LiveSweep>> queue_ ABSL_GUARDED_BY(board_.mu);
  std::shared_ptr<LiveSweep> current_ ABSL_GUARDED_BY(board_.mu);
  Mutex join_mu_;  // serialises the join of thread_
  std::thread thread_;
};

}  // namespace gdrmesh
