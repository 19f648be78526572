// Simulated workers on the wire: N workers in one process, each with its own registration and
// its own WorkerService.Connect stream (Register.simulated = true), heartbeating at the interval
// the coordinator gives and answering every command from its SimWorkerModel.
//
// Scale: streams are gRPC callback reactors (grpc::ClientBidiReactor), so 1024 workers need
// no thread each: gRPC's own small pool runs the reactions and one clock thread runs every
// timer (heartbeats, replies due after a simulated run, reconnects). Each stream has at most
// one write outstanding; later messages queue behind it.
//
// Connections: SimConfig::connections TCP connections (0 = one per worker, as separate hosts);
// workers are spread over them round robin.
//
// Thread contract: start(), stop(), stats() and waitRegistered() are thread-safe. The
// destructor stops and waits for every stream to end.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "worker/simulate/sim_config.h"

namespace gdrmesh {

struct SimStats {
  int workers = 0;
  int online = 0;           // registered and streaming now
  int ever_registered = 0;  // workers registered at least once
  int refused = 0;          // registrations the coordinator refused (duplicate, protocol)
  int dropped = 0;          // streams closed by a drop fault
  uint64_t commands = 0;    // commands received
  uint64_t replies = 0;     // replies written
  uint64_t unanswered = 0;  // commands a mute fault swallowed
  uint64_t heartbeats = 0;  // heartbeats written
  std::string last_error;   // the last stream end that was not asked for
};

class SimulatedWorkers {
 public:
  // `clock` times runs, heartbeats and reconnects; nullptr: a SystemClock of its own.
  // An injected clock must outlive this object.
  explicit SimulatedWorkers(SimConfig config, Clock* clock = nullptr);
  ~SimulatedWorkers();
  SimulatedWorkers(const SimulatedWorkers&) = delete;
  SimulatedWorkers& operator=(const SimulatedWorkers&) = delete;

  // Validates the configuration and dials every worker; returns at once.
  Status start();
  // Cancels every stream and waits until all have ended. Idempotent.
  void stop();

  // Blocks until `n` workers have registered at least once, or `timeout`; true when they have.
  bool waitRegistered(int n, std::chrono::milliseconds timeout);
  // Blocks until `n` streams have been closed by a drop fault, or `timeout`; true when they
  // have. (The coordinator sees a dropped stream end before this side has counted it.)
  bool waitDropped(int n, std::chrono::milliseconds timeout);
  SimStats stats() const;
  const std::vector<std::string>& names() const;

  class Impl;  // defined in sim_workers.cc

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace gdrmesh
