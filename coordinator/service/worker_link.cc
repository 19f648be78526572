#include "coordinator/service/worker_link.h"

#include <vector>

#include "common/sync/mutex.h"
#include "convert.h"

namespace gdrmesh {

WorkerLink::WorkerLink(std::string worker, Clock& clock, Writer writer,
                       std::function<void()> cancel_stream)
    : worker_(std::move(worker)),
      clock_(clock),
      writer_(std::move(writer)),
      cancel_stream_(std::move(cancel_stream)) {}

void WorkerLink::call(v1::CoordinatorCommand command, Clock::TimePoint deadline, Callback done) {
  const uint64_t id = expect(deadline, std::move(done));
  if (id == 0) return;  // lost already: `done` has heard it
  command.set_request_id(id);
  v1::CoordinatorMessage msg;
  *msg.mutable_command() = std::move(command);
  bool written;
  {
    MutexLock lock(write_mu_);
    written = writer_(std::move(msg));
  }
  if (!written) settle(id, unavailable("worker lost: " + worker_ + " (stream write failed)"));
}

uint64_t WorkerLink::expect(Clock::TimePoint deadline, Callback done) {
  uint64_t id = 0;
  Status lost;
  Callback fail_now;  // the callback, when the worker is already lost
  {
    MutexLock lock(mu_);
    if (lost_reason_) {
      lost = unavailable("worker lost: " + worker_ + " " + *lost_reason_);
      fail_now = std::move(done);
    } else {
      id = next_id_++;
      Pending p;
      p.done = std::move(done);
      pending_.emplace(id, std::move(p));
    }
  }
  if (fail_now) {
    fail_now(lost);  // outside the lock: the callback may call again
    return 0;
  }
  // The timer holds a weak reference: a link that is gone has nothing left to expire.
  std::weak_ptr<WorkerLink> weak = weak_from_this();
  Clock::TimerId timer = clock_.schedule(deadline, [weak, id] {
    if (auto self = weak.lock()) self->expire(id);
  });
  MutexLock lock(mu_);
  auto it = pending_.find(id);
  if (it != pending_.end()) {
    it->second.timer = timer;
  } else {
    clock_.cancel(timer);  // already answered
  }
  return id;
}

void WorkerLink::settle(uint64_t request_id, const Status& st) {
  Callback cb;
  {
    MutexLock lock(mu_);
    auto it = pending_.find(request_id);
    if (it == pending_.end()) return;
    cb = std::move(it->second.done);
    clock_.cancel(it->second.timer);
    pending_.erase(it);
  }
  cb(st);
}

void WorkerLink::expire(uint64_t request_id) {
  Callback cb;
  {
    MutexLock lock(mu_);
    auto it = pending_.find(request_id);
    if (it == pending_.end()) return;
    cb = std::move(it->second.done);
    pending_.erase(it);
  }
  cb(Status(Code::kDeadlineExceeded, "worker " + worker_ + " did not answer before the deadline",
            "check the worker's log; a worker that stops answering is declared lost after "
            "its heartbeats stop"));
}

void WorkerLink::onReply(v1::CommandReply&& reply) {
  Callback cb;
  {
    MutexLock lock(mu_);
    auto it = pending_.find(reply.request_id());
    if (it == pending_.end()) return;  // late reply to a call that timed out
    cb = std::move(it->second.done);
    clock_.cancel(it->second.timer);
    pending_.erase(it);
  }
  if (!reply.status().ok()) {
    cb(convert::fromProto(reply.status()));
  } else {
    cb(std::move(reply));
  }
}

void WorkerLink::fail(const std::string& reason) {
  std::vector<Callback> failed;
  {
    MutexLock lock(mu_);
    if (lost_reason_) return;
    lost_reason_ = reason;
    for (auto& [id, p] : pending_) {
      clock_.cancel(p.timer);
      failed.push_back(std::move(p.done));
    }
    pending_.clear();
  }
  {
    MutexLock lock(cancel_mu_);
    if (cancel_stream_) cancel_stream_();
  }
  const Status st = unavailable("worker lost: " + worker_ + " " + reason);
  for (auto& cb : failed) cb(st);
  // After the pending calls: a test waiting on this worker ends with that call's error, as
  // before; one waiting on the other side hears of the loss here.
  lost_signal_.fire(reason);
}

void WorkerLink::detachStream() {
  MutexLock lock(cancel_mu_);
  cancel_stream_ = nullptr;
}

bool WorkerLink::lost() const {
  MutexLock lock(mu_);
  return lost_reason_.has_value();
}

size_t WorkerLink::pending() const {
  MutexLock lock(mu_);
  return pending_.size();
}

}  // namespace gdrmesh
