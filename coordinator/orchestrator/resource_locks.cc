#include "coordinator/orchestrator/resource_locks.h"

#include <utility>

namespace gdrmesh {
namespace {

// "h1/mlx5_0" -> ("h1", "mlx5_0"); a key without '/' is a whole host.
std::pair<std::string, std::string> splitResourceKey(const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return {key, "*"};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

bool resourceKeysConflict(const std::string& a, const std::string& b) {
  if (a == b) return true;
  auto [ha, pa] = splitResourceKey(a);
  auto [hb, pb] = splitResourceKey(b);
  return ha == hb && (pa == "*" || pb == "*");
}

}  // namespace

bool resourcesConflict(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const auto& x : a) {
    for (const auto& y : b) {
      if (resourceKeysConflict(x, y)) return true;
    }
  }
  return false;
}

ResourceLocks::Ticket ResourceLocks::newTicket() {
  MutexLock lock(mu_);
  return next_++;
}

bool ResourceLocks::heldConflicts(const std::vector<std::string>& keys) const {
  for (const auto& k : keys) {
    auto [host, part] = splitResourceKey(k);
    auto it = hosts_.find(host);
    if (it == hosts_.end()) continue;
    if (it->second.whole > 0) return true;
    if (part == "*" ? !it->second.parts.empty() : it->second.parts.count(part) != 0) return true;
  }
  return false;
}

void ResourceLocks::hold(Ticket ticket, std::vector<std::string> keys) {
  for (const auto& k : keys) {
    auto [host, part] = splitResourceKey(k);
    HostHolds& h = hosts_[host];
    if (part == "*") {
      ++h.whole;
    } else {
      ++h.parts[part];
    }
  }
  holders_[ticket] = std::move(keys);
}

bool ResourceLocks::acquire(Ticket ticket, std::vector<std::string> keys,
                            std::function<void()> granted) {
  MutexLock lock(mu_);
  bool behind = heldConflicts(keys);
  for (size_t i = 0; !behind && i < waiters_.size(); ++i) {
    behind = resourcesConflict(waiters_[i].keys, keys);
  }
  if (!behind) {
    hold(ticket, std::move(keys));
    return true;
  }
  waiters_.push_back(Waiter{ticket, std::move(keys), std::move(granted)});
  return false;
}

std::vector<std::function<void()>> ResourceLocks::grantWaiters() {
  std::vector<std::function<void()>> out;
  std::vector<std::string> blocked;  // keys of earlier waiters still waiting
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (heldConflicts(it->keys) || resourcesConflict(blocked, it->keys)) {
      blocked.insert(blocked.end(), it->keys.begin(), it->keys.end());
      ++it;
      continue;
    }
    out.push_back(std::move(it->granted));
    hold(it->ticket, std::move(it->keys));
    it = waiters_.erase(it);
  }
  return out;
}

void ResourceLocks::release(Ticket ticket) {
  std::vector<std::function<void()>> granted;
  {
    MutexLock lock(mu_);
    auto it = holders_.find(ticket);
    if (it == holders_.end()) return;
    for (const auto& k : it->second) {
      auto [host, part] = splitResourceKey(k);
      auto h = hosts_.find(host);
      if (h == hosts_.end()) continue;
      if (part == "*") {
        --h->second.whole;
      } else if (--h->second.parts[part] <= 0) {
        h->second.parts.erase(part);
      }
      if (h->second.whole <= 0 && h->second.parts.empty()) hosts_.erase(h);
    }
    holders_.erase(it);
    if (!waiters_.empty()) granted = grantWaiters();
  }
  for (auto& g : granted) g();
}

bool ResourceLocks::withdraw(Ticket ticket) {
  std::vector<std::function<void()>> granted;
  bool was_waiting = false;
  {
    MutexLock lock(mu_);
    for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
      if (it->ticket != ticket) continue;
      waiters_.erase(it);
      was_waiting = true;
      // A later request it kept waiting may go now.
      granted = grantWaiters();
      break;
    }
  }
  for (auto& g : granted) g();
  return was_waiting;
}

size_t ResourceLocks::held() const {
  MutexLock lock(mu_);
  return holders_.size();
}

size_t ResourceLocks::waiting() const {
  MutexLock lock(mu_);
  return waiters_.size();
}

}  // namespace gdrmesh
