#include "tests/unit/simulate/fake_coordinator.h"

#include <deque>

namespace gdrmesh::simtest {

struct FakeCoordinator::Pending {
  bool done = false;
  pb::CommandReply reply;
};

// One worker stream. Writes are queued, one outstanding; Finish waits for the write in flight.
class FakeCoordinator::Stream final
    : public grpc::ServerBidiReactor<pb::WorkerMessage, pb::CoordinatorMessage> {
 public:
  explicit Stream(FakeCoordinator& owner) : owner_(owner) { StartRead(&in_); }

  void write(pb::CoordinatorMessage m) {
    const pb::CoordinatorMessage* next = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finishing_) return;
      out_.push_back(std::move(m));
      if (writing_) return;
      writing_ = true;
      next = &out_.front();
    }
    StartWrite(next);
  }

  void OnWriteDone(bool ok) override {
    const pb::CoordinatorMessage* next = nullptr;
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      out_.pop_front();
      if (!ok) out_.clear();
      if (!out_.empty() && !finishing_) {
        next = &out_.front();
      } else {
        writing_ = false;
        finish = finishing_ && !finished_;
        finished_ = finished_ || finish;
      }
    }
    if (next != nullptr) StartWrite(next);
    if (finish) Finish(grpc::Status::OK);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      bool finish = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        finishing_ = true;
        finish = !writing_ && !finished_;
        finished_ = finished_ || finish;
      }
      if (finish) Finish(grpc::Status::OK);
      return;
    }
    if (in_.has_register_()) {
      name_ = in_.register_().name();
      owner_.onRegister(this, in_.register_());
      pb::CoordinatorMessage hello;
      hello.mutable_registered()->set_worker_id(name_);
      hello.mutable_registered()->set_heartbeat_interval_ms(owner_.heartbeat_interval_ms_);
      write(std::move(hello));
    } else if (in_.has_heartbeat()) {
      owner_.onHeartbeat(name_);
    } else if (in_.has_reply()) {
      owner_.onReply(in_.reply());
    }
    StartRead(&in_);
  }

  void OnDone() override { owner_.onEnded(name_); }

 private:
  FakeCoordinator& owner_;
  pb::WorkerMessage in_;
  std::string name_;  // read side only
  std::mutex mu_;     // guards all below
  std::deque<pb::CoordinatorMessage> out_;
  bool writing_ = false;
  bool finishing_ = false;
  bool finished_ = false;
};

class FakeCoordinator::Service final : public pb::WorkerService::CallbackService {
 public:
  explicit Service(FakeCoordinator& owner) : owner_(owner) {}
  using pb::WorkerService::CallbackService::Connect;  // the synchronous overload stays unused
  grpc::ServerBidiReactor<pb::WorkerMessage, pb::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext* /*ctx*/) override {
    auto s = std::make_unique<Stream>(owner_);
    Stream* raw = s.get();
    std::lock_guard<std::mutex> lock(owner_.mu_);
    owner_.all_streams_.push_back(std::move(s));
    return raw;
  }

 private:
  FakeCoordinator& owner_;
};

FakeCoordinator::FakeCoordinator(uint32_t heartbeat_interval_ms)
    : heartbeat_interval_ms_(heartbeat_interval_ms), service_(std::make_unique<Service>(*this)) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  address_ = "127.0.0.1:" + std::to_string(port);
}

FakeCoordinator::~FakeCoordinator() {
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
  server_.reset();
}

void FakeCoordinator::onRegister(Stream* s, const pb::Register& r) {
  std::lock_guard<std::mutex> lock(mu_);
  ++registrations_;
  registered_[r.name()] = r;
  streams_[r.name()] = s;
  ended_[r.name()] = false;
  cv_.notify_all();
}

void FakeCoordinator::onHeartbeat(const std::string& worker) {
  std::lock_guard<std::mutex> lock(mu_);
  ++heartbeats_[worker];
  cv_.notify_all();
}

void FakeCoordinator::onReply(const pb::CommandReply& r) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(r.request_id());
  if (it == pending_.end()) return;
  it->second->done = true;
  it->second->reply = r;
  pending_.erase(it);
  cv_.notify_all();
}

void FakeCoordinator::onEnded(const std::string& worker) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!worker.empty()) {
    ended_[worker] = true;
    streams_.erase(worker);
  }
  cv_.notify_all();
}

int FakeCoordinator::registrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registrations_;
}

bool FakeCoordinator::waitRegistrations(int n, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return registrations_ >= n; });
}

std::optional<pb::Register> FakeCoordinator::registration(const std::string& worker) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = registered_.find(worker);
  if (it == registered_.end()) return std::nullopt;
  return it->second;
}

uint64_t FakeCoordinator::heartbeats(const std::string& worker) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = heartbeats_.find(worker);
  return it == heartbeats_.end() ? 0 : it->second;
}

bool FakeCoordinator::waitHeartbeats(const std::string& worker, uint64_t n,
                                     std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    auto it = heartbeats_.find(worker);
    return it != heartbeats_.end() && it->second >= n;
  });
}

bool FakeCoordinator::waitStreamEnded(const std::string& worker,
                                      std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    auto it = ended_.find(worker);
    return it != ended_.end() && it->second;
  });
}

std::shared_ptr<FakeCoordinator::Pending> FakeCoordinator::send(const std::string& worker,
                                                                pb::CoordinatorCommand cmd) {
  auto p = std::make_shared<Pending>();
  Stream* s = nullptr;
  pb::CoordinatorMessage m;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(worker);
    if (it == streams_.end()) return p;  // never answered
    s = it->second;
    cmd.set_request_id(next_request_++);
    pending_[cmd.request_id()] = p;
    *m.mutable_command() = std::move(cmd);
  }
  s->write(std::move(m));
  return p;
}

std::shared_ptr<FakeCoordinator::Pending> FakeCoordinator::expect(uint64_t* request_id) {
  auto p = std::make_shared<Pending>();
  std::lock_guard<std::mutex> lock(mu_);
  *request_id = next_request_++;
  pending_[*request_id] = p;
  return p;
}

std::optional<pb::CommandReply> FakeCoordinator::wait(const std::shared_ptr<Pending>& p,
                                                      std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return p->done; })) return std::nullopt;
  return p->reply;
}

}  // namespace gdrmesh::simtest
