// Runs many pair tests over the cluster: each test holds its resources (a NIC port, a GPU, or
// a whole host when no NIC is named) while it runs, and tests queue per resource in plan
// order, so no resource is ever in two tests at once and no test overtakes an earlier one on
// the same resource. A global cap bounds the tests in flight. A stuck or lost pair holds only
// its own two resources, for at most its per-phase timeouts: it never stalls the sweep.
// Transient failures (worker lost, deadline) are retried up to `retries` times; integrity
// failures and refusals never are.
//
// No thread per test: tests advance on the channels' callbacks. run() blocks its caller until
// every task has finished or cancel() was called and the tests in flight have ended.
//
// Thread contract: run() on one thread at a time; cancel() and progress() from any thread.
#pragma once

#include <condition_variable>
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
};

struct ExecutorCallbacks {
  // Before a test starts (e.g. to record that it started); returns the test id to use.
  std::function<void(int index, const std::string& test_id)> on_start;
  // A finished test (after its retries).
  std::function<void(int index, const TestResult& result)> on_result;
};

struct ExecutorProgress {
  uint64_t total = 0, done = 0, running = 0, failed = 0, skipped = 0, retried = 0;
  // Dispatched tests whose start has not yet returned (a test that moves a manual clock waits
  // for 0, so no start takes its deadline at one time and its first reply at another).
  uint64_t starting = 0;
};

class Executor {
 public:
  Executor(WorkerDirectory& workers, Clock& clock, ExecutorOptions options);

  // Runs the tasks. Returns the number of tasks that did not run (cancelled). The functions of
  // `tasks` are called from run() and from the channels' callbacks, never concurrently with a
  // change of what they read (the caller keeps that stable until run() returns).
  size_t run(ExecutorTasks tasks, ExecutorCallbacks callbacks);
  size_t run(std::vector<ExecutorTask> tasks, ExecutorCallbacks callbacks);
  // Stops starting new tests; tests in flight finish (bounded by their timeouts). A cancel
  // before run() holds for it: run() then starts nothing (a sweep cancelled while it waited for
  // its hosts ran every test before, since run() cleared the cancel).
  void cancel();
  ExecutorProgress progress() const;

 private:
  struct Slot {
    int index = 0;                    // plan index
    std::vector<uint32_t> resources;  // ids into queues_
    uint32_t attempts = 0;
    bool running = false;
    bool finished = false;
  };
  // mu_ held: is the slot at the head of every queue it waits in?
  bool atHeads(size_t slot) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // mu_ held: marks startable candidates running and queues them for kick().
  void dispatch(const std::vector<size_t>& candidates) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the queued slots. One thread drains at a time, so a test that ends inline (an
  // offline worker) queues the next instead of recursing.
  void kick();
  void start(size_t slot);
  // run()'s end: every slot reported, or cancelled with nothing running; no callback inside.
  bool endedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void finished(size_t slot, PairTestOutcome outcome);

  WorkerDirectory& workers_;
  Clock& clock_;
  const ExecutorOptions options_;
  ExecutorCallbacks callbacks_;

  mutable Mutex mu_;  // guards everything below
  std::condition_variable cv_;
  // Set by run() (under mu_) before any test starts, read-only while they run: start() reads
  // it without mu_.
  ExecutorTasks tasks_;
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
  std::vector<std::deque<size_t>> queues_
      ABSL_GUARDED_BY(mu_);                           // resource id -> waiting/running slots
  std::deque<size_t> to_start_ ABSL_GUARDED_BY(mu_);  // dispatched, not yet started
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t running_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t remaining_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t in_callback_ ABSL_GUARDED_BY(mu_) = 0;  // finished() calls still using *this
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  ExecutorProgress progress_ ABSL_GUARDED_BY(mu_);
  std::deque<size_t> blocked_by_cap_
      ABSL_GUARDED_BY(mu_);  // ready slots waiting for the concurrency cap
};

}  // namespace gdrmesh
