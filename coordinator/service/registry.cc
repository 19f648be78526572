#include "coordinator/service/registry.h"

#include <algorithm>

#include "common/sync/mutex.h"

namespace gdrmesh {

Status Registry::add(WorkerStatus status, std::shared_ptr<WorkerLink> link) {
  const std::string name = status.name;
  Status added = addLocked(std::move(status), std::move(link));
  if (added.ok()) changed(name);  // outside mu_: watchers read the registry
  return added;
}

Status Registry::addLocked(WorkerStatus status, std::shared_ptr<WorkerLink> link) {
  MutexLock lock(mu_);
  auto it = workers_.find(status.name);
  if (it != workers_.end() && it->second.link && !it->second.link->lost()) {
    return invalidArgument(
        "worker name '" + status.name + "' is already registered by " + it->second.status->peer,
        "give each worker a unique --name");
  }
  status.state = "online";
  if (auto v = violations_.find(status.name); v != violations_.end()) {
    status.findings.push_back(v->second.finding());  // a reconnection does not clear them
  }
  WorkerEntry e;
  const std::string name = status.name;
  e.status = std::make_shared<const WorkerStatus>(std::move(status));
  e.channel = std::make_shared<GrpcWorkerChannel>(link);
  e.link = std::move(link);
  workers_[name] = std::move(e);
  return {};
}

void Registry::remove(const std::string& name, const WorkerLink* link) {
  {
    MutexLock lock(mu_);
    auto it = workers_.find(name);
    if (it == workers_.end() || it->second.link.get() != link) return;
    auto s = std::make_shared<WorkerStatus>(*it->second.status);
    s->state = "offline";
    s->active_tests = 0;
    it->second.status = std::move(s);
    it->second.link.reset();
    it->second.channel.reset();
  }
  changed(name);
}

void Registry::heartbeat(const std::string& name, int64_t unix_ms, uint32_t active_tests) {
  MutexLock lock(mu_);
  auto it = workers_.find(name);
  if (it == workers_.end()) return;
  auto s = std::make_shared<WorkerStatus>(*it->second.status);
  s->last_heartbeat_ms = unix_ms;
  s->active_tests = active_tests;
  it->second.status = std::move(s);
}

std::optional<WorkerEntry> Registry::entry(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = workers_.find(name);
  if (it == workers_.end()) return std::nullopt;
  return it->second;
}

std::vector<WorkerEntry> Registry::entries() const {
  MutexLock lock(mu_);
  std::vector<WorkerEntry> out;
  out.reserve(workers_.size());
  for (const auto& [name, e] : workers_) out.push_back(e);
  return out;
}

std::vector<std::shared_ptr<WorkerLink>> Registry::stale(int64_t cutoff_ms) const {
  MutexLock lock(mu_);
  std::vector<std::shared_ptr<WorkerLink>> out;
  for (const auto& [name, e] : workers_) {
    if (e.link && e.status->last_heartbeat_ms < cutoff_ms) out.push_back(e.link);
  }
  return out;
}

void Registry::addKnown(WorkerStatus status) {
  MutexLock lock(mu_);
  if (workers_.count(status.name) != 0) return;
  status.state = "offline";
  WorkerEntry e;
  const std::string name = status.name;
  e.status = std::make_shared<const WorkerStatus>(std::move(status));
  workers_[name] = std::move(e);
}

Result<WorkerEntry> Registry::forget(const std::string& name, bool force,
                                     const std::function<Status()>& also) {
  Result<WorkerEntry> forgotten = forgetLocked(name, force, also);
  if (forgotten.ok()) changed(name);
  return forgotten;
}

Result<WorkerEntry> Registry::forgetLocked(const std::string& name, bool force,
                                           const std::function<Status()>& also) {
  MutexLock lock(mu_);
  auto it = workers_.find(name);
  if (it == workers_.end()) {
    std::string known;
    size_t shown = 0;
    for (const auto& [n, e] : workers_) {
      if (++shown > 20) {
        known += ", ...";
        break;
      }
      known += (known.empty() ? "" : ", ") + n;
    }
    return notFound(
        "unknown worker '" + name + "' (known: " + (known.empty() ? "none" : known) + ")",
        "give a name as `gdrmesh workers` lists it");
  }
  const bool online = it->second.link && !it->second.link->lost();
  if (online && !force) {
    return failedPrecondition(
        "worker '" + name + "' is online (connected from " + it->second.status->peer + ")",
        "stop the worker first, or add --force to end its connection (a worker that is still "
        "running registers again)");
  }
  if (also) GDR_RETURN_IF_ERROR(also());
  WorkerEntry e = std::move(it->second);
  workers_.erase(it);
  if (!online) {
    e.link.reset();
    e.channel.reset();
  }
  return e;
}

std::string Registry::Violations::finding() const {
  return std::to_string(count) + " protocol violation" + (count == 1 ? "" : "s") +
         " in pair tests, last: " + last;
}

uint64_t Registry::noteViolation(const std::string& name, const std::string& what) {
  MutexLock lock(mu_);
  Violations& v = violations_[name];
  const std::string before = v.count > 0 ? v.finding() : "";
  ++v.count;
  v.last = what;
  auto it = workers_.find(name);
  if (it != workers_.end()) {
    auto s = std::make_shared<WorkerStatus>(*it->second.status);
    auto& f = s->findings;
    f.erase(std::remove(f.begin(), f.end(), before), f.end());
    f.push_back(v.finding());
    it->second.status = std::move(s);
  }
  return v.count;
}

std::vector<WorkerStatus> Registry::list() const {
  MutexLock lock(mu_);
  std::vector<WorkerStatus> out;
  out.reserve(workers_.size());
  for (const auto& [name, e] : workers_) out.push_back(*e.status);
  return out;
}

std::shared_ptr<const WorkerStatus> Registry::get(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = workers_.find(name);
  return it == workers_.end() ? nullptr : it->second.status;
}

std::shared_ptr<WorkerChannel> Registry::channel(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = workers_.find(name);
  return it == workers_.end() ? nullptr : it->second.channel;
}

}  // namespace gdrmesh
