// Retention: keeps the results database bounded. Raw result rows older than `days` are
// deleted in short batches (each its own transaction, so a result write waits at most one
// batch); every ended sweep's per-pair aggregates and totals (SweepStore::aggregateSweep) are
// made before its rows go and are kept forever, with the sweep row and its report, so sweeps
// lists, sweep matrices and pair history keep answering for old sweeps. Fabric snapshots older
// than `days` lose their document (rows, counts and findings stay; the newest stays whole).
//
// A pass runs at start() and then every `interval` on the injected clock. The clock's timer
// only wakes the retention thread (timer callbacks must not block); passes run there.
//
// Thread contract: start() and stop() from one owner thread; runOnce() and lastPass() from
// any thread (passes never overlap).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <thread>

#include "common/clock.h"
#include "common/lifeline.h"
#include "common/result.h"
#include "common/sync/mutex.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

struct RetentionOptions {
  uint32_t days = 0;               // keep raw rows this many days; 0 = keep everything
  double interval_seconds = 3600;  // between passes
  uint32_t batch_rows = 2000;      // rows deleted per transaction
  uint32_t max_batches = 100000;   // per pass (bounds one pass; the next goes on)
};

// Checks the options: errors name the setting and the fix.
Status validateRetention(const RetentionOptions& options);

struct RetentionPass {
  int64_t cutoff_ms = 0;           // rows that started before this were deleted
  uint32_t sweeps_aggregated = 0;  // sweeps that had no aggregates yet
  uint64_t rows_deleted = 0;
  uint32_t batches = 0;
  uint64_t fabric_documents_dropped = 0;  // fabric snapshots whose document went
  Status status;                          // the first error, if any (the pass stops there)
};

class Retention {
 public:
  // `fabric` (optional): the fabric history, whose snapshot documents older than the cutoff
  // are dropped too (their rows and findings stay, like a sweep's aggregates).
  Retention(Clock& clock, SweepAggregates& sweeps, ResultRetention& results,
            RetentionOptions options, FabricHistory* fabric = nullptr);
  ~Retention();
  Retention(const Retention&) = delete;
  Retention& operator=(const Retention&) = delete;

  // Starts the retention thread and schedules the first pass now. No-op when days is 0.
  void start();
  // Cancels the timer and joins the thread (a pass in progress finishes its batch first).
  void stop();
  // One pass on the calling thread: aggregates ended sweeps created before the cutoff that
  // have no aggregates, then deletes rows older than the cutoff, batch by batch.
  RetentionPass runOnce();
  // Passes completed so far (by the timer or runOnce) and the last one.
  uint64_t passes() const;
  RetentionPass lastPass() const;
  // Tests: waits until at least `n` passes have completed (an event: each pass ends by waking
  // it; no real-time bound, the test's own timeout is the bound of a hang).
  void waitForPasses(uint64_t n) const;

 private:
  void loop();
  RetentionPass pass();  // the work of one pass, uncounted
  void scheduleNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Clock& clock_;
  SweepAggregates& sweeps_;
  ResultRetention& results_;
  const RetentionOptions options_;
  FabricHistory* const fabric_;

  Mutex pass_mu_;     // one pass at a time
  mutable Mutex mu_;  // guards everything below
  mutable std::condition_variable cv_;
  bool due_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Clock::TimerId timer_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t passes_ ABSL_GUARDED_BY(mu_) = 0;
  RetentionPass last_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
  Lifeline line_;  // the timer's way back to this object, closed when it goes
};

}  // namespace gdrmesh
