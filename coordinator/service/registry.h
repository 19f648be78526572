// The coordinator's view of its workers: who is registered, their inventory, liveness, and the
// link to send them commands. Workers that disconnect stay listed as offline.
//
// Thread contract: thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/inventory.h"
#include "common/status.h"
#include "coordinator/service/worker_link.h"
#include "gdrmesh/v1/gdrmesh.pb.h"

namespace gdrmesh {

struct WorkerEntry {
  std::string name;
  bool online = false;
  std::string peer;
  int64_t connected_ms = 0;
  int64_t last_heartbeat_ms = 0;
  uint32_t active_tests = 0;
  v1::Inventory inventory;
  std::shared_ptr<WorkerLink> link;  // null when offline
};

class Registry {
 public:
  // Adds an online worker. Refused (kInvalidArgument) when a worker of that name is online.
  Status add(WorkerEntry entry);
  // Marks the worker offline if `link` is still its current link.
  void remove(const std::string& name, const WorkerLink* link);
  void heartbeat(const std::string& name, int64_t unix_ms, uint32_t active_tests);
  std::optional<WorkerEntry> get(const std::string& name) const;
  std::vector<WorkerEntry> list() const;
  // Online workers whose last heartbeat is older than `cutoff_ms` (unix ms).
  std::vector<WorkerEntry> stale(int64_t cutoff_ms) const;
  // Remembers a worker known from the store (offline until it connects).
  void addKnown(const std::string& name, const v1::Inventory& inventory, int64_t last_seen_ms);

 private:
  mutable std::mutex mu_;  // guards workers_
  std::map<std::string, WorkerEntry> workers_;
};

}  // namespace gdrmesh
