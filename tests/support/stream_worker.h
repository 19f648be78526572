// A worker in the test process on the real gRPC stream of a real coordinator (plaintext): it
// registers with any inventory the test builds, heartbeats, records the commands it gets and
// never answers them. The coordinator cannot tell it from a worker whose host hangs inside a
// command, or from a junk registration.
//
// Thread contract: construct, wait and read from the test's thread; a reader thread and a
// heartbeat thread of its own run until destruction.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gdrmesh/v1/gdrmesh.grpc.pb.h"

namespace gdrmesh::testing {

class StreamWorker {
 public:
  // Starts connecting at once; heartbeats every `heartbeat_ms` once registered.
  StreamWorker(const std::string& address, const std::string& name, v1::Inventory inventory,
               int heartbeat_ms = 50);
  ~StreamWorker();
  StreamWorker(const StreamWorker&) = delete;
  StreamWorker& operator=(const StreamWorker&) = delete;

  // An inventory that offers the emulated transport (the simplest a worker can register).
  static v1::Inventory emulatedInventory(const std::string& hostname);

  // Bounded waits on what the stream showed.
  bool waitRegistered(std::chrono::milliseconds limit);
  bool waitEnded(std::chrono::milliseconds limit);  // the stream is over (coordinator's doing)
  bool waitCommands(size_t n, std::chrono::milliseconds limit);
  // The commands received, by kind ("prepare", "start", ...), in order.
  std::vector<std::string> commands() const;
  // Every message received, in order: "registered" or the command's kind.
  std::vector<std::string> messages() const;
  // The stream's final status (after waitEnded).
  grpc::Status status() const;

 private:
  void readLoop();
  void heartbeatLoop(int heartbeat_ms);

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::WorkerService::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>> stream_;
  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  bool registered_ = false;
  bool ended_ = false;
  bool stopping_ = false;
  grpc::Status status_;
  std::vector<std::string> commands_;
  std::vector<std::string> messages_;
  std::thread reader_;
  std::thread heartbeat_;
};

}  // namespace gdrmesh::testing
