#include "coordinator/service/coordinator_server.h"

#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>

#include <set>
#include <vector>

#include "common/limits.h"
#include "common/log.h"
#include "common/sync/mutex.h"
#include "common/units.h"
#include "convert.h"
#include "coordinator/service/control_service.h"
#include "coordinator/service/service_common.h"
#include "coordinator/service/worker_stream.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"
#include "security/grpc_tls.h"

namespace gdrmesh {
namespace {

namespace pb = ::gdrmesh::v1;

// The largest TLS frame the coordinator writes (gRPC's default is 16 KiB; its lower bound 1 KiB).
constexpr int kTlsMaxFrameBytes = 4096;

// The result writer's options: its spool, when the coordinator has one (a database file).
ResultWriter::Options resultWriterOptionsWith(ResultSpool& spool) {
  ResultWriter::Options o;
  if (!spool.path().empty()) o.spool = &spool;
  return o;
}

}  // namespace

class CoordinatorServer::WorkerServiceImpl final : public pb::WorkerService::CallbackService {
 public:
  explicit WorkerServiceImpl(CoordinatorServer& s) : s_(s) {}
  using pb::WorkerService::CallbackService::Connect;  // the generated sync overload stays hidden

  grpc::ServerBidiReactor<pb::WorkerMessage, pb::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext* ctx) override {
    WorkerStreamDeps d{s_.registry_, s_.store_, s_.clock_};
    d.heartbeat_ms = s_.options_.heartbeat_interval_ms;
    d.tls = s_.options_.tls.has_value();
    d.revoked = s_.options_.revoked.get();
    d.config = s_.config_.get();
    d.register_deadline_ms = s_.options_.register_deadline_ms;
    return newWorkerStream(d, ctx);
  }

 private:
  CoordinatorServer& s_;
};

// Schedules start sweeps through the sweep manager and keep their history in the store.
class CoordinatorServer::Starter final : public SweepStarter {
 public:
  explicit Starter(CoordinatorServer& s) : s_(s) {}
  bool sweepRunning() const override { return s_.runs_->sweeps().running(); }
  Result<std::string> startScheduledSweep(const ScheduleConfig& schedule) override {
    SweepSpec spec = schedule.sweep;
    if (spec.name.empty()) spec.name = "schedule " + schedule.name;
    if (spec.config_yaml.empty()) spec.config_yaml = s_.options_.config_yaml;
    auto p = s_.runs_->sweeps().start(spec);
    if (!p.ok()) return p.status();
    return p->id;
  }
  std::vector<std::string> workersNotOnline(const ScheduleConfig& schedule) const override {
    const SweepSpec& spec = schedule.sweep;
    const std::set<std::string> excluded(spec.exclude.begin(), spec.exclude.end());
    std::vector<std::string> out;
    if (!spec.hosts.empty()) {
      for (const auto& h : spec.hosts) {
        auto w = s_.registry_.get(h);
        if (excluded.count(h) == 0 && (!w || !w->online())) out.push_back(h);
      }
      return out;
    }
    for (const auto& w : s_.registry_.list()) {
      if (excluded.count(w.name) == 0 && !w.online()) out.push_back(w.name);
    }
    return out;
  }

 private:
  CoordinatorServer& s_;
};

class CoordinatorServer::Log final : public ScheduleLog {
 public:
  Log(ScheduleHistory& store, const Clock& clock) : store_(store), clock_(clock) {}
  Status record(const ScheduleRun& run) override {
    // Every run, in the log too: a failed, skipped or missed one with its reason.
    LogFields fields = {{"schedule", run.schedule}, {"state", run.state}};
    if (!run.sweep_id.empty()) fields.emplace_back("sweep", run.sweep_id);
    coordinatorServerLog(clock_).info(describeScheduleRun(run), std::move(fields));
    return store_.recordScheduleRun(run);
  }
  Result<std::optional<ScheduleRun>> last(const std::string& schedule) override {
    auto runs = store_.scheduleRuns(schedule, 1);
    if (!runs.ok()) return runs.status();
    if (runs->empty()) return std::optional<ScheduleRun>();
    return std::optional<ScheduleRun>(runs->front());
  }

 private:
  ScheduleHistory& store_;
  const Clock& clock_;
};

