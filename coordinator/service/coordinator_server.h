// The coordinator process: the gRPC services (WorkerService for workers, ControlService for
// clients), the heartbeat monitor, and the results store. Results that cannot be stored (disk
// full) are kept in memory and retried, never dropped while the process lives.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "coordinator/service/pair_runner.h"
#include "coordinator/service/registry.h"
#include "coordinator/store/store.h"

namespace grpc {
class Server;
}

namespace gdrmesh {

struct CoordinatorOptions {
  std::string listen = "127.0.0.1:7070";
  int heartbeat_interval_ms = 1000;
  int heartbeat_misses = 5;  // a worker silent for interval * misses is lost
  PairRunnerOptions runner;
};

class CoordinatorServer {
 public:
  CoordinatorServer(CoordinatorOptions options, ResultStore& store);
  ~CoordinatorServer();

  // Starts listening; returns the bound port (the listen address may ask for port 0).
  Result<int> start();
  void shutdown();
  void wait();

  Registry& registry() { return registry_; }
  // Stores a result, or queues it for retry when the store fails. Returns the store's error.
  Status storeResult(TestResult& result);
  // Results not yet written to the store.
  std::vector<TestResult> unstored() const;

 private:
  class WorkerServiceImpl;
  class ControlServiceImpl;
  void monitor();

  const CoordinatorOptions options_;
  ResultStore& store_;
  Registry registry_;
  PairRunner runner_;
  std::unique_ptr<WorkerServiceImpl> worker_service_;
  std::unique_ptr<ControlServiceImpl> control_service_;
  std::unique_ptr<grpc::Server> server_;
  std::thread monitor_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;  // guards unstored_, and the monitor's wakeup
  std::condition_variable cv_;
  std::deque<TestResult> unstored_;
};

}  // namespace gdrmesh
