#include "coordinator/service/registry.h"

namespace gdrmesh {

Status Registry::add(WorkerEntry entry) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(entry.name);
  if (it != workers_.end() && it->second.online && it->second.link && !it->second.link->lost()) {
    return invalidArgument(
        "worker name '" + entry.name + "' is already registered by " + it->second.peer,
        "give each worker a unique --name");
  }
  entry.online = true;
  workers_[entry.name] = std::move(entry);
  return {};
}

void Registry::remove(const std::string& name, const WorkerLink* link) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(name);
  if (it == workers_.end() || it->second.link.get() != link) return;
  it->second.online = false;
  it->second.link.reset();
  it->second.active_tests = 0;
}

void Registry::heartbeat(const std::string& name, int64_t unix_ms, uint32_t active_tests) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(name);
  if (it == workers_.end()) return;
  it->second.last_heartbeat_ms = unix_ms;
  it->second.active_tests = active_tests;
}

std::optional<WorkerEntry> Registry::get(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(name);
  if (it == workers_.end()) return std::nullopt;
  return it->second;
}

std::vector<WorkerEntry> Registry::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WorkerEntry> out;
  for (const auto& [name, e] : workers_) out.push_back(e);
  return out;
}

std::vector<WorkerEntry> Registry::stale(int64_t cutoff_ms) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WorkerEntry> out;
  for (const auto& [name, e] : workers_) {
    if (e.online && e.last_heartbeat_ms < cutoff_ms) out.push_back(e);
  }
  return out;
}

void Registry::addKnown(const std::string& name, const v1::Inventory& inventory,
                        int64_t last_seen_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (workers_.count(name) != 0) return;
  WorkerEntry e;
  e.name = name;
  e.online = false;
  e.inventory = inventory;
  e.last_heartbeat_ms = last_seen_ms;
  workers_[name] = std::move(e);
}

}  // namespace gdrmesh
