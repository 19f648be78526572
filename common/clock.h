// Time, injected. Every timeout, schedule and ETA in the coordinator reads this interface, so
// tests move time by hand (ManualClock) instead of sleeping.
//
// Thread contract: all methods are thread-safe. Timer callbacks run on the clock's timer thread
// (SystemClock) or inside advance() (ManualClock); they must not block.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "common/sync/mutex.h"

namespace gdrmesh {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;
  using TimerId = uint64_t;

  virtual ~Clock() = default;
  // Monotonic time, for deadlines and durations.
  virtual TimePoint now() const = 0;
  // Wall time in unix milliseconds, for records and schedules.
  virtual int64_t unixMs() const = 0;
  // Runs `fn` once, at or after `when`. Returns an id for cancel().
  virtual TimerId schedule(TimePoint when, std::function<void()> fn) = 0;
  // True when the timer was still pending and will not run.
  virtual bool cancel(TimerId id) = 0;

  TimePoint after(double seconds) const {
    return now() + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
  }
};

// The real clock, with one timer thread.
class SystemClock final : public Clock {
 public:
  SystemClock();
  ~SystemClock() override;
  SystemClock(const SystemClock&) = delete;
  SystemClock& operator=(const SystemClock&) = delete;

  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  int64_t unixMs() const override;
  TimerId schedule(TimePoint when, std::function<void()> fn) override;
  bool cancel(TimerId id) override;

 private:
  void loop();
  Mutex mu_;
  std::condition_variable cv_;
  std::multimap<TimePoint, std::pair<TimerId, std::function<void()>>> timers_ ABSL_GUARDED_BY(mu_);
  std::map<TimerId, TimePoint> by_id_ ABSL_GUARDED_BY(mu_);
  TimerId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// A clock that moves only when told: advance() runs every timer that falls due, in order,
// on the calling thread.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_unix_ms = 1'790'000'000'000) : unix_start_ms_(start_unix_ms) {}

  TimePoint now() const override;
  int64_t unixMs() const override;
  TimerId schedule(TimePoint when, std::function<void()> fn) override;
  bool cancel(TimerId id) override;

  void advance(Duration d);
  void advanceSeconds(double s) {
    advance(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)));
  }
  void setUnixMs(int64_t ms);  // jumps wall time (and monotonic time by the same amount)
  size_t pendingTimers() const;

 private:
  mutable Mutex mu_;
  Duration elapsed_ ABSL_GUARDED_BY(mu_){0};
  int64_t unix_start_ms_ ABSL_GUARDED_BY(mu_);
  std::multimap<TimePoint, std::pair<TimerId, std::function<void()>>> timers_ ABSL_GUARDED_BY(mu_);
  std::map<TimerId, TimePoint> by_id_ ABSL_GUARDED_BY(mu_);
  TimerId next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

// Waits on `cv` (with `lock` held on the mutex that guards what `pred` reads) until `pred()` is
// true or `clock` reaches `deadline`; returns pred(). The deadline is a timer on `clock`, so a
// ManualClock's advance() ends the wait: code that waits this way needs no real time in tests.
// The timer's callback takes `lock`'s mutex, so whoever moves a ManualClock must not hold it.
// Safe however the timer and the wait race: once this returns the callback touches neither the
// mutex nor `cv`.
// With a gdrmesh::UniqueLock (common/sync/mutex.h), pass lock.native() and declare `pred` with
// ABSL_EXCLUSIVE_LOCKS_REQUIRED(<its mutex>); this function calls it only with the lock held,
// which the analysis cannot follow through a std::unique_lock, hence no analysis here.
template <class Pred>
bool waitUntil(Clock& clock, std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
               Clock::TimePoint deadline, Pred pred) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (pred()) return true;
  if (clock.now() >= deadline) return pred();
  struct Alarm {
    Mutex gate;                               // held by the callback while it touches mu/cv
    bool gone ABSL_GUARDED_BY(gate) = false;  // the waiter returned
    bool fired = false;                       // guarded by the waiter's mutex
    std::mutex* mu;
    std::condition_variable* cv;
  };
  auto alarm = std::make_shared<Alarm>();
  alarm->mu = lock.mutex();
  alarm->cv = &cv;
  const Clock::TimerId id = clock.schedule(deadline, [alarm] {
    MutexLock g(alarm->gate);
    if (alarm->gone) return;
    {
      std::lock_guard<std::mutex> l(*alarm->mu);
      alarm->fired = true;
    }
    alarm->cv->notify_all();
  });
  // A clock moved past the deadline between the check above and the timer's scheduling (a
  // ManualClock runs a past-due timer only at its next advance): the wait is over.
  if (clock.now() >= deadline) alarm->fired = true;
  cv.wait(lock, [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return alarm->fired || pred(); });
  const bool result = pred();
  lock.unlock();
  if (!clock.cancel(id)) {
    MutexLock g(alarm->gate);  // a callback running now finishes first
    alarm->gone = true;
  }
  lock.lock();
  return result;
}

}  // namespace gdrmesh