CoordinatorServer::CoordinatorServer(CoordinatorOptions options, ResultStore& store,
                                     SweepStore& sweeps, Clock& clock)
    : options_(std::move(options)),
      store_(store),
      sweep_store_(sweeps),
      clock_(clock),
      spool_(options_.spool_path),
      writer_(store, clock, resultWriterOptionsWith(spool_)),
      history_(store, sweeps, registry_) {
  auto config = std::make_shared<ClusterConfig>();
  if (!options_.config_yaml.empty() && options_.parse_config) {
    auto parsed = options_.parse_config(options_.config_yaml);
    if (parsed.ok()) {
      *config = std::move(parsed).value();
    } else {
      coordinatorServerLog(clock_).error("config: " + parsed.status().toString() +
                                         " (no expected inventory checked)");
    }
  }
  config_ = std::move(config);
  pair_ = options_.pair;
  pair_.on_violation = [this](const std::string& worker, const std::string& what) {
    const uint64_t n = registry_.noteViolation(worker, what);
    coordinatorServerLog(clock_).warn(
        "protocol violation by worker " + worker + " (" + std::to_string(n) + " so far): " + what,
        {{"worker", worker}, {"violations", n}});
  };
  // Sweeps and `gdrmesh test` over one ResourceLocks (test_runs.h).
  SweepManagerOptions so = options_.sweeps;
  so.executor.pair = pair_;
  runs_ = std::make_unique<TestRuns>(
      TestRunsDeps{registry_, clock_, sweep_store_, store_, writer_, codec_, options_.parse_config},
      SingleTestOptions{options_.limits, pair_}, so);
  starter_ = std::make_unique<Starter>(*this);
  log_ = std::make_unique<Log>(sweep_store_, clock_);
  scheduler_ = std::make_unique<Scheduler>(clock_, *starter_, *log_, options_.schedules);
  if (options_.fabric_history != nullptr) {
    fabric_ = std::make_unique<FabricRecorder>(*options_.fabric_history, clock_);
  }
}

CoordinatorServer::~CoordinatorServer() {
  shutdown();
}

Result<int> CoordinatorServer::start() {
  // gRPC's mutexes are absl's; this distribution's absl checks each lock for deadlock cycles
  // (a debug aid: ~2-4 % of the coordinator's CPU in a sweep, GraphCycles). Process-wide.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  recoverAtStart();
  worker_service_ = std::make_unique<WorkerServiceImpl>(*this);
  control_service_ = std::make_unique<ControlServiceImpl>(*this);
  if (!options_.tls) {
    Status st = checkPlaintextListen(options_.listen, options_.insecure_allow_remote);
    if (!st.ok()) return st;
  }
  auto port = openListener();
  if (!port.ok()) return port.status();
  if (Status st = startGrpc(); !st.ok()) return st;
  gate_->start();
  // The first tick's deadline is taken here: a ManualClock moved once start() returns ends it.
  const Clock::TimePoint first_tick =
      clock_.now() + std::chrono::milliseconds(options_.heartbeat_interval_ms);
  monitor_ = std::thread([this, first_tick] { monitor(first_tick); });
  // Sweeps a previous coordinator left running resume once workers can reconnect.
  runs_->sweeps().resumeInterrupted();
  // Runs missed while the coordinator was down are recorded as missed, then schedules arm.
  scheduler_->start();
  return *port;
}

void CoordinatorServer::recoverAtStart() {
  // Workers known from earlier runs are listed as offline until they connect again.
  auto known = store_.listWorkers();
  if (known.ok()) {
    for (const auto& w : *known) {
      WorkerStatus st;
      st.name = w.name;
      // An unreadable row lists the worker without its inventory until it registers again.
      auto inv = convert::inventoryFromStoredJson(w.inventory_json);
      if (inv.ok()) {
        st.inventory = std::move(inv).value();
      } else {
        coordinatorServerLog(clock_).error(inv.status().toString(), {{"worker", w.name}});
      }
      st.last_heartbeat_ms = w.last_seen_ms;
      registry_.addKnown(std::move(st));
    }
  }
  // A snapshot that a discovery through the coordinator adopted before the restart is its
  // fabric again (fabric_source.h), before any sweep resumes or test starts.
  if (options_.sweeps.fabric_source && options_.fabric_history != nullptr) {
    auto adopted = options_.sweeps.fabric_source->adoptStored(*options_.fabric_history);
    if (!adopted.ok()) {
      coordinatorServerLog(clock_).error("fabric: the stored snapshots could not be read: " +
                                         adopted.status().toString());
    } else if (!adopted->empty()) {
      coordinatorServerLog(clock_).info(*adopted);
    }
  }
  // Results a previous coordinator could not store (disk full) come back from the spool, then
  // single tests it was running when it died are recorded as ERROR rows.
  // Neither stops the coordinator (a full disk must not): what fails stays for the next start.
  auto replay = spool_.replay(store_);
  if (!replay.ok()) {
    coordinatorServerLog(clock_).error(replay.status().toString());
  } else if (replay->replayed + replay->already_stored + replay->torn > 0) {
    coordinatorServerLog(clock_).info(
        "spool replayed: " + std::to_string(replay->replayed) + " results stored, " +
            std::to_string(replay->already_stored) + " stored already, " +
            std::to_string(replay->torn) +
            " torn records (cut short by a crash, never acknowledged) skipped",
        {{"replayed", replay->replayed},
         {"already_stored", replay->already_stored},
         {"torn", replay->torn}});
  }
  if (Status st = recordInterruptedTests(); !st.ok()) {
    coordinatorServerLog(clock_).error(st.toString());
  }
}

