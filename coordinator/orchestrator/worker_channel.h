// The seam between the orchestrator and the workers: one worker's command channel, in domain
// types. The gRPC stream link implements it in coordinator/service; tests use
// tests/support/fake_worker_channel.h; simulated workers sit behind the real gRPC path.
//
// Every call is asynchronous and its `done` runs exactly once: with the worker's reply, with
// kUnavailable ("worker lost: ...") when the worker's stream is gone, or with
// kDeadlineExceeded at the deadline. `done` may run inline (a lost worker) or on any thread,
// and must not block.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/endpoint.h"
#include "common/fabric/counters.h"
#include "common/fabric/discovery.h"
#include "common/inventory.h"
#include "common/status.h"
#include "common/sync/mutex.h"
#include "coordinator/orchestrator/loss_signal.h"

namespace gdrmesh {

// Target, lean protocol: wait for the armed run, verify when asked, release.
struct FinishCommand {
  std::string test_id;
  bool verify = false;
  uint64_t verify_length = 0;
  double timeout_seconds = 0;
};

// Prepare one side. With `peer`, the worker also connects before it answers; with `arm`, it
// also starts its share of the run in the background (collected by finish(), or, with
// `finish`, answered by the worker itself: see WorkerChannel::prepareFinishing).
struct PrepareCommand {
  SideSpec side;
  std::optional<EndpointDesc> peer;
  std::optional<RunSpec> arm;
  // Lean target whose transport signals the end of the run over the data path (arm's
  // end_signal): the finish, sent now and answered when the armed run ends.
  std::optional<FinishCommand> finish;
};

// Initiator, lean protocol: connect, run, verify when asked, release.
struct StartCommand {
  std::string test_id;
  EndpointDesc peer;
  RunSpec run;
  bool verify = false;
  uint64_t verify_length = 0;
};

class WorkerChannel {
 public:
  template <typename T>
  using Done = std::function<void(Result<T>)>;
  using Deadline = Clock::TimePoint;

  virtual ~WorkerChannel() = default;
  virtual const std::string& worker() const = 0;
  // True once the worker's stream is gone; every later call fails at once.
  virtual bool lost() const = 0;
  // The loss as an event: `on_lost` runs once when the worker is declared lost (its stream
  // closed, its heartbeats missed), after the calls pending on it have failed; inline when it
  // is lost already. Destroying the handle unsubscribes (LossSignal's contract: the callback
  // is then neither running nor due). `on_lost` must not block.
  virtual std::unique_ptr<LossSubscription> onLost(LossSignal::Callback on_lost) = 0;

  virtual void prepare(const PrepareCommand& c, Deadline deadline, Done<EndpointDesc> done) = 0;
  // prepare() with c.finish set (three commands per test): `done` as prepare()'s; `finished`
  // runs exactly once, with the worker's finish reply once the initiator's end signal has
  // reached the target (by `finish_deadline`), with the prepare's error when it failed, or
  // with the worker's loss.
  virtual void prepareFinishing(const PrepareCommand& c, Deadline deadline, Done<EndpointDesc> done,
                                Deadline finish_deadline, Done<SideOutcome> finished) = 0;
  // Classic protocol (rdma_cm): each step its own round trip.
  virtual void connect(const std::string& test_id, const EndpointDesc& peer, Deadline deadline,
                       Done<SideOutcome> done) = 0;  // path_mtu set
  virtual void run(const std::string& test_id, const RunSpec& spec, Deadline deadline,
                   Done<SideOutcome> done) = 0;  // measurement set
  virtual void verify(const std::string& test_id, uint64_t length, uint64_t reveal_seed,
                      Deadline deadline,
                      Done<SideOutcome> done) = 0;  // integrity set
  // (reveal_seed != 0: a sealed test's seed, revealed after a digest mismatch; the worker
  // checks the landed data it kept against it.)
  virtual void release(const std::string& test_id, const std::string& reason, Deadline deadline,
                       Done<bool> done) = 0;
  // Lean protocol.
  virtual void start(const StartCommand& c, Deadline deadline, Done<SideOutcome> done) = 0;
  virtual void finish(const FinishCommand& c, Deadline deadline, Done<SideOutcome> done) = 0;
  // `gdrmesh fabric discover --worker`: the worker walks the InfiniBand subnet from a local
  // port. `done` gets the discovery's outcome, a fabric failure (no device, no fabric module)
  // included; an error only when the command did not run (worker lost, deadline).
  virtual void discoverFabric(const fabric::DiscoverRequest& request, Deadline deadline,
                              Done<fabric::DiscoverOutcome> done) = 0;
  // A sweep's fabric reader: reads the port counters of `request.ports` through the worker's
  // InfiniBand port. `done` gets the read's outcome (a worker without the fabric module, a
  // port that did not answer: results); an error only when the command did not run.
  virtual void readPortCounters(const fabric::CounterReadRequest& request, Deadline deadline,
                                Done<fabric::CounterReadOutcome> done) = 0;
};

// The workers the orchestrator may use: their state and inventory, and their channels.
//
// Thread contract: thread-safe.
class WorkerDirectory {
 public:
  using WatchId = uint64_t;
  using OnChange = std::function<void(const std::string& name)>;

  virtual ~WorkerDirectory() = default;
  virtual std::vector<WorkerStatus> list() const = 0;
  // An immutable snapshot (cheap to take per test); null when unknown.
  virtual std::shared_ptr<const WorkerStatus> get(const std::string& name) const = 0;
  // The channel of an online worker; null when the worker is unknown or offline.
  virtual std::shared_ptr<WorkerChannel> channel(const std::string& name) const = 0;

  // Registration and loss as events: `on_change` runs with the worker's name each time a worker
  // registers (or registers again), goes offline or is removed, once the change shows in get()
  // and list(), on the thread that made the change. It must not block and must not call
  // watch() or unwatch().
  WatchId watch(OnChange on_change) {
    MutexLock lock(watch_mu_);
    const WatchId id = next_watch_++;
    watchers_.emplace(id, std::move(on_change));
    return id;
  }
  // Once this returns the callback neither runs nor will run again. Not from inside a callback,
  // and not while holding a lock the callback takes.
  void unwatch(WatchId id) {
    MutexLock lock(watch_mu_);
    watchers_.erase(id);
  }

 protected:
  // Implementations call this after each such change, outside their own locks.
  void changed(const std::string& name) {
    MutexLock lock(watch_mu_);  // held: unwatch() waits for a running call
    for (const auto& [id, on_change] : watchers_) on_change(name);
  }

 private:
  Mutex watch_mu_;
  std::map<WatchId, OnChange> watchers_ ABSL_GUARDED_BY(watch_mu_);
  WatchId next_watch_ ABSL_GUARDED_BY(watch_mu_) = 1;
};

}  // namespace gdrmesh
