// A tiny in-test coordinator: WorkerService only, on 127.0.0.1 port 0, with the callback API so
// that hundreds of worker streams cost it no thread each. It records registrations and
// heartbeats and lets a test send commands to a named worker and wait for the reply.
//
// Thread contract: every method is thread-safe.
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
#include <vector>

#include "gdrmesh/v1/gdrmesh.grpc.pb.h"

namespace gdrmesh::simtest {

namespace pb = ::gdrmesh::v1;

class FakeCoordinator {
 public:
  explicit FakeCoordinator(uint32_t heartbeat_interval_ms = 1000);
  ~FakeCoordinator();
  FakeCoordinator(const FakeCoordinator&) = delete;
  FakeCoordinator& operator=(const FakeCoordinator&) = delete;

  const std::string& address() const { return address_; }

  // Registrations accepted so far (one per stream).
  int registrations() const;
  bool waitRegistrations(int n, std::chrono::milliseconds timeout) const;
  std::optional<pb::Register> registration(const std::string& worker) const;
  uint64_t heartbeats(const std::string& worker) const;
  bool waitHeartbeats(const std::string& worker, uint64_t n,
                      std::chrono::milliseconds timeout) const;
  // True once the worker's stream has ended.
  bool waitStreamEnded(const std::string& worker, std::chrono::milliseconds timeout) const;

  // Sends a command to a registered worker; its reply, or nullopt after `timeout`.
  struct Pending;
  std::shared_ptr<Pending> send(const std::string& worker, pb::CoordinatorCommand cmd);
  // A reply the worker will send unasked (a finish sent with its prepare): its request id.
  std::shared_ptr<Pending> expect(uint64_t* request_id);
  std::optional<pb::CommandReply> wait(const std::shared_ptr<Pending>& p,
                                       std::chrono::milliseconds timeout) const;
  std::optional<pb::CommandReply> call(const std::string& worker, pb::CoordinatorCommand cmd,
                                       std::chrono::milliseconds timeout) {
    return wait(send(worker, std::move(cmd)), timeout);
  }

  class Stream;  // one worker stream (server reactor)

 private:
  class Service;
  friend class Stream;
  void onRegister(Stream* s, const pb::Register& r);
  void onHeartbeat(const std::string& worker);
  void onReply(const pb::CommandReply& r);
  void onEnded(const std::string& worker);

  const uint32_t heartbeat_interval_ms_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;

  mutable std::mutex mu_;  // guards all below
  mutable std::condition_variable cv_;
  int registrations_ = 0;
  std::map<std::string, pb::Register> registered_;
  std::map<std::string, Stream*> streams_;  // live streams by worker name
  std::map<std::string, uint64_t> heartbeats_;
  std::map<std::string, bool> ended_;
  std::map<uint64_t, std::shared_ptr<Pending>> pending_;
  uint64_t next_request_ = 1;
  std::vector<std::unique_ptr<Stream>> all_streams_;  // kept until the server is gone
};

}  // namespace gdrmesh::simtest
