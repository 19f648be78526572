// The coordinator process: the gRPC services (WorkerService for workers, ControlService for
// clients), the heartbeat monitor, the sweep manager and the results store. Every result, a
// sweep's or a single `gdrmesh test`'s, is written through the one ResultWriter: results the
// store refuses (disk full, read-only) are spooled, held and retried, never dropped.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/net/accept_gate.h"
#include "common/pair_spec.h"
#include "common/status.h"
#include "common/sync/mutex.h"
#include "coordinator/orchestrator/fabric_history.h"
#include "coordinator/orchestrator/history.h"
#include "coordinator/orchestrator/pair_test.h"
#include "coordinator/orchestrator/scheduler.h"
#include "coordinator/orchestrator/single_test.h"
#include "coordinator/orchestrator/sweep_manager.h"
#include "coordinator/orchestrator/test_runs.h"
#include "coordinator/service/registry.h"
#include "coordinator/service/sweep_convert.h"
#include "coordinator/store/result_writer.h"
#include "coordinator/store/store.h"
#include "security/policy.h"
#include "security/revocation.h"

namespace grpc {
class Server;
namespace experimental {
class ExternalConnectionAcceptor;
}
}  // namespace grpc

namespace gdrmesh {

struct CoordinatorOptions {
  std::string listen = "127.0.0.1:7070";
  // The result writer's spool (ResultSpool::spoolPathFor(--db)): results the store refuses are
  // made durable there. "": none (an in-memory database; held results live in memory only).
  std::string spool_path;
  int heartbeat_interval_ms = 1000;
  int heartbeat_misses = 5;  // a worker silent for interval * misses is lost
  PairTestLimits limits;
  PairTestOptions pair;
  SweepManagerOptions sweeps;
  SweepManager::ConfigParser parse_config;  // YAML -> ClusterConfig (coordinator/config)
  // The coordinator's cluster config (--config): its thresholds judge every sweep that brings
  // none of its own, and its schedules run on this coordinator.
  std::string config_yaml;
  std::vector<ScheduleConfig> schedules;
  // TLS (docs/security.md): the coordinator's certificate and key and the cluster CA. Every
  // client must present a certificate of that CA; its role and name decide what it may do
  // (security/policy.h). nullopt: plaintext with no authentication (--insecure), refused by
  // start() on a non-loopback listen address unless insecure_allow_remote.
  std::optional<TlsMaterial> tls;
  // With TLS (--crl): certificates on this list are refused on every call, and a connected
  // worker is disconnected once its certificate shows up on it (security/revocation.h).
  std::shared_ptr<RevocationList> revoked;
  bool insecure_allow_remote = false;
  // The control port's front door (docs/security.md, "Connections"; common/net/accept_gate.h):
  // the coordinator accepts connections itself and hands one to gRPC once it has sent its first
  // bytes within `first_bytes_deadline_ms`; pending ones are bounded (0: from the open-file
  // limit); the listener checks itself every `self_check_interval_ms` (0: never) and is
  // recreated if it does not accept.
  int first_bytes_deadline_ms = 5000;
  size_t max_pending_connections = 0;
  size_t max_pending_per_source = 0;
  int self_check_interval_ms = 10000;
  // A TLS handshake (or plaintext preface) not done within this is closed by gRPC.
  int handshake_timeout_ms = 10000;
  // A connection with no call for this long is closed (GOAWAY; a client reconnects on its next
  // call). A worker's stream is a call: registered workers are never idle.
  int max_connection_idle_ms = 30000;
  // A worker stream that sends no Register within this is cancelled.
  int register_deadline_ms = 10000;
  // Where the node actions are recorded (ListActions, `gdrmesh actions`); nullptr: the RPC
  // answers FAILED_PRECONDITION.
  ActionStore* action_store = nullptr;
  // Where fabric snapshots are stored (DiscoverFabric, ListFabricSnapshots, GetFabricSnapshot;
  // `gdrmesh fabric discover --worker`, `fabric history`); nullptr: those RPCs answer
  // FAILED_PRECONDITION.
  FabricHistory* fabric_history = nullptr;
};

class CoordinatorServer {
 public:
  CoordinatorServer(CoordinatorOptions options, ResultStore& store, SweepStore& sweeps,
                    Clock& clock);
  ~CoordinatorServer();

