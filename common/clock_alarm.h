// A file descriptor that becomes readable when an injected gdrmesh::Clock reaches a time: what
// lets a poll(2) on sockets and pipes end at a deadline of the coordinator's clock (issue #19).
// With the SystemClock it is readable at that moment of real time; with a ManualClock when a
// test's advance() passes it, without a real second going by.
//
// Use: alarm.set(deadline), poll alarm.fd() (POLLIN) beside the descriptors waited on, and look
// at clock.now() against the deadline once the poll returns. A caller that also gives poll(2) a
// timeout computes it from the same deadline on the same clock.
//
// Thread contract: set(), clear() and drain() from the owner's thread; the clock's timer thread
// (or a ManualClock's advance()) marks the descriptor. The destructor cancels the timer; a timer
// running at that moment finishes before the descriptor is closed.
#pragma once

#include <memory>

#include "common/clock.h"
#include "common/sync/mutex.h"

namespace gdrmesh {

class ClockAlarm {
 public:
  explicit ClockAlarm(Clock& clock);
  ~ClockAlarm();
  ClockAlarm(const ClockAlarm&) = delete;
  ClockAlarm& operator=(const ClockAlarm&) = delete;

  // False when the descriptor could not be made (out of descriptors): fd() is then -1, which
  // poll(2) ignores, and only a caller's own poll timeout ends its wait.
  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Marks fd() readable at `when` on the clock (replacing an earlier set()). Does not clear a
  // mark already made: drain() does.
  void set(Clock::TimePoint when);
  // Cancels the pending time, if any.
  void clear();
  // Makes fd() unreadable again (after a poll saw it readable).
  void drain();

 private:
  // What the timer's callback touches: the descriptor, -1 once the alarm is gone.
  struct Mark {
    Mutex mu;
    int fd ABSL_GUARDED_BY(mu) = -1;
  };
  Clock& clock_;
  const int fd_;
  std::shared_ptr<Mark> mark_;
  bool armed_ = false;
  Clock::TimePoint when_{};
  Clock::TimerId id_ = 0;
};

}  // namespace gdrmesh
