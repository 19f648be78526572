#include "common/clock.h"

#include <vector>

#include "common/sync/mutex.h"

namespace gdrmesh {
namespace {

// Removes timer `id` from both indexes; false when it already ran or was cancelled.
template <typename Timers, typename ById>
bool eraseTimer(Timers& timers, ById& by_id, Clock::TimerId id) {
  auto it = by_id.find(id);
  if (it == by_id.end()) return false;
  auto range = timers.equal_range(it->second);
  for (auto t = range.first; t != range.second; ++t) {
    if (t->second.first == id) {
      timers.erase(t);
      break;
    }
  }
  by_id.erase(it);
  return true;
}

}  // namespace

SystemClock::SystemClock() : thread_([this] { loop(); }) {}

SystemClock::~SystemClock() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

int64_t SystemClock::unixMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Clock::TimerId SystemClock::schedule(TimePoint when, std::function<void()> fn) {
  MutexLock lock(mu_);
  TimerId id = next_id_++;
  const bool earliest = timers_.empty() || when < timers_.begin()->first;
  timers_.emplace(when, std::make_pair(id, std::move(fn)));
  by_id_[id] = when;
  if (earliest) cv_.notify_all();
  return id;
}

bool SystemClock::cancel(TimerId id) {
  MutexLock lock(mu_);
  return eraseTimer(timers_, by_id_, id);
}

void SystemClock::loop() {
  UniqueLock lock(mu_);
  while (!stop_) {
    if (timers_.empty()) {
      cv_.wait(lock.native());
      continue;
    }
    auto first = timers_.begin();
    if (first->first > now()) {
      // A copy: wait_until reads the deadline again after it wakes, by which time a cancel()
      // on another thread may have erased the timer that held it (found by AddressSanitizer).
      const TimePoint due = first->first;
      cv_.wait_until(lock.native(), due);
      continue;
    }
    auto fn = std::move(first->second.second);
    by_id_.erase(first->second.first);
    timers_.erase(first);
    lock.unlock();
    fn();
    lock.lock();
  }
}

Clock::TimePoint ManualClock::now() const {
  MutexLock lock(mu_);
  return TimePoint{} + elapsed_;
}

int64_t ManualClock::unixMs() const {
  MutexLock lock(mu_);
  return unix_start_ms_ + std::chrono::duration_cast<std::chrono::milliseconds>(elapsed_).count();
}

Clock::TimerId ManualClock::schedule(TimePoint when, std::function<void()> fn) {
  MutexLock lock(mu_);
  TimerId id = next_id_++;
  timers_.emplace(when, std::make_pair(id, std::move(fn)));
  by_id_[id] = when;
  return id;
}

bool ManualClock::cancel(TimerId id) {
  MutexLock lock(mu_);
  return eraseTimer(timers_, by_id_, id);
}

void ManualClock::advance(Duration d) {
  TimePoint target;
  {
    MutexLock lock(mu_);
    target = TimePoint{} + elapsed_ + d;
  }
  for (;;) {
    std::function<void()> fn;
    {
      MutexLock lock(mu_);
      auto first = timers_.begin();
      if (first == timers_.end() || first->first > target) {
        elapsed_ = target - TimePoint{};
        return;
      }
      // Time moves to the timer's due point before it runs.
      if (first->first - TimePoint{} > elapsed_) elapsed_ = first->first - TimePoint{};
      fn = std::move(first->second.second);
      by_id_.erase(first->second.first);
      timers_.erase(first);
    }
    fn();
  }
}

void ManualClock::setUnixMs(int64_t ms) {
  int64_t now_ms = unixMs();
  if (ms > now_ms) {
    advance(std::chrono::milliseconds(ms - now_ms));
  } else {
    MutexLock lock(mu_);
    unix_start_ms_ -= now_ms - ms;
  }
}

size_t ManualClock::pendingTimers() const {
  MutexLock lock(mu_);
  return timers_.size();
}

}  // namespace gdrmesh
