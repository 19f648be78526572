#include "coordinator/orchestrator/executor.h"

#include <algorithm>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>

#include "common/sync/mutex.h"

namespace gdrmesh {

std::vector<std::string> resourceKeys(const EndpointSelector& s) {
  std::vector<std::string> out;
  out.push_back(s.worker + "/" + (s.device.empty() ? "*" : s.device));
  if (s.memory == MemoryKind::kCuda)
    out.push_back(s.worker + "/gpu:" + std::to_string(std::max(0, s.gpu)));
  return out;
}

std::vector<std::string> resourceKeys(const PairTestSpec& spec) {
  return resourceKeys(spec.initiator, spec.target);
}

std::vector<std::string> resourceKeys(const EndpointSelector& initiator,
                                      const EndpointSelector& target) {
  auto out = resourceKeys(initiator);
  for (auto& k : resourceKeys(target)) {
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(std::move(k));
  }
  return out;
}

Executor::Executor(WorkerDirectory& workers, Clock& clock, ExecutorOptions options)
    : workers_(workers), clock_(clock), options_(std::move(options)) {}

void Executor::start(std::vector<ExecutorTask> tasks, ExecutorCallbacks callbacks) {
  auto owned = std::make_shared<std::vector<ExecutorTask>>(std::move(tasks));
  ExecutorTasks t;
  t.count = owned->size();
  t.index = [owned](size_t i) { return (*owned)[i].index; };
  t.spec = [owned](size_t i) { return (*owned)[i].spec; };
  t.resources = [owned](size_t i) { return (*owned)[i].resources; };
  start(std::move(t), std::move(callbacks));
}

void Executor::start(ExecutorTasks tasks, ExecutorCallbacks callbacks) {
  std::vector<size_t> all;
  {
    MutexLock lock(mu_);
    started_ = true;
    ++in_callback_;  // start() uses *this until it leaves
    callbacks_ = std::move(callbacks);
    tasks_ = std::move(tasks);
    // A host named whole ("h1/*") in any task conflicts with every NIC of that host: such
    // hosts are queued as one resource throughout.
    std::set<std::string> whole;
    for (size_t i = 0; i < tasks_.count; ++i) {
      for (const auto& r : tasks_.resources(i)) {
        if (r.size() > 2 && r.compare(r.size() - 2, 2, "/*") == 0)
          whole.insert(r.substr(0, r.size() - 2));
      }
    }
    std::unordered_map<std::string, uint32_t> ids;
    slots_.resize(tasks_.count);
    all.reserve(tasks_.count);
    for (size_t i = 0; i < tasks_.count; ++i) {
      Slot& s = slots_[i];
      s.index = tasks_.index(i);
      for (const auto& r : tasks_.resources(i)) {
        const std::string host = r.substr(0, r.find('/'));
        const std::string key = whole.count(host) ? host + "/*" : r;
        auto [it, added] = ids.emplace(key, static_cast<uint32_t>(queues_.size()));
        if (added) queues_.emplace_back();
        if (std::find(s.resources.begin(), s.resources.end(), it->second) != s.resources.end())
          continue;
        s.resources.push_back(it->second);
        queues_[it->second].push_back(i);
      }
      all.push_back(i);
    }
    remaining_ = slots_.size();
    progress_.total = slots_.size();
    dispatch(all);
  }
  kick();
  leave();
}

void Executor::cancel() {
  std::vector<std::pair<ResourceLocks::Ticket, size_t>> waiting;  // ticket, slot
  {
    MutexLock lock(mu_);
    cancelled_ = true;
    blocked_by_cap_.clear();
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].awaiting) waiting.emplace_back(slots_[i].ticket, i);
    }
    // Entered like a callback: the end may come from here (nothing was running).
    ++in_callback_;
  }
  // Tests waiting for another run's resources are taken back; one granted meanwhile is given
  // back by granted().
  for (const auto& w : waiting) {
    if (!options_.locks->withdraw(w.first)) continue;
    MutexLock lock(mu_);
    Slot& s = slots_[w.second];
    s.awaiting = false;
    s.running = false;
    --running_;
  }
  leave();
}

ExecutorProgress Executor::progress() const {
  MutexLock lock(mu_);
  ExecutorProgress p = progress_;
  p.running = running_;
  return p;
}

bool Executor::atHeads(size_t slot) const {
  for (uint32_t r : slots_[slot].resources) {
    if (queues_[r].empty() || queues_[r].front() != slot) return false;
  }
  return true;
}

void Executor::dispatch(const std::vector<size_t>& candidates) {
  if (cancelled_) return;
  for (size_t i : candidates) {
    Slot& s = slots_[i];
    if (s.running || s.finished || !atHeads(i)) continue;
    if (options_.max_concurrency > 0 && running_ >= options_.max_concurrency) {
      blocked_by_cap_.push_back(i);
      continue;
    }
    s.running = true;
    ++running_;
    to_start_.push_back(i);
  }
}

