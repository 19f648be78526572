// The resources a test holds, across runs: every Executor given these locks (each sweep's, and
// each `gdrmesh test`'s one-pair run) asks here before a test starts and gives its resources
// back when it ends, so no NIC port, GPU or host is in two tests at once whichever run they
// belong to. A request waits behind every earlier request it conflicts with (first come, first
// served: a `gdrmesh test` on a NIC a sweep uses starts after the sweep's test on it, and the
// sweep's next test on that NIC after it).
//
// Keys are resourceKeys() (executor.h): "h1/mlx5_0", "h1/gpu:0", or "h1/*" for a whole host,
// which conflicts with every key of h1.
//
// Thread contract: thread-safe. `granted` runs once, on the thread whose release() or
// withdraw() made room, outside the locks' mutex; it must not block.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/sync/mutex.h"

namespace gdrmesh {

class ResourceLocks {
 public:
  using Ticket = uint64_t;

  // A fresh ticket for acquire() (taken first, so that a caller can record it before the grant
  // can happen on another thread).
  Ticket newTicket();
  // Asks for `keys` under `ticket`. Returns true when they are held now (`granted` is not
  // called); false when the request waits: `granted` runs once they are held.
  bool acquire(Ticket ticket, std::vector<std::string> keys, std::function<void()> granted);
  // Gives back what `ticket` holds; requests waiting behind it may be granted (on this thread).
  void release(Ticket ticket);
  // Takes back a waiting request: true when it was waiting (`granted` never runs), false when
  // it was granted already (its holder must release() it).
  bool withdraw(Ticket ticket);

  size_t held() const;     // tickets holding their resources
  size_t waiting() const;  // tickets waiting for theirs

 private:
  struct Waiter {
    Ticket ticket = 0;
    std::vector<std::string> keys;
    std::function<void()> granted;
  };
  struct HostHolds {
    int whole = 0;                     // holders of "host/*"
    std::map<std::string, int> parts;  // "mlx5_0" -> holders (one at most)
  };
  bool heldConflicts(const std::vector<std::string>& keys) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void hold(Ticket ticket, std::vector<std::string> keys) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Grants the waiters that conflict neither with what is held nor with an earlier waiter;
  // returns their callbacks, to run outside mu_.
  std::vector<std::function<void()>> grantWaiters() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  Ticket next_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, HostHolds> hosts_ ABSL_GUARDED_BY(mu_);
  std::map<Ticket, std::vector<std::string>> holders_ ABSL_GUARDED_BY(mu_);
  std::deque<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
};

// Do two resource key lists conflict ("h1/*" with any key of h1; any key with itself)?
bool resourcesConflict(const std::vector<std::string>& a, const std::vector<std::string>& b);

}  // namespace gdrmesh
