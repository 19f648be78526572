// A tiny coordinator for worker tests: a gRPC server on 127.0.0.1 (port 0) implementing
// WorkerService.Connect. It registers each worker, then lets the test send commands down the
// worker's stream and wait for the replies (matched by request id). Nothing else of the real
// coordinator is involved, so what a test measures is the worker.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "gdrmesh/v1/gdrmesh.grpc.pb.h"

namespace gdrmesh::testing {

namespace pb = ::gdrmesh::v1;

// One registered worker's stream.
class SoakLink {
 public:
  using Stream = grpc::ServerReaderWriter<pb::CoordinatorMessage, pb::WorkerMessage>;
  SoakLink(pb::Register reg, Stream* stream) : register_(std::move(reg)), stream_(stream) {}

  const pb::Register& registration() const { return register_; }
  // Sends `cmd` (its request id is set here) and waits for the reply; nullopt when the stream
  // ended or no reply came within `limit`.
  std::optional<pb::CommandReply> call(pb::CoordinatorCommand cmd, std::chrono::milliseconds limit);

  // Called by the server's reader.
  void deliver(const pb::CommandReply& reply);
  void lost();

 private:
  struct Pending {
    bool done = false;
    pb::CommandReply reply;
  };
  const pb::Register register_;
  Stream* stream_;
  std::mutex write_mu_;  // one writer at a time on stream_; held by lost()
  std::mutex mu_;        // guards the fields below (lost_ is written under both)
  std::condition_variable cv_;
  uint64_t next_id_ = 1;
  bool lost_ = false;
  std::map<uint64_t, std::shared_ptr<Pending>> pending_;
};

class SoakCoordinator final : public pb::WorkerService::Service {
 public:
  SoakCoordinator();
  ~SoakCoordinator() override;
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // The link of worker `name` once it has registered; null after `limit`.
  std::shared_ptr<SoakLink> waitFor(const std::string& name, std::chrono::milliseconds limit);
  // Waits until worker `name`'s stream has ended (false after `limit`).
  bool waitGone(const std::string& name, std::chrono::milliseconds limit);

  grpc::Status Connect(grpc::ServerContext* ctx, SoakLink::Stream* stream) override;

 private:
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::mutex mu_;  // guards links_
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<SoakLink>> links_;
};

}  // namespace gdrmesh::testing