Result<int> CoordinatorServer::openListener() {
  // The coordinator owns its listening socket (common/net/accept_gate.h): gRPC 1.51's own
  // accept loop stops for good on its first EMFILE, so a flood of idle connections would end
  // the control plane until a restart (issue #23). gRPC gets each connection once it has spoken.
  AcceptGateOptions gopts;
  gopts.listen = options_.listen;
  gopts.name = "gRPC port";
  gopts.first_bytes_deadline = std::chrono::milliseconds(options_.first_bytes_deadline_ms);
  gopts.max_pending = options_.max_pending_connections;
  gopts.max_pending_per_source = options_.max_pending_per_source;
  gopts.self_check_interval = std::chrono::milliseconds(options_.self_check_interval_ms);
  gate_ = std::make_unique<AcceptGate>(
      gopts, clock_,
      [this](int listener_fd, int fd) {
        grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters p;
        p.listener_fd = listener_fd;
        p.fd = fd;
        acceptor_->HandleNewConnection(&p);
      },
      [this](const std::string& line) {
        coordinatorServerLog(clock_).warn(line, {{"listener", "grpc"}});
      });
  auto port = gate_->open();
  if (!port.ok() && port.status().code() == Code::kInvalidArgument) return port.status();
  if (!port.ok()) {
    // A second coordinator on a port one already holds must fail, not share it (no
    // SO_REUSEPORT: clients would see a different cluster on every call).
    return unavailable(
        port.status().message() + " (the port is in use, or the address is not local)",
        "check --listen HOST:PORT: the address must be local and the port free "
        "(is another coordinator running? `ss -ltnp | grep PORT`)");
  }
  return *port;
}

Status CoordinatorServer::startGrpc() {
  grpc::ServerBuilder builder;
  acceptor_ = builder.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
      serverCredentials(options_.tls));
  // Message sizes set deliberately (common/limits.h): a request, a registration or a reply from
  // a worker is far smaller than 4 MiB within the registration limits; answers to the CLI (a
  // thousand workers' inventories) may be larger.
  builder.SetMaxReceiveMessageSize(kMaxWorkerMessageBytes);
  builder.SetMaxSendMessageSize(kMaxControlMessageBytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  // A peer that spoke but stalls in the TLS handshake is closed after this (gRPC's default is
  // 120 s); one that completed it but never calls, after the idle time.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, options_.handshake_timeout_ms);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, options_.max_connection_idle_ms);
  // Every worker holds a TLS connection open, and gRPC keeps a buffer of the largest TLS frame
  // it may write for each (16 KiB by default). The coordinator's messages are commands and
  // results of a few hundred bytes; 4 KiB frames keep 10 MiB less at 1,024 workers (idle, mutual
  // TLS: 157 -> 147 MiB) and cut a large answer (a sweep's report) into more TLS records.
  builder.AddChannelArgument(GRPC_ARG_TSI_MAX_FRAME_SIZE, kTlsMaxFrameBytes);
  builder.RegisterService(worker_service_.get());
  builder.RegisterService(control_service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) {
    gate_->stop();
    return internalError("the gRPC server did not start on " + options_.listen);
  }
  return {};
}

