// Runs many pair tests over the cluster: each test holds its resources (a NIC port, a GPU, or
// a whole host when no NIC is named) while it runs, and tests queue per resource in plan
// order, so no resource is ever in two tests at once and no test overtakes an earlier one on
// the same resource. A global cap bounds the tests in flight. A stuck or lost pair holds only
// its own two resources, for at most its per-phase timeouts: it never stalls the sweep.
// Transient failures (worker lost, deadline) are retried up to `retries` times; integrity
// failures and refusals never are.
//
// No thread per test and no thread waiting: start() starts the first tests on its caller's
// thread and returns; later tests start on the channels' callbacks (the thread that ended the
// test before them), and `on_done` says when every task has finished, or cancel() was called
// and the tests in flight have ended. Given ResourceLocks (ExecutorOptions::locks), each test
// also holds its resources there, so tests of other runs (another sweep, a `gdrmesh test`)
// never share them either.
//
// Thread contract: start() once per Executor; cancel() and progress() from any thread. The
// Executor may be destroyed from inside on_done (its last touch of *this) or after it.
#pragma once

#include <absl/container/inlined_vector.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/pair_spec.h"
#include "common/result.h"
#include "common/sync/mutex.h"
#include "coordinator/orchestrator/pair_test.h"
#include "coordinator/orchestrator/resource_locks.h"
#include "coordinator/orchestrator/worker_channel.h"

namespace gdrmesh {

struct ExecutorTask {
  int index = 0;                       // plan index, reported back with the result
  PairTestSpec spec;                   // complete: workers, devices, size, ...
  std::vector<std::string> resources;  // see resourceKeys()
};

// The resources a selector holds: "h1/mlx5_0", "h1/gpu:0"; "h1/*" when no NIC is named (the
// whole host).
std::vector<std::string> resourceKeys(const EndpointSelector& s);
// Both sides' resources, deduplicated (a loopback test on one NIC holds it once).
std::vector<std::string> resourceKeys(const PairTestSpec& spec);
std::vector<std::string> resourceKeys(const EndpointSelector& initiator,
                                      const EndpointSelector& target);

// The tasks of one run, made on demand: a slot keeps its plan index and resource ids (about
// 64 bytes), and a test's spec is built when it starts. A 1024-host all-pairs sweep (523,776
// tests) held ~500 MB of copied specs and key strings before this.
struct ExecutorTasks {
  size_t count = 0;
  std::function<int(size_t i)> index;                           // plan index, reported back
  std::function<PairTestSpec(size_t i)> spec;                   // complete spec of task i
  std::function<std::vector<std::string>(size_t i)> resources;  // see resourceKeys()
};

struct ExecutorOptions {
  uint32_t max_concurrency = 0;  // 0 = no cap beyond resources
  uint32_t retries = 1;
  PairTestOptions pair;
  // The coordinator's locks, shared by every run (null: this run's tasks are its only users of
  // their resources).
  ResourceLocks* locks = nullptr;
};

struct ExecutorCallbacks {
  // Before a test starts (e.g. to record that it started); returns the test id to use.
  std::function<void(int index, const std::string& test_id)> on_start;
  // A finished test (after its retries).
  std::function<void(int index, const TestResult& result)> on_result;
  // The run's end, once: every task reported, or cancelled and nothing left in flight.
  // `not_run`: the tasks that did not run (cancelled). Runs on the thread that ended the last
  // test, inside start() when nothing was left to run, or inside cancel().
  std::function<void(size_t not_run)> on_done;
};

struct ExecutorProgress {
  uint64_t total = 0, done = 0, running = 0, failed = 0, skipped = 0, retried = 0;
};

class Executor {
 public:
  Executor(WorkerDirectory& workers, Clock& clock, ExecutorOptions options);

  // Starts the tasks: the tests free to start now start before this returns, on this thread;
  // callbacks.on_done reports the end. The functions of `tasks` are called from start() and
  // from the channels' callbacks, never concurrently with a change of what they read (the
  // caller keeps that stable until on_done).
  void start(ExecutorTasks tasks, ExecutorCallbacks callbacks);
  void start(std::vector<ExecutorTask> tasks, ExecutorCallbacks callbacks);
  // Stops starting new tests; tests in flight finish (bounded by their timeouts), tests waiting
  // for another run's resources are taken back. A cancel before start() holds for it: start()
  // then starts nothing and reports the end at once.
  void cancel();
  ExecutorProgress progress() const;

 private:
  // One per task: 40 bytes, its resources inline (a test holds one or two; a vector of them was
  // a heap block of its own each, 21 MB more at 1,024 hosts' 523,776 tests; issue #19).
  struct Slot {
    int index = 0;  // plan index
    uint32_t attempts = 0;
    absl::InlinedVector<uint32_t, 2> resources;  // ids into queues_
    bool running = false;  // dispatched: waiting for the shared locks, starting or in flight
    bool finished = false;
    bool locked = false;    // holds its resources in options_.locks
    bool awaiting = false;  // waits for them there
    ResourceLocks::Ticket ticket = 0;
  };
  // mu_ held: is the slot at the head of every queue it waits in?
  bool atHeads(size_t slot) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // mu_ held: marks startable candidates running and queues them for kick().
  void dispatch(const std::vector<size_t>& candidates) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the queued slots (once they hold their shared locks). One thread drains at a time,
  // so a test that ends inline (an offline worker) queues the next instead of recursing.
  void kick();
  // Asks options_.locks for the slot's resources; true when it holds them now.
  bool lock(size_t slot);
  void granted(size_t slot);  // options_.locks granted a waiting slot's resources
  void startTest(size_t slot);
  // The end: every slot reported, or cancelled with nothing running; no callback inside.
  bool endedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A thread leaves the executor (it entered with ++in_callback_): the last one out after the
  // end reports it (on_done), as its last touch of *this.
  void leave();
  void finished(size_t slot, PairTestOutcome outcome);

  WorkerDirectory& workers_;
  Clock& clock_;
  const ExecutorOptions options_;
  ExecutorCallbacks callbacks_;

  mutable Mutex mu_;  // guards everything below
  // Set by start() (under mu_) before any test starts, read-only while they run: startTest()
  // reads it without mu_.
  ExecutorTasks tasks_;
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
  std::vector<std::deque<size_t>> queues_
      ABSL_GUARDED_BY(mu_);                           // resource id -> waiting/running slots
  std::deque<size_t> to_start_ ABSL_GUARDED_BY(mu_);  // dispatched, not yet started
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t running_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t remaining_ ABSL_GUARDED_BY(mu_) = 0;
  // Threads inside start(), finished() or granted(), still using *this.
  uint64_t in_callback_ ABSL_GUARDED_BY(mu_) = 0;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool done_reported_ ABSL_GUARDED_BY(mu_) = false;
  ExecutorProgress progress_ ABSL_GUARDED_BY(mu_);
  std::deque<size_t> blocked_by_cap_
      ABSL_GUARDED_BY(mu_);  // ready slots waiting for the concurrency cap
};

}  // namespace gdrmesh
