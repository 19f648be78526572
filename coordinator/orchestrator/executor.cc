#include "coordinator/orchestrator/executor.h"

#include <algorithm>

namespace gdrmesh {

std::vector<std::string> resourceKeys(const EndpointSelector& s) {
  std::vector<std::string> out;
  out.push_back(s.worker + "/" + (s.device.empty() ? "*" : s.device));
  if (s.memory == MemoryKind::kCuda)
    out.push_back(s.worker + "/gpu:" + std::to_string(std::max(0, s.gpu)));
  return out;
}

std::vector<std::string> resourceKeys(const PairTestSpec& spec) {
  auto out = resourceKeys(spec.initiator);
  for (auto& k : resourceKeys(spec.target)) {
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(std::move(k));
  }
  return out;
}

Executor::Executor(WorkerDirectory& workers, Clock& clock, ExecutorOptions options)
    : workers_(workers), clock_(clock), options_(options) {}

size_t Executor::run(std::vector<ExecutorTask> tasks, ExecutorCallbacks callbacks) {
  std::vector<size_t> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    callbacks_ = std::move(callbacks);
    slots_.clear();
    queues_.clear();
    to_start_.clear();
    blocked_by_cap_.clear();
    running_ = 0;
    cancelled_ = false;
    progress_ = ExecutorProgress{};
    slots_.reserve(tasks.size());
    // A host named whole ("h1/*") in any task conflicts with every NIC of that host: such
    // hosts are queued as one resource throughout.
    std::map<std::string, bool> whole;
    for (const auto& t : tasks) {
      for (const auto& r : t.resources) {
        if (r.size() > 2 && r.compare(r.size() - 2, 2, "/*") == 0)
          whole[r.substr(0, r.size() - 2)] = true;
      }
    }
    for (auto& t : tasks) {
      Slot s;
      s.task = std::move(t);
      std::vector<std::string> keys;
      for (const auto& r : s.task.resources) {
        const std::string host = r.substr(0, r.find('/'));
        std::string key = whole.count(host) ? host + "/*" : r;
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
      }
      s.task.resources = std::move(keys);
      slots_.push_back(std::move(s));
    }
    for (size_t i = 0; i < slots_.size(); ++i) {
      for (const auto& r : slots_[i].task.resources) queues_[r].push_back(i);
      all.push_back(i);
    }
    remaining_ = slots_.size();
    progress_.total = slots_.size();
    dispatch(all);
  }
  kick();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] {
    return in_callback_ == 0 && (remaining_ == 0 || (cancelled_ && running_ == 0));
  });
  return static_cast<size_t>(remaining_ - running_);
}

void Executor::cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  blocked_by_cap_.clear();
  cv_.notify_all();
}

ExecutorProgress Executor::progress() const {
  std::lock_guard<std::mutex> lock(mu_);
  ExecutorProgress p = progress_;
  p.running = running_;
  return p;
}

bool Executor::atHeads(size_t slot) const {
  for (const auto& r : slots_[slot].task.resources) {
    auto it = queues_.find(r);
    if (it == queues_.end() || it->second.empty() || it->second.front() != slot) return false;
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
  std::unique_lock<std::mutex> lock(mu_);
  if (draining_) return;
  draining_ = true;
  while (!to_start_.empty()) {
    size_t i = to_start_.front();
    to_start_.pop_front();
    lock.unlock();
    start(i);
    lock.lock();
  }
  draining_ = false;
}

void Executor::start(size_t i) {
  PairTestSpec spec;
  {
    std::lock_guard<std::mutex> lock(mu_);
    spec = slots_[i].task.spec;
    ++slots_[i].attempts;
  }
  PairEndpoints ep;
  ep.initiator = workers_.get(spec.initiator.worker);
  ep.target = workers_.get(spec.target.worker);
  ep.initiator_channel = workers_.channel(spec.initiator.worker);
  ep.target_channel = workers_.channel(spec.target.worker);
  const std::string test_id = newTestId(clock_.unixMs());
  if (callbacks_.on_start) callbacks_.on_start(slots_[i].task.index, test_id);
  runPairTest(spec, ep, clock_, options_.pair, test_id, newSeed(),
              [this, i](PairTestOutcome o) { finished(i, std::move(o)); });
}

void Executor::finished(size_t i, PairTestOutcome outcome) {
  std::vector<size_t> candidates;
  bool report = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = slots_[i];
    s.running = false;
    --running_;
    const bool failed =
        outcome.result.status == TestStatus::kFailed || outcome.result.status == TestStatus::kError;
    if (failed && outcome.transient && s.attempts <= options_.retries && !cancelled_) {
      // Retry: the slot keeps its place at the head of its queues.
      ++progress_.retried;
      candidates.push_back(i);
    } else {
      s.finished = true;
      report = true;
      ++progress_.done;
      if (failed) ++progress_.failed;
      if (outcome.result.status == TestStatus::kSkipped) ++progress_.skipped;
      for (const auto& r : s.task.resources) {
        auto& q = queues_[r];
        if (!q.empty() && q.front() == i) q.pop_front();
        if (!q.empty()) candidates.push_back(q.front());
      }
    }
    while (!blocked_by_cap_.empty()) {
      candidates.push_back(blocked_by_cap_.front());
      blocked_by_cap_.pop_front();
    }
    dispatch(candidates);
    ++in_callback_;
  }
  if (report && callbacks_.on_result) {
    outcome.result.plan_index = slots_[i].task.index;
    callbacks_.on_result(slots_[i].task.index, outcome.result);
  }
  kick();
  // Last touch of *this: run() may return as soon as the lock is released.
  std::lock_guard<std::mutex> lock(mu_);
  if (report) --remaining_;
  --in_callback_;
  cv_.notify_all();
}

}  // namespace gdrmesh