void Executor::kick() {
  UniqueLock lock(mu_);
  if (draining_) return;
  draining_ = true;
  while (!to_start_.empty()) {
    size_t i = to_start_.front();
    to_start_.pop_front();
    const bool ready = options_.locks == nullptr || slots_[i].locked;
    lock.unlock();
    if (ready || this->lock(i)) startTest(i);
    lock.lock();
  }
  draining_ = false;
}

bool Executor::lock(size_t slot) {
  ResourceLocks::Ticket ticket = options_.locks->newTicket();
  {
    MutexLock l(mu_);
    slots_[slot].ticket = ticket;
    slots_[slot].awaiting = true;
  }
  // The keys as the tasks name them: the shared locks know "h1/*" covers h1's NICs.
  const bool now =
      options_.locks->acquire(ticket, tasks_.resources(slot), [this, slot] { granted(slot); });
  if (!now) return false;
  MutexLock l(mu_);
  slots_[slot].awaiting = false;
  slots_[slot].locked = true;
  return true;
}

void Executor::granted(size_t slot) {
  ResourceLocks::Ticket give_back = 0;
  {
    MutexLock l(mu_);
    ++in_callback_;
    Slot& s = slots_[slot];
    s.awaiting = false;
    if (cancelled_) {
      // Cancelled while it waited and granted before the withdrawal: not run.
      give_back = s.ticket;
      s.running = false;
      --running_;
    } else {
      s.locked = true;
      to_start_.push_back(slot);
    }
  }
  if (give_back != 0) options_.locks->release(give_back);
  kick();
  leave();
}

void Executor::startTest(size_t slot) {
  int index;
  {
    MutexLock lock(mu_);
    ++slots_[slot].attempts;
    index = slots_[slot].index;
  }
  const PairTestSpec spec = tasks_.spec(slot);
  PairEndpoints ep;
  ep.initiator = workers_.get(spec.initiator.worker);
  ep.target = workers_.get(spec.target.worker);
  ep.initiator_channel = workers_.channel(spec.initiator.worker);
  ep.target_channel = workers_.channel(spec.target.worker);
  const std::string test_id = newTestId(clock_.unixMs());
  if (callbacks_.on_start) callbacks_.on_start(index, test_id);
  runPairTest(spec, ep, clock_, options_.pair, test_id, newSeed(),
              [this, slot](PairTestOutcome o) { finished(slot, std::move(o)); });
}

void Executor::finished(size_t slot, PairTestOutcome outcome) {
  std::vector<size_t> candidates;
  bool report = false;
  int index = 0;
  ResourceLocks::Ticket give_back = 0;
  {
    MutexLock lock(mu_);
    Slot& s = slots_[slot];
    s.running = false;
    --running_;
    const bool failed =
        outcome.result.status == TestStatus::kFailed || outcome.result.status == TestStatus::kError;
    if (failed && outcome.transient && s.attempts <= options_.retries && !cancelled_) {
      // Retry: the slot keeps its place at the head of its queues, and its shared locks.
      ++progress_.retried;
      candidates.push_back(slot);
    } else {
      s.finished = true;
      report = true;
      ++progress_.done;
      if (failed) ++progress_.failed;
      if (outcome.result.status == TestStatus::kSkipped) ++progress_.skipped;
      if (s.locked) {
        s.locked = false;
        give_back = s.ticket;
      }
      for (uint32_t r : s.resources) {
        auto& q = queues_[r];
        if (!q.empty() && q.front() == slot) q.pop_front();
        if (!q.empty()) candidates.push_back(q.front());
      }
    }
    while (!blocked_by_cap_.empty()) {
      candidates.push_back(blocked_by_cap_.front());
      blocked_by_cap_.pop_front();
    }
    if (give_back == 0) dispatch(candidates);
    ++in_callback_;
    index = s.index;
    // Counted before the result is reported: the end is seen by the last thread to leave.
    if (report) --remaining_;
  }
  if (report && callbacks_.on_result) {
    outcome.result.plan_index = index;
    callbacks_.on_result(index, outcome.result);
  }
  if (give_back != 0) {
    // Once the result is reported: a request of another run waiting for these resources may
    // start now (on this thread). The next tests of this run on them are dispatched only after
    // the release: dispatched before it, a next test asked the shared locks for a resource
    // they still held and queued there behind it (every round of a sweep, for each test).
    options_.locks->release(give_back);
    MutexLock lock(mu_);
    dispatch(candidates);
  }
  kick();
  leave();
}

void Executor::leave() {
  std::function<void(size_t)> on_done;
  size_t not_run = 0;
  {
    MutexLock lock(mu_);
    --in_callback_;
    if (!started_ || done_reported_ || !endedLocked()) return;
    done_reported_ = true;
    not_run = static_cast<size_t>(remaining_);
    on_done = std::move(callbacks_.on_done);
  }
  // Last touch of *this: the owner may destroy the executor from inside on_done.
  if (on_done) on_done(not_run);
}

bool Executor::endedLocked() const {
  return in_callback_ == 0 && (remaining_ == 0 || (cancelled_ && running_ == 0));
}

}  // namespace gdrmesh
