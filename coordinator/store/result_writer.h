// ResultWriter: batches results into ResultRecords::insertResults transactions on one thread, so
// the threads that produce results never wait for the database.
//
// Guarantees:
//  - Order: rows reach the store in submit() order, and on_stored callbacks run in that order.
//  - Nothing is lost while the process lives: a batch the store refuses for a reason that may
//    pass (disk full, database locked, I/O error) stays queued, at the front, and is retried
//    with exponential backoff until it is stored. Only a row the store refuses for good
//    (kInvalidArgument: empty or duplicate test_id, ...) is dropped, and its on_stored says why;
//    the rest of its batch is still stored.
//  - Nothing is lost on a kill -9 either: a row whose batch failed for a reason that may pass is
//    appended to the writer's spool (Options::spool, a ResultSpool: JSON lines, synced) before it
//    is requeued, and the spool is replayed (and removed) once every spooled row has been stored.
//    A coordinator killed meanwhile replays it at its next start. Without a spool (an in-memory
//    database) such a row is held in memory only.
//  - on_stored is called exactly once per row: with the row id, with the refusal, or (only when
//    the writer is destroyed while the store keeps failing) with the last error.
//  - A row the store refused for a reason that may pass is "held" (held() lists it) until stored.
//  - Time is the injected gdrmesh::Clock: the batch delay, the backoff, the shutdown grace and
//    flushFor() are timers on it, so a ManualClock drives them in tests.
//
// Thread contract: submit(), write(), flush(), flushFor(), pending(), held() and lastError() may be
// called from any
// thread. on_stored and Options::on_batch_error run on the writer thread, outside the writer's
// lock; they must not block for long and must not call flush() (which returns at once there).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "common/status.h"
#include "common/sync/mutex.h"
#include "coordinator/store/result_spool.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

class ResultWriter {
 public:
  using OnStored = std::function<void(Result<int64_t>)>;

  struct Options {
    // Rows per insertResults transaction.
    size_t max_batch = 256;
    // How long the oldest queued row may wait for companions before its batch is written.
    int max_delay_ms = 20;
    // Backoff between attempts after a failed batch: doubles from min to max.
    int min_backoff_ms = 10;
    int max_backoff_ms = 2000;
    // On destruction, how long to keep retrying a failing store before giving the remaining rows
    // up (their on_stored gets the last error).
    int shutdown_grace_ms = 5000;
    // Called on the writer thread after each failed attempt: the error and the rows waiting.
    std::function<void(const Status&, size_t pending)> on_batch_error;
    // Where rows the store refused for a reason that may pass are made durable; it must outlive
    // the writer. nullptr: none (such rows are held in memory only).
    ResultSpool* spool = nullptr;
  };

  ResultWriter(ResultRecords& store, Clock& clock) : ResultWriter(store, clock, Options()) {}
  ResultWriter(ResultRecords& store, Clock& clock, Options options);
  // Writes what is queued (see Options::shutdown_grace_ms), then stops the writer thread.
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  // Queues `result`; never waits for the store.
  void submit(TestResult result, OnStored on_stored = {});
  // For a caller that answers with the outcome (`gdrmesh test`): queues `result` to be written at
  // once (no batch delay, no backoff wait) and waits for its first attempt. Returns the row id, the
  // refusal for good, or, when the store refused it for a reason that may pass, that error with
  // what became of the row: durable in the spool (or not, and why), held (listed by held()) and
  // stored once the store takes writes again. `on_stored` runs once, as for submit().
  Result<int64_t> write(TestResult result, OnStored on_stored = {});
  // Writes at once what is queued and returns when every row submitted before the call has been
  // stored or refused. While the store keeps failing, this waits (retries go on).
  void flush();
  // flush() that gives up after `timeout`; false when rows submitted before the call remain.
  bool flushFor(std::chrono::milliseconds timeout);
  // Rows submitted and not yet stored or refused (queued or being written).
  size_t pending() const;
  // Rows the store refused for a reason that may pass and that are not stored yet, newest first.
  std::vector<TestResult> held() const;
  // The error of the last failed attempt, OK once a later attempt succeeded.
  Status lastError() const;

 private:
  struct Item {
    TestResult row;
    OnStored on_stored;
    Clock::TimePoint queued_at;
    bool spooled = false;  // in the spool file
    bool held = false;     // an attempt failed for a reason that may pass
    // write()'s: called once, after the first such failure, with the error and `spooled`.
    std::function<void(const Status&, bool spooled)> on_held = nullptr;
  };
  // What one attempt did: rows stored or refused (callbacks run), rows to put back at the
  // front of the queue, and the error that stopped it (OK when none).
  struct Outcome {
    size_t resolved = 0;
    size_t spooled_resolved = 0;  // of those, rows that were in the spool
    size_t newly_spooled = 0;
    std::vector<Item> requeue;
    std::vector<std::function<void()>> held_calls;  // on_held of rows newly held
    Status error;
  };

  void run();
  // One attempt at `batch`, on the writer thread without mu_. With `give_up`, rows that fail for
  // a reason that may pass are resolved with the error instead of requeued.
  Outcome attempt(std::vector<Item> batch, bool give_up);
  // The writer thread's bookkeeping after attempt(), with mu_ held (the writer's UniqueLock);
  // releases it around callbacks and the replay, and holds it again when it returns.
  void finishAttempt(Outcome out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool waitForFlush(const Clock::TimePoint* deadline);

  ResultRecords& store_;
  Clock& clock_;
  const Options options_;

  mutable Mutex mu_;
  std::condition_variable wake_writer_;    // work, a flush, or stop
  std::condition_variable wake_flushers_;  // rows resolved
  std::deque<Item> queue_ ABSL_GUARDED_BY(mu_);
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;       // rows taken by the writer
  uint64_t submitted_ ABSL_GUARDED_BY(mu_) = 0;     // rows ever submitted
  uint64_t resolved_ ABSL_GUARDED_BY(mu_) = 0;      // rows stored or refused, in order
  uint64_t flush_target_ ABSL_GUARDED_BY(mu_) = 0;  // write now up to this row
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool urgent_ ABSL_GUARDED_BY(mu_) = false;                     // write() waits: attempt now
  std::vector<TestResult> in_flight_held_ ABSL_GUARDED_BY(mu_);  // held rows being written
  Clock::TimePoint retry_at_ ABSL_GUARDED_BY(mu_);               // no attempt before this
  int backoff_ms_ ABSL_GUARDED_BY(mu_) = 0;                      // 0 after a success
  Status last_error_ ABSL_GUARDED_BY(mu_);
  size_t spooled_waiting_ ABSL_GUARDED_BY(mu_) = 0;  // spooled rows not yet resolved
  std::thread thread_;                               // last: starts after everything above exists
};

}  // namespace gdrmesh