  // Starts listening; returns the bound port (the listen address may ask for port 0).
  Result<int> start();
  void shutdown();
  void wait();

  Registry& registry() { return registry_; }
  SweepManager& sweeps() { return runs_->sweeps(); }
  Scheduler& scheduler() { return *scheduler_; }
  // History, result and comparison queries (the ControlService and the status page's API).
  HistoryQueries& history() { return history_; }
  // Stores a result through the result writer (the one path sweeps use too) and waits for its
  // first attempt: OK with result.id set, or the store's error, saying whether the result is
  // durable in the spool; a result refused for a reason that may pass is held (unstored()) and
  // stored once the store takes writes again. `on_stored` runs once it is stored or refused.
  Status storeResult(TestResult& result, ResultWriter::OnStored on_stored = {});
  // Results the store refused for a reason that may pass and that are not stored yet, newest
  // first (ResultWriter::held).
  std::vector<TestResult> unstored() const;
  // `gdrmesh worker remove NAME [--force]`: forgets the worker's registration and its stored
  // inventory (its results stay). Registry::forget's errors (unknown: kNotFound, online without
  // `force`: kFailedPrecondition) and the store's. With `force` an online worker's stream is
  // ended and every command pending on it fails. Logged with `requester` (who asked).
  // Returns whether the worker was online.
  Result<bool> removeWorker(const std::string& name, bool force, const std::string& requester);

 private:
  class WorkerServiceImpl;
  class ControlServiceImpl;
  class Starter;
  class Log;
  // Every heartbeat interval (on clock_, from `next_tick` on): ends the links of workers silent
  // for heartbeat_misses intervals.
  void monitor(Clock::TimePoint next_tick);
  // At start, before serving: workers known from earlier runs (listed offline), the spool
  // replayed, interrupted tests recorded. Failures are logged; none stops the coordinator.
  void recoverAtStart();
  // The listening socket (an AcceptGate that hands gRPC each connection once it has spoken);
  // returns the bound port.
  Result<int> openListener();
  // The gRPC server on the gate's connections, with both services.
  Status startGrpc();
  // At start: single tests that were in flight when the last coordinator stopped (their
  // markers have no result row) become ERROR rows "interrupted by a coordinator restart".
  Status recordInterruptedTests();

  const CoordinatorOptions options_;
  // options_.config_yaml parsed (empty when none): host classes' expected inventory checks
  // each registration and bounds its figures.
  std::shared_ptr<const ClusterConfig> config_;
  // options_.pair, with protocol violations logged and counted against the worker.
  PairTestOptions pair_;
  ResultStore& store_;
  SweepStore& sweep_store_;
  Clock& clock_;
  Registry registry_;
  ResultSpool spool_;  // before writer_, which writes to it
  ResultWriter writer_;
  HistoryQueries history_;
  convert::StoredSweepCodec codec_;
  // The sweeps and `gdrmesh test` (RunTest), sharing the NICs, GPUs and hosts in tests now.
  std::unique_ptr<TestRuns> runs_;
  std::unique_ptr<Starter> starter_;
  std::unique_ptr<Log> log_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<FabricRecorder> fabric_;  // null without options_.fabric_history
  std::unique_ptr<WorkerServiceImpl> worker_service_;
  std::unique_ptr<ControlServiceImpl> control_service_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<AcceptGate> gate_;  // after what it feeds: stopped (destroyed) first
  std::thread monitor_;
  std::atomic<bool> stopping_{false};
  Mutex mu_;  // the monitor's wakeup
  std::condition_variable cv_;
};

}  // namespace gdrmesh
