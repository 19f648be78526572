// The coordinator's view of its workers: who is registered, their inventory (converted to
// domain types once, at registration), liveness, and their command channels. Workers that
// disconnect stay listed as offline. It is the orchestrator's WorkerDirectory.
//
// Thread contract: thread-safe. Snapshots handed out are immutable.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/inventory.h"
#include "common/status.h"
#include "common/sync/mutex.h"
#include "coordinator/orchestrator/worker_channel.h"
#include "coordinator/service/grpc_worker_channel.h"
#include "coordinator/service/worker_link.h"

namespace gdrmesh {

struct WorkerEntry {
  std::shared_ptr<const WorkerStatus> status;  // never null
  std::shared_ptr<WorkerLink> link;            // null when offline
  std::shared_ptr<GrpcWorkerChannel> channel;  // null when offline
};

class Registry final : public WorkerDirectory {
 public:
  // Adds an online worker. Refused (kInvalidArgument) when a worker of that name is online.
  Status add(WorkerStatus status, std::shared_ptr<WorkerLink> link);
  // Marks the worker offline if `link` is still its current link.
  void remove(const std::string& name, const WorkerLink* link);
  void heartbeat(const std::string& name, int64_t unix_ms, uint32_t active_tests);
  std::optional<WorkerEntry> entry(const std::string& name) const;
  std::vector<WorkerEntry> entries() const;
  // Links of online workers whose last heartbeat is older than `cutoff_ms` (unix ms).
  std::vector<std::shared_ptr<WorkerLink>> stale(int64_t cutoff_ms) const;
  // Remembers a worker known from the store (offline until it connects).
  void addKnown(WorkerStatus status);
  // `gdrmesh worker remove`: forgets the worker, so that list(), get() and channel() no
  // longer know it. kNotFound (naming it) when no worker of that name is known;
  // kFailedPrecondition when it is online, unless `force`. `also` runs under the registry's
  // lock before the entry goes (the caller removes the stored row there), so that the worker
  // cannot register again in between; its error leaves the entry in place. Returns the removed
  // entry: when it was online its link is set, and the caller ends its stream (link->fail),
  // after which the worker may register again.
  Result<WorkerEntry> forget(const std::string& name, bool force,
                             const std::function<Status()>& also = {});
  // A protocol violation by `name` (a pair test's reply claimed what it was not asked):
  // counted against the worker, shown in its findings ("3 protocol violations, last: ...")
  // for as long as this coordinator runs, across reconnections. Returns the count so far.
  uint64_t noteViolation(const std::string& name, const std::string& what);

  // WorkerDirectory
  std::vector<WorkerStatus> list() const override;
  std::shared_ptr<const WorkerStatus> get(const std::string& name) const override;
  std::shared_ptr<WorkerChannel> channel(const std::string& name) const override;
  // add(), remove() and forget() are WorkerDirectory's registration and loss events (watch()).

 private:
  // Take mu_ themselves: add() and forget() announce the change after, outside it.
  Status addLocked(WorkerStatus status, std::shared_ptr<WorkerLink> link) ABSL_LOCKS_EXCLUDED(mu_);
  Result<WorkerEntry> forgetLocked(const std::string& name, bool force,
                                   const std::function<Status()>& also) ABSL_LOCKS_EXCLUDED(mu_);
  struct Violations {
    uint64_t count = 0;
    std::string last;
    std::string finding() const;
  };
  mutable Mutex mu_;
  std::map<std::string, WorkerEntry> workers_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Violations> violations_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdrmesh
