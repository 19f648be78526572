// The worker's gRPC client: dials the coordinator, registers the inventory, heartbeats, and
// executes the coordinator's commands (prepare, connect, run, verify, release) on the
// SessionManager. Only the coordinator listens; the worker needs no open port for control.
//
// Commands run on two bounded pools (worker/service/command_pool.h), one set per stream:
// `control` for prepare and release, which never wait for a peer, and `commands` for connect,
// run, verify, start and finish, which may block for a whole run. A release therefore always
// gets a thread, even when every command thread waits for a peer. A full pool answers the
// command with RESOURCE_EXHAUSTED at once. Nothing outlives the stream: when it ends, queued
// commands are dropped, every session is aborted and every thread joined.
//
// When the stream breaks (coordinator restarted, network), every session is aborted and the
// worker dials again with exponential backoff (0.2 s .. 5 s).
//
// Thread contract: run() blocks the calling thread; stop() may be called from any thread
// (e.g. a signal-handling thread).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/fabric/counters.h"
#include "common/fabric/discovery.h"
#include "common/inventory.h"
#include "common/status.h"
#include "common/sync/mutex.h"
#include "security/policy.h"
#include "worker/session/session.h"

namespace grpc {
class ClientContext;
}

namespace gdrmesh {

struct WorkerOptions {
  std::string coordinator;  // host:port
  std::string name;         // unique worker name; defaults to the hostname
  std::string data_host;    // address the emulated transport listens on
  // This worker's certificate (role worker, CN = name), key and the cluster CA: the channel to
  // the coordinator is TLS with this certificate as the client's. nullopt: plaintext
  // (--insecure).
  std::optional<TlsMaterial> tls;
  int heartbeat_ms = 1000;
  bool reconnect = true;  // false: return after the first stream ends (tests)
  int numa_node = -1;
  // PCIe path class between a GPU index and a NIC name ("PIX", ...), recorded with results.
  std::function<std::string(int gpu, const std::string& nic)> topo_class;
  // Nearest NIC of a GPU (best PCIe class): the default device of a GPU test ("" = none).
  std::function<std::string(int gpu)> nearest_nic;
  // NUMA node of a NIC ("" = the first NIC), where host test buffers are placed; -1 unknown.
  std::function<int(const std::string& nic)> nic_numa;
  // `gdrmesh fabric discover --worker NAME`: this worker's InfiniBand discovery (worker/fabric,
  // set where that module is built; not re-entrant: the agent runs one at a time). Unset: the
  // worker answers that it was built without it (a result, not an error).
  std::function<Result<fabric::Fabric>(const fabric::DiscoverRequest&)> discover_fabric;
  // `gdrmesh fabric discover --worker NAME --lldp` (RoCE): this worker's NICs and their LLDP
  // neighbours (worker/fabric/lldp_reader.h; blocking, at most its lldpcli timeout). The agent
  // names the host after the worker. Unset (simulated workers): the worker answers that it
  // cannot ask lldpd (a result, not an error).
  std::function<fabric::LldpHost(const fabric::DiscoverRequest&)> read_lldp;
  // A sweep's fabric reader (docs/fabric.md, "Counters"): reads the port counters through this
  // worker's InfiniBand port (worker/fabric/ib_counters.h; one at a time with discovery). Unset:
  // the worker answers that it was built without the fabric module.
  std::function<Result<fabric::CounterReadOutcome>(const fabric::CounterReadRequest&)>
      read_port_counters;
  // Sent with the registration (`gdrmesh worker --label rack=r12`).
  std::map<std::string, std::string> labels;
  // Bounds of the command pools (see above). Command threads should cover every test the
  // SessionManager admits (one blocking command per test at a time) plus a margin.
  size_t command_threads = 72;
  size_t control_threads = 4;
  size_t command_queue = 1024;  // per pool; beyond it a command is refused
};

class WorkerAgent {
 public:
  WorkerAgent(WorkerOptions options, Inventory inventory, SessionManager& sessions);
  ~WorkerAgent();
  WorkerAgent(const WorkerAgent&) = delete;
  WorkerAgent& operator=(const WorkerAgent&) = delete;

  // Serves until stop(). Returns an error only for conditions that retrying cannot fix
  // (the coordinator refused the registration: duplicate name, protocol mismatch).
  Status run();
  void stop();

 private:
  class Stream;
  Status serveOnce(bool* registered);
  // Serves the registered stream's commands until it ends, heartbeating meanwhile; then aborts
  // every session and joins every thread.
  void serveCommands(Stream& stream, int heartbeat_ms);

  const WorkerOptions options_;
  const Inventory inventory_;
  SessionManager& sessions_;
  std::atomic<bool> stopping_{false};
  Mutex mu_;
  std::condition_variable cv_;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace gdrmesh
