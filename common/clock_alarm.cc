#include "common/clock_alarm.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace gdrmesh {

ClockAlarm::ClockAlarm(Clock& clock)
    : clock_(clock),
      fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      mark_(std::make_shared<Mark>()) {
  MutexLock lock(mark_->mu);
  mark_->fd = fd_;
}

ClockAlarm::~ClockAlarm() {
  clear();
  {
    MutexLock lock(mark_->mu);  // a timer marking the descriptor now finishes first
    mark_->fd = -1;
  }
  if (fd_ >= 0) ::close(fd_);
}

void ClockAlarm::set(Clock::TimePoint when) {
  if (armed_ && when == when_) return;
  clear();
  id_ = clock_.schedule(when, [mark = mark_] {
    MutexLock lock(mark->mu);
    if (mark->fd < 0) return;
    const uint64_t one = 1;
    (void)::write(mark->fd, &one, sizeof(one));
  });
  when_ = when;
  armed_ = true;
}

void ClockAlarm::clear() {
  if (armed_) (void)clock_.cancel(id_);
  armed_ = false;
}

void ClockAlarm::drain() {
  if (fd_ < 0) return;
  uint64_t count = 0;
  (void)::read(fd_, &count, sizeof(count));
}

}  // namespace gdrmesh
