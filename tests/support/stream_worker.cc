#include "tests/support/stream_worker.h"

namespace gdrmesh::testing {

namespace pb = ::gdrmesh::v1;

pb::Inventory StreamWorker::emulatedInventory(const std::string& hostname) {
  pb::Inventory inv;
  inv.set_hostname(hostname);
  inv.set_worker_version("stream-worker");
  inv.add_transports(pb::TRANSPORT_EMULATED);
  return inv;
}

StreamWorker::StreamWorker(const std::string& address, const std::string& name,
                           pb::Inventory inventory, int heartbeat_ms) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(8 << 20);
  channel_ = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  stub_ = pb::WorkerService::NewStub(channel_);
  stream_ = stub_->Connect(&ctx_);
  pb::WorkerMessage reg;
  reg.mutable_register_()->set_name(name);
  reg.mutable_register_()->set_protocol_version(1);
  *reg.mutable_register_()->mutable_inventory() = std::move(inventory);
  stream_->Write(reg);
  reader_ = std::thread([this] { readLoop(); });
  heartbeat_ = std::thread([this, heartbeat_ms] { heartbeatLoop(heartbeat_ms); });
}

StreamWorker::~StreamWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  ctx_.TryCancel();
  if (heartbeat_.joinable()) heartbeat_.join();
  if (reader_.joinable()) reader_.join();
}

void StreamWorker::readLoop() {
  pb::CoordinatorMessage m;
  while (stream_->Read(&m)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (m.has_registered()) {
      registered_ = true;
      messages_.emplace_back("registered");
    } else if (m.has_command()) {
      const auto* field = m.command().GetDescriptor()->FindOneofByName("command");
      const auto* set =
          field ? m.command().GetReflection()->GetOneofFieldDescriptor(m.command(), field)
                : nullptr;
      commands_.push_back(set ? set->name() : "?");
      messages_.push_back(commands_.back());
    }
    cv_.notify_all();
  }
  grpc::Status st = stream_->Finish();
  std::lock_guard<std::mutex> lock(mu_);
  status_ = st;
  ended_ = true;
  cv_.notify_all();
}

void StreamWorker::heartbeatLoop(int heartbeat_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return registered_ || ended_ || stopping_; });
  while (!ended_ && !stopping_) {
    // Paces the heartbeats (this is the worker's own clock, not a wait for the coordinator).
    cv_.wait_for(lock, std::chrono::milliseconds(heartbeat_ms),
                 [this] { return ended_ || stopping_; });
    if (ended_ || stopping_) break;
    lock.unlock();
    pb::WorkerMessage hb;
    hb.mutable_heartbeat()->set_unix_ms(0);  // the coordinator uses its own clock
    const bool ok = stream_->Write(hb);
    lock.lock();
    if (!ok) break;
  }
}

bool StreamWorker::waitRegistered(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, limit, [this] { return registered_; });
}

bool StreamWorker::waitEnded(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, limit, [this] { return ended_; });
}

bool StreamWorker::waitCommands(size_t n, std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, limit, [this, n] { return commands_.size() >= n; });
}

std::vector<std::string> StreamWorker::commands() const {
  std::lock_guard<std::mutex> lock(mu_);
  return commands_;
}

std::vector<std::string> StreamWorker::messages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return messages_;
}

grpc::Status StreamWorker::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

}  // namespace gdrmesh::testing
