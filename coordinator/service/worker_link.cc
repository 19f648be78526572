#include "coordinator/service/worker_link.h"

#include "convert.h"

namespace gdrmesh {

WorkerLink::WorkerLink(std::string worker, Writer writer, std::function<void()> cancel_stream)
    : worker_(std::move(worker)),
      writer_(std::move(writer)),
      cancel_stream_(std::move(cancel_stream)) {}

std::shared_ptr<WorkerLink::Pending> WorkerLink::call(v1::CoordinatorCommand command) {
  auto p = std::make_shared<Pending>();
  std::lock_guard<std::mutex> lock(mu_);
  p->request_id = next_id_++;
  if (lost_reason_) {
    p->done = true;
    p->failure = unavailable("worker lost: " + worker_ + " " + *lost_reason_);
    return p;
  }
  command.set_request_id(p->request_id);
  pending_[p->request_id] = p;
  v1::CoordinatorMessage msg;
  *msg.mutable_command() = std::move(command);
  // Writes are serialised by mu_: the stream allows one writer at a time.
  if (!writer_(msg)) {
    pending_.erase(p->request_id);
    p->done = true;
    p->failure = unavailable("worker lost: " + worker_ + " (stream write failed)");
  }
  return p;
}

Result<v1::CommandReply> WorkerLink::wait(const std::shared_ptr<Pending>& p,
                                          Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, deadline, [&] { return p->done; })) {
    pending_.erase(p->request_id);
    return Status(Code::kDeadlineExceeded,
                  "worker " + worker_ + " did not answer before the deadline");
  }
  if (!p->reply) return p->failure;
  // The worker's own failure, with its code, message and fix.
  if (!p->reply->status().ok()) return convert::fromProto(p->reply->status());
  return *p->reply;
}

bool WorkerLink::ready(const std::shared_ptr<Pending>& p) {
  std::lock_guard<std::mutex> lock(mu_);
  return p->done;
}

void WorkerLink::onReply(const v1::CommandReply& reply) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(reply.request_id());
  if (it == pending_.end()) return;  // late reply to a call that timed out
  it->second->reply = reply;
  it->second->done = true;
  pending_.erase(it);
  cv_.notify_all();
}

void WorkerLink::fail(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lost_reason_) return;
    lost_reason_ = reason;
    for (auto& [id, p] : pending_) {
      p->done = true;
      p->failure = unavailable("worker lost: " + worker_ + " " + reason);
    }
    pending_.clear();
    cv_.notify_all();
  }
  std::lock_guard<std::mutex> lock(cancel_mu_);
  if (cancel_stream_) cancel_stream_();
}

void WorkerLink::detachStream() {
  std::lock_guard<std::mutex> lock(cancel_mu_);
  cancel_stream_ = nullptr;
}

bool WorkerLink::lost() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_reason_.has_value();
}

}  // namespace gdrmesh