void CoordinatorServer::shutdown() {
  if (stopping_.exchange(true)) return;
  {
    MutexLock lock(mu_);
    cv_.notify_all();
  }
  if (monitor_.joinable()) monitor_.join();
  scheduler_->stop();
  runs_->sweeps().shutdown();
  // A store that still refuses writes does not hold the stop up for good: what is left is in the
  // spool, and the next start stores it.
  if (!writer_.flushFor(std::chrono::seconds(5))) {
    coordinatorServerLog(clock_).error(
        "stopping with " + std::to_string(writer_.pending()) + " results not stored yet (" +
            writer_.lastError().toString() + "); the spool holds them for the next start",
        {{"pending", writer_.pending()}});
  }
  for (auto& e : registry_.entries()) {
    if (e.link) e.link->fail("(coordinator shutting down)");
  }
  if (gate_) gate_->stop();  // no connection reaches gRPC once it is shutting down
  // The one real-time deadline of the coordinator (issue #19's exception): gRPC's
  // Server::Shutdown takes a wall-clock time point (its API's type), and gRPC's own threads wait
  // for it; no gdrmesh::Clock can stand in for it.
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

void CoordinatorServer::wait() {
  if (server_) server_->Wait();
}

Status CoordinatorServer::storeResult(TestResult& result, ResultWriter::OnStored on_stored) {
  auto id = writer_.write(result, std::move(on_stored));
  if (id.ok()) {
    result.id = *id;
    return {};
  }
  // The writer says whether the result is durable in the spool; the caller (the CLI) is told.
  coordinatorServerLog(clock_).error(
      "result " + result.test_id + " not stored: " + id.status().toString(),
      {{"test", result.test_id}, {"sweep", result.run_id}});
  return id.status();
}

Status CoordinatorServer::recordInterruptedTests() {
  auto open = store_.unfinishedTests();
  if (!open.ok()) return open.status().withContext("reading tests in flight at the last stop");
  if (open->empty()) return {};
  const int64_t now = clock_.unixMs();
  for (TestResult& t : *open) {
    t.status = TestStatus::kError;
    t.finished_ms = now;
    t.reason =
        "interrupted by a coordinator restart: the test was in flight when the "
        "coordinator stopped (started " +
        formatRfc3339(t.started_ms) + ", " + t.initiator.worker + " -> " + t.target.worker +
        "); run it again";
    t.initiator.reg_path = t.target.reg_path = RegPath::kHost;
  }
  auto ids = store_.insertResults(*open);
  if (!ids.ok()) return ids.status().withContext("recording interrupted tests");
  for (const TestResult& t : *open) {
    coordinatorServerLog(clock_).warn("test " + t.test_id + " recorded as ERROR (interrupted)",
                                      {{"test", t.test_id}});
    (void)store_.clearTestStarted(t.test_id);
  }
  return {};
}

Result<bool> CoordinatorServer::removeWorker(const std::string& name, bool force,
                                             const std::string& requester) {
  auto removed = registry_.forget(name, force, [&]() -> Status {
    auto row = store_.removeWorker(name);
    return row.ok() ? Status() : row.status().withContext("removing worker '" + name + "'");
  });
  if (!removed.ok()) {
    coordinatorServerLog(clock_).warn("worker " + name + " not removed (asked by " + requester +
                                          "): " + removed.status().message(),
                                      {{"worker", name}, {"by", requester}});
    return removed.status();
  }
  const bool online = removed->link != nullptr;
  if (online) removed->link->fail("(removed by " + requester + ")");
  coordinatorServerLog(clock_).info(
      "worker " + name + " removed" +
          (online ? " while online (--force: its stream is ended)" : "") + " by " + requester,
      {{"worker", name}, {"by", requester}});
  return online;
}

std::vector<TestResult> CoordinatorServer::unstored() const {
  return writer_.held();
}

void CoordinatorServer::monitor(Clock::TimePoint next_tick) {
  const auto interval = std::chrono::milliseconds(options_.heartbeat_interval_ms);
  UniqueLock lock(mu_);
  while (!stopping_.load()) {
    // A timer on the injected clock: a ManualClock's advance() is the tick in tests.
    (void)waitUntil(clock_, lock.native(), cv_, next_tick, [this] { return stopping_.load(); });
    if (stopping_.load()) break;
    next_tick = clock_.now() + interval;
    lock.unlock();
    const int64_t cutoff =
        clock_.unixMs() - int64_t{options_.heartbeat_interval_ms} * options_.heartbeat_misses;
    for (const auto& link : registry_.stale(cutoff)) {
      link->fail("(no heartbeat for " +
                 std::to_string(options_.heartbeat_interval_ms * options_.heartbeat_misses) +
                 " ms)");
    }
    lock.lock();
  }
}

}  // namespace gdrmesh
