#include "tests/integration/worker_soak/soak_coordinator.h"

#include <utility>

namespace gdrmesh::testing {

std::optional<pb::CommandReply> SoakLink::call(pb::CoordinatorCommand cmd,
                                               std::chrono::milliseconds limit) {
  auto p = std::make_shared<Pending>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lost_) return std::nullopt;
    cmd.set_request_id(next_id_++);
    pending_[cmd.request_id()] = p;
  }
  pb::CoordinatorMessage m;
  *m.mutable_command() = std::move(cmd);
  const uint64_t id = m.command().request_id();
  bool written = false;
  {
    // lost() takes write_mu_ too: once it has run, stream_ is never touched again.
    std::lock_guard<std::mutex> lock(write_mu_);
    if (!lost_) written = stream_->Write(m);
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (written) cv_.wait_for(lock, limit, [&] { return p->done || lost_; });
  pending_.erase(id);
  if (!p->done) return std::nullopt;
  return std::move(p->reply);
}

void SoakLink::deliver(const pb::CommandReply& reply) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(reply.request_id());
  if (it == pending_.end()) return;  // the caller gave up
  it->second->reply = reply;
  it->second->done = true;
  cv_.notify_all();
}

void SoakLink::lost() {
  std::lock_guard<std::mutex> write_lock(write_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  lost_ = true;
  cv_.notify_all();
}

SoakCoordinator::SoakCoordinator() {
  grpc::ServerBuilder b;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
  b.RegisterService(this);
  server_ = b.BuildAndStart();
}

SoakCoordinator::~SoakCoordinator() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

std::shared_ptr<SoakLink> SoakCoordinator::waitFor(const std::string& name,
                                                   std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, limit, [&] { return links_.count(name) != 0; });
  auto it = links_.find(name);
  return it == links_.end() ? nullptr : it->second;
}

bool SoakCoordinator::waitGone(const std::string& name, std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, limit, [&] { return links_.count(name) == 0; });
}

grpc::Status SoakCoordinator::Connect(grpc::ServerContext* /*ctx*/, SoakLink::Stream* stream) {
  pb::WorkerMessage first;
  if (!stream->Read(&first) || !first.has_register_()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "expected Register first");
  }
  const std::string name = first.register_().name();
  auto link = std::make_shared<SoakLink>(first.register_(), stream);
  pb::CoordinatorMessage reg;
  reg.mutable_registered()->set_worker_id(name);
  reg.mutable_registered()->set_heartbeat_interval_ms(1000);
  if (!stream->Write(reg)) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed");
  {
    std::lock_guard<std::mutex> lock(mu_);
    links_[name] = link;
  }
  cv_.notify_all();
  pb::WorkerMessage m;
  while (stream->Read(&m)) {
    if (m.has_reply()) link->deliver(m.reply());
  }
  link->lost();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(name);
    if (it != links_.end() && it->second == link) links_.erase(it);
  }
  cv_.notify_all();
  return grpc::Status::OK;
}

}  // namespace gdrmesh::testing
