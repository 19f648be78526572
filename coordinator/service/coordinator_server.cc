#include "coordinator/service/coordinator_server.h"

#include <absl/synchronization/mutex.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <deque>
#include <future>
#include <set>
#include <vector>

#include "common/limits.h"
#include "common/log.h"
#include "common/sync/mutex.h"
#include "common/units.h"
#include "convert.h"
#include "coordinator/service/history_convert.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"
#include "security/grpc_tls.h"

namespace gdrmesh {
namespace {

namespace pb = ::gdrmesh::v1;

// The coordinator's log lines, timed by its clock.
ComponentLog coordinatorServerLog(const Clock& clock) {
  return ComponentLog("coordinator", &clock);
}

grpc::Status toGrpc(const Status& st) {
  if (st.ok()) return grpc::Status::OK;
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  switch (st.code()) {
    case Code::kInvalidArgument:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case Code::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case Code::kFailedPrecondition:
      code = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    case Code::kUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case Code::kDeadlineExceeded:
      code = grpc::StatusCode::DEADLINE_EXCEEDED;
      break;
    case Code::kAborted:
      code = grpc::StatusCode::ABORTED;
      break;
    case Code::kResourceExhausted:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    case Code::kPermissionDenied:
      code = grpc::StatusCode::PERMISSION_DENIED;
      break;
    case Code::kUnimplemented:
      code = grpc::StatusCode::UNIMPLEMENTED;
      break;
    default:
      code = grpc::StatusCode::INTERNAL;
      break;
  }
  std::string msg = st.message();
  if (!st.fix().empty()) msg += " (fix: " + st.fix() + ")";
  return grpc::Status(code, msg);
}

// The result writer's options: its spool, when the coordinator has one (a database file).
ResultWriter::Options resultWriterOptionsWith(ResultSpool& spool) {
  ResultWriter::Options o;
  if (!spool.path().empty()) o.spool = &spool;
  return o;
}

}  // namespace

// One worker's stream, on gRPC's callback API: no thread per worker. Reads are handled as
// they complete (register, heartbeats, replies); writes are queued with one outstanding, so
// a pair test's callback that sends a command never blocks on the network.
class WorkerStream final
    : public grpc::ServerBidiReactor<pb::WorkerMessage, pb::CoordinatorMessage> {
 public:
  // What a WorkerLink holds: lives as long as any writer, and stops writing once the stream
  // has ended (the reactor is gone).
  struct Handle {
    Mutex mu;
    WorkerStream* stream ABSL_GUARDED_BY(mu) = nullptr;
    // The worker is in the registry (commands may be sent to it) a moment before its
    // Registered reply is queued; a worker takes a command before that reply as a broken
    // stream. Commands sent in that moment wait here, in order, until the reply is queued.
    bool greeted ABSL_GUARDED_BY(mu) = false;
    std::vector<pb::CoordinatorMessage> early ABSL_GUARDED_BY(mu);
  };

  WorkerStream(Registry& registry, ResultStore& store, Clock& clock, int heartbeat_ms, bool tls,
               RevocationList* revoked, const ClusterConfig* config, int register_deadline_ms,
               grpc::CallbackServerContext* ctx)
      : registry_(registry),
        store_(store),
        clock_(clock),
        heartbeat_ms_(heartbeat_ms),
        tls_(tls),
        revoked_(revoked),
        config_(config),
        ctx_(ctx),
        handle_(std::make_shared<Handle>()) {
    handle_->stream = this;
    // A stream that never registers holds a connection (and a reactor) for nothing: it is
    // cancelled at the deadline (issue #23). The first message decides the race with the timer.
    std::shared_ptr<Handle> h = handle_;
    register_timer_ = clock_.schedule(
        clock_.after(register_deadline_ms / 1000.0), [h, ctx, register_deadline_ms, c = &clock_] {
          MutexLock lock(h->mu);
          if (h->stream == nullptr) return;
          int waiting = kWaitingForRegister;
          if (!h->stream->phase_.compare_exchange_strong(waiting, kTimedOut)) return;
          coordinatorServerLog(*c).warn("worker stream from " + ctx->peer() +
                                            " sent no Register within " +
                                            std::to_string(register_deadline_ms) + " ms; closed",
                                        {{"peer", ctx->peer()}});
          ctx->TryCancel();
        });
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return end(grpc::Status::OK);
    if (!link_) {
      int waiting = kWaitingForRegister;
      if (!phase_.compare_exchange_strong(waiting, kFirstMessageRead)) {
        return end(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                "no Register message before the registration deadline"));
      }
      clock_.cancel(register_timer_);
      grpc::Status st = registerWorker();
      if (!st.ok()) return end(st);
    } else if (in_.has_heartbeat()) {
      if (Status st = stillTrusted(); !st.ok()) return end(toGrpc(st));
      registry_.heartbeat(name_, clock_.unixMs(), in_.heartbeat().active_tests());
    } else if (in_.has_reply()) {
      link_->onReply(std::move(*in_.mutable_reply()));  // in_ is read into afresh next
    }
    StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    UniqueLock lock(mu_);
    out_.pop_front();
    if (!ok) {
      out_.clear();
      write_failed_ = true;
    }
    if (!out_.empty() && !write_failed_) {
      StartWrite(&out_.front());
      return;
    }
    writing_ = false;
    if (finish_) {
      finish_ = false;
      const grpc::Status st = final_status_;  // written once, by end()
      lock.unlock();
      Finish(st);
    }
  }

  void OnDone() override {
    {
      MutexLock lock(handle_->mu);
      handle_->stream = nullptr;
    }
    clock_.cancel(register_timer_);
    delete this;
  }

  // Queues a message (moved in: no copy per command); false once the stream is ending.
  bool write(pb::CoordinatorMessage&& m) {
    MutexLock lock(mu_);
    if (ended_ || write_failed_) return false;
    out_.push_back(std::move(m));
    if (!writing_) {
      writing_ = true;
      StartWrite(&out_.front());
    }
    return true;
  }

 private:
  grpc::Status registerWorker() {
    if (!in_.has_register_()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the first message on the worker stream must be Register");
    }
    const auto& reg = in_.register_();
    if (reg.protocol_version() != 1) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "protocol_version " + std::to_string(reg.protocol_version()) +
                              " is not supported by this coordinator (speaks 1)");
    }
    WorkerStatus w;
    w.inventory = convert::fromProto(reg.inventory());
    w.labels.insert(reg.labels().begin(), reg.labels().end());
    if (Status limits = checkRegistration(reg.name(), w.inventory, w.labels); !limits.ok()) {
      return toGrpc(limits);
    }
    std::string identity = "no certificate (--insecure)";
    if (tls_) {
      // The name a worker may register is bound to its certificate: no one registers as, or
      // takes over, another worker.
      auto cert = peerCertificate(ctx_->auth_context().get());
      Status st = cert.ok() ? Status() : cert.status();
      if (st.ok() && revoked_ != nullptr) {
        checked_generation_ = revoked_->generation();
        st = revoked_->check(*cert);
      }
      if (st.ok()) st = authorizeRegister(cert->identity, reg.name(), reg.simulated());
      if (!st.ok()) {
        coordinatorServerLog(clock_).warn("registration of '" + reg.name() + "' from " +
                                              ctx_->peer() + " refused: " + st.message(),
                                          {{"worker", reg.name()}, {"peer", ctx_->peer()}});
        return toGrpc(st);
      }
      identity = "certificate " + cert->identity.describe();
      cert_ = *cert;
    }
    name_ = reg.name();
    std::shared_ptr<Handle> h = handle_;
    grpc::CallbackServerContext* ctx = ctx_;
    auto link = std::make_shared<WorkerLink>(
        name_, clock_,
        [h](pb::CoordinatorMessage&& m) {
          MutexLock lock(h->mu);
          if (h->stream == nullptr) return false;
          if (!h->greeted) {
            h->early.push_back(std::move(m));
            return true;
          }
          return h->stream->write(std::move(m));
        },
        [h, ctx] {
          MutexLock lock(h->mu);
          if (h->stream != nullptr) ctx->TryCancel();
        });
    w.name = name_;
    w.peer = ctx_->peer();
    w.connected_ms = clock_.unixMs();
    w.last_heartbeat_ms = w.connected_ms;
    w.simulated = reg.simulated();
    simulated_ = w.simulated;
    if (!w.simulated) {
      // The cluster config's expected inventory for the worker's host class: a registration
      // that contradicts it is flagged (not refused: a degraded host must still be tested), and
      // the class's port rate, not the registered one, bounds the worker's figures.
      w.findings =
          registrationFindings(*config_, name_, w.labels, w.inventory, &w.expected_port_rate_gbps);
      for (const auto& f : w.findings) {
        coordinatorServerLog(clock_).warn(
            "worker " + name_ + " registration contradicts the config: " + f, {{"worker", name_}});
      }
    }
    if (w.simulated) {
      // A simulated worker offers only the simulated transport, whatever it claims.
      w.inventory.transports = {toString(TransportKind::kSimulated)};
    } else {
      auto& t = w.inventory.transports;
      t.erase(std::remove(t.begin(), t.end(), toString(TransportKind::kSimulated)), t.end());
    }
    Status added = registry_.add(w, link);
    if (!added.ok()) {
      return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                          added.message() + " (fix: " + added.fix() + ")");
    }
    link_ = link;
    if (!w.simulated) {
      WorkerRecord rec;
      rec.name = name_;
      rec.hostname = reg.inventory().hostname();
      google::protobuf::util::JsonPrintOptions jopt;
      jopt.preserve_proto_field_names = true;
      (void)google::protobuf::util::MessageToJsonString(reg.inventory(), &rec.inventory_json, jopt);
      rec.first_seen_ms = w.connected_ms;
      rec.last_seen_ms = w.connected_ms;
      Status st = store_.upsertWorker(rec);
      if (!st.ok()) coordinatorServerLog(clock_).error(st.toString(), {{"worker", name_}});
      coordinatorServerLog(clock_).info(
          "worker " + name_ + " registered from " + w.peer + " (" + identity + ")",
          {{"worker", name_}, {"peer", w.peer}});
    }
    pb::CoordinatorMessage hello;
    hello.mutable_registered()->set_worker_id(name_);
    hello.mutable_registered()->set_heartbeat_interval_ms(static_cast<uint32_t>(heartbeat_ms_));
    MutexLock lock(h->mu);
    write(std::move(hello));
    h->greeted = true;
    for (auto& m : h->early) write(std::move(m));
    h->early.clear();
    return grpc::Status::OK;
  }

  // A connected worker whose certificate is revoked since it registered is disconnected at
  // its next heartbeat after the revocation list changes.
  Status stillTrusted() {
    if (revoked_ == nullptr || !tls_) return {};
    const uint64_t g = revoked_->generation();
    if (g == checked_generation_) return {};
    checked_generation_ = g;
    Status st = revoked_->check(cert_);
    if (!st.ok()) {
      coordinatorServerLog(clock_).warn("disconnecting worker " + name_ + ": " + st.message(),
                                        {{"worker", name_}});
    }
    return st;
  }

  void end(const grpc::Status& status) {
    if (link_) {
      link_->fail("(disconnected)");
      link_->detachStream();
      registry_.remove(name_, link_.get());
      if (!simulated_) {
        coordinatorServerLog(clock_).info("worker " + name_ + " disconnected", {{"worker", name_}});
      }
    }
    UniqueLock lock(mu_);
    if (ended_) return;
    ended_ = true;
    if (writing_) {
      // Finish once the write in flight completes.
      finish_ = true;
      final_status_ = status;
      return;
    }
    lock.unlock();
    Finish(status);
  }

  Registry& registry_;
  ResultStore& store_;
  Clock& clock_;
  const int heartbeat_ms_;
  const bool tls_;
  RevocationList* const revoked_;      // null: no --crl
  const ClusterConfig* const config_;  // never null (empty: no --config)
  CertInfo cert_;                      // the registered worker's certificate (TLS)
  uint64_t checked_generation_ = 0;
  grpc::CallbackServerContext* ctx_;
  std::shared_ptr<Handle> handle_;
  enum : int { kWaitingForRegister, kFirstMessageRead, kTimedOut };
  std::atomic<int> phase_{kWaitingForRegister};
  Clock::TimerId register_timer_ = 0;
  pb::WorkerMessage in_;
  std::string name_;
  bool simulated_ = false;
  std::shared_ptr<WorkerLink> link_;
  Mutex mu_;
  std::deque<pb::CoordinatorMessage> out_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
};

class CoordinatorServer::WorkerServiceImpl final : public pb::WorkerService::CallbackService {
 public:
  explicit WorkerServiceImpl(CoordinatorServer& s) : s_(s) {}
  using pb::WorkerService::CallbackService::Connect;  // the generated sync overload stays hidden

  grpc::ServerBidiReactor<pb::WorkerMessage, pb::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext* ctx) override {
    return new WorkerStream(s_.registry_, s_.store_, s_.clock_, s_.options_.heartbeat_interval_ms,
                            s_.options_.tls.has_value(), s_.options_.revoked.get(),
                            s_.config_.get(), s_.options_.register_deadline_ms, ctx);
  }

 private:
  CoordinatorServer& s_;
};

// Schedules start sweeps through the sweep manager and keep their history in the store.
class CoordinatorServer::Starter final : public SweepStarter {
 public:
  explicit Starter(CoordinatorServer& s) : s_(s) {}
  bool sweepRunning() const override { return s_.sweep_manager_->running(); }
  Result<std::string> startScheduledSweep(const ScheduleConfig& schedule) override {
    SweepSpec spec = schedule.sweep;
    if (spec.name.empty()) spec.name = "schedule " + schedule.name;
    if (spec.config_yaml.empty()) spec.config_yaml = s_.options_.config_yaml;
    auto p = s_.sweep_manager_->start(spec);
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

class CoordinatorServer::ControlServiceImpl final : public pb::ControlService::Service {
 public:
  explicit ControlServiceImpl(CoordinatorServer& s) : s_(s) {}

  grpc::Status ListWorkers(grpc::ServerContext* ctx, const pb::ListWorkersRequest*,
                           pb::ListWorkersResponse* resp) override {
    if (auto st = allow(ctx, Access::kRead, "ListWorkers"); !st.ok()) return st;
    for (const auto& e : s_.registry_.entries()) {
      const WorkerStatus& st = *e.status;
      auto* w = resp->add_workers();
      w->set_name(st.name);
      w->set_state(st.state);
      w->set_connected_ms(st.connected_ms);
      w->set_last_heartbeat_ms(st.last_heartbeat_ms);
      convert::toProto(st.inventory, w->mutable_inventory());
      w->set_peer(st.peer);
      w->set_active_tests(st.active_tests);
      w->mutable_labels()->insert(st.labels.begin(), st.labels.end());
      for (const auto& f : st.findings) w->add_findings(f);
    }
    return grpc::Status::OK;
  }

  grpc::Status RunTest(grpc::ServerContext* ctx, const pb::RunTestRequest* req,
                       pb::RunTestResponse* resp) override {
    if (auto st = allow(ctx, Access::kAdmin, "RunTest"); !st.ok()) return st;
    PairTestSpec spec = convert::fromProto(*req);
    if (req->op() == pb::OP_UNSPECIFIED || !pb::Op_IsValid(req->op())) {
      return toGrpc(invalidArgument("op: must be write, read, send or write_imm"));
    }
    if (!pb::Mode_IsValid(req->mode()) || !pb::Transport_IsValid(req->transport())) {
      return toGrpc(invalidArgument("mode/transport: unknown value"));
    }
    if (req->iterations() == 0) return toGrpc(invalidArgument("iters: must be > 0"));
    Status st = validatePairTestSpec(spec, s_.options_.limits);
    if (!st.ok()) return toGrpc(st);
    for (const auto* sel : {&spec.initiator, &spec.target}) {
      const char* field = sel == &spec.initiator ? "initiator" : "target";
      auto w = s_.registry_.get(sel->worker);
      if (!w) {
        std::string known;
        for (const auto& k : s_.registry_.list()) {
          known += (known.empty() ? "" : ", ") + k.name + (k.online() ? "" : " (offline)");
        }
        return toGrpc(
            notFound(std::string(field) + ": unknown worker '" + sel->worker +
                         "' (known: " + (known.empty() ? "none" : known) + ")",
                     "start a worker with --name " + sel->worker + " or pick a known one"));
      }
      if (!w->online()) {
        return toGrpc(failedPrecondition(
            std::string(field) + ": worker '" + sel->worker + "' is offline (last heartbeat " +
                (w->last_heartbeat_ms > 0 ? formatRfc3339(w->last_heartbeat_ms) : "never") + ")",
            "restart the worker, or pick an online one (`gdrmesh workers`)"));
      }
    }
    auto ini = s_.registry_.get(spec.initiator.worker);
    auto tgt = s_.registry_.get(spec.target.worker);
    st = checkPairAgainstInventory(spec, *ini, *tgt);
    if (!st.ok()) return toGrpc(st);
    PairEndpoints ep;
    ep.initiator = ini;
    ep.target = tgt;
    ep.initiator_channel = s_.registry_.channel(spec.initiator.worker);
    ep.target_channel = s_.registry_.channel(spec.target.worker);
    std::promise<PairTestOutcome> promise;
    auto future = promise.get_future();
    // A marker in the store while the test runs: if the coordinator dies before the result is
    // stored, the next start records the test as interrupted instead of losing it.
    const int64_t started_ms = s_.clock_.unixMs();
    const std::string test_id = newTestId(started_ms);
    const TestResult started = startedResult(spec, ep, test_id, started_ms);
    Status marked = s_.store_.markTestStarted(started);
    if (!marked.ok()) {
      coordinatorServerLog(s_.clock_).error(
          "test " + test_id + " runs unmarked: " + marked.toString(), {{"test", test_id}});
    }
    runPairTest(spec, ep, s_.clock_, s_.pair_, test_id, newSeed(),
                [&promise](PairTestOutcome o) { promise.set_value(std::move(o)); });
    TestResult r = future.get().result;
    // Through the writer sweeps use: a refused result is spooled, held (listed) and stored once
    // the database takes writes again. Its marker goes when it is stored, not before: a
    // coordinator killed meanwhile stores it from the spool at its next start.
    ResultWriter::OnStored clear_marker;
    if (marked.ok()) {
      clear_marker = [&store = s_.store_, test_id](const Result<int64_t>& stored) {
        if (stored.ok()) (void)store.clearTestStarted(test_id);
      };
    }
    st = s_.storeResult(r, std::move(clear_marker));
    if (!st.ok()) resp->set_store_error(st.toString());
    convert::toProto(r, resp->mutable_result());
    return grpc::Status::OK;
  }

  grpc::Status ListResults(grpc::ServerContext* ctx, const pb::ListResultsRequest* req,
                           pb::ListResultsResponse* resp) override {
    if (auto st = allow(ctx, Access::kRead, "ListResults"); !st.ok()) return st;
    ResultQuery q;
    q.limit = req->all() ? 0 : req->limit() == 0 ? 50 : std::min<uint32_t>(req->limit(), 10000);
    q.worker = req->worker();
    q.run_id = req->run_id();
    if (req->status() != pb::TEST_STATUS_UNSPECIFIED) {
      if (!pb::TestStatus_IsValid(req->status())) {
        return toGrpc(invalidArgument("--status: unknown value " + std::to_string(req->status()),
                                      "use PASSED, FAILED, SKIPPED or ERROR"));
      }
      q.status = convert::fromProto(req->status());
    }
    auto page = s_.history_.results(q);
    if (!page.ok()) return toGrpc(page.status());
    // Results the store has not accepted yet (disk full) come first: they are the newest.
    uint64_t unstored = 0;
    const std::vector<TestResult> held = s_.unstored();
    std::set<std::string> held_ids;
    for (const auto& t : held) held_ids.insert(t.test_id);
    for (const auto& t : held) {
      const bool match =
          (q.worker.empty() || t.initiator.worker == q.worker || t.target.worker == q.worker) &&
          (!q.status || t.status == *q.status) && (q.run_id.empty() || t.run_id == q.run_id);
      if (!match) continue;
      ++unstored;
      if (q.limit == 0 || resp->results_size() < static_cast<int>(q.limit)) {
        convert::toProto(t, resp->add_results());
      }
    }
    uint64_t both = 0;  // stored between the two reads: listed once
    for (const auto& t : page->rows) {
      if (held_ids.count(t.test_id) != 0) {
        ++both;
        continue;
      }
      if (q.limit != 0 && resp->results_size() >= static_cast<int>(q.limit)) break;
      convert::toProto(t, resp->add_results());
    }
    resp->set_total(page->total + unstored - std::min(both, page->total));
    return grpc::Status::OK;
  }

  grpc::Status History(grpc::ServerContext* ctx, const pb::HistoryRequest* req,
                       pb::HistoryResponse* resp) override {
    if (auto st = allow(ctx, Access::kRead, "History"); !st.ok()) return st;
    auto q = convert::fromProto(*req);
    if (!q.ok()) return toGrpc(q.status());
    auto rows = s_.history_.history(*q);
    if (!rows.ok()) return toGrpc(rows.status());
    for (const auto& t : *rows) convert::toProto(t, resp->add_results());
    return grpc::Status::OK;
  }

  grpc::Status GetResult(grpc::ServerContext* ctx, const pb::GetResultRequest* req,
                         pb::TestResult* resp) override {
    if (auto st = allow(ctx, Access::kRead, "GetResult"); !st.ok()) return st;
    auto r = s_.history_.result(req->test_id());
    if (!r.ok()) {
      // A result the store has not accepted yet is still shown whole.
      for (const auto& t : s_.unstored()) {
        if (t.test_id == req->test_id()) {
          convert::toProto(t, resp);
          return grpc::Status::OK;
        }
      }
      return toGrpc(r.status());
    }
    convert::toProto(*r, resp);
    return grpc::Status::OK;
  }

  grpc::Status CompareSweeps(grpc::ServerContext* ctx, const pb::CompareSweepsRequest* req,
                             pb::CompareSweepsResponse* resp) override {
    if (auto st = allow(ctx, Access::kRead, "CompareSweeps"); !st.ok()) return st;
    const double tolerance =
        req->has_tolerance_pct() ? req->tolerance_pct() : HistoryQueries::kDefaultTolerancePct;
    auto c = s_.history_.compare(req->a(), req->b(), tolerance);
    if (!c.ok()) return toGrpc(c.status());
    convert::toProto(*c, resp);
    return grpc::Status::OK;
  }

  grpc::Status StartSweep(grpc::ServerContext* ctx, const pb::StartSweepRequest* req,
                          pb::StartSweepResponse* resp) override {
    if (auto st = allow(ctx, Access::kAdmin, "StartSweep"); !st.ok()) return st;
    auto spec = convert::fromProto(req->spec());
    if (!spec.ok()) return toGrpc(spec.status());
    if (spec->config_yaml.empty()) spec->config_yaml = s_.options_.config_yaml;
    auto p = s_.sweep_manager_->start(*spec);
    if (!p.ok()) return toGrpc(p.status());
    convert::toProto(*p, resp->mutable_progress());
    return grpc::Status::OK;
  }

  grpc::Status GetSweep(grpc::ServerContext* ctx, const pb::SweepIdRequest* req,
                        pb::SweepReport* resp) override {
    if (auto st = allow(ctx, Access::kRead, "GetSweep"); !st.ok()) return st;
    auto q = convert::fromProto(*req);
    if (!q.ok()) return toGrpc(q.status());
    auto r = s_.sweep_manager_->report(req->id(), *q);
    if (!r.ok()) return toGrpc(r.status());
    convert::toProto(*r, resp);
    return grpc::Status::OK;
  }

  grpc::Status FollowSweep(grpc::ServerContext* ctx, const pb::SweepIdRequest* req,
                           grpc::ServerWriter<pb::SweepProgress>* writer) override {
    if (auto st = allow(ctx, Access::kRead, "FollowSweep"); !st.ok()) return st;
    uint64_t version = ~uint64_t{0};
    for (;;) {
      // Wakes on every change of the sweep; at most every 2 s to notice a gone client.
      auto r = s_.sweep_manager_->waitForChange(req->id(), version, s_.clock_.after(2.0));
      if (!r.ok()) return toGrpc(r.status());
      if (ctx->IsCancelled()) return grpc::Status::CANCELLED;
      const bool changed = r->second != version;
      version = r->second;
      if (changed) {
        pb::SweepProgress p;
        convert::toProto(r->first, &p);
        if (!writer->Write(p)) return grpc::Status::OK;
      }
      // Until the report is stored: a follower sees the end (and may read the report) first,
      // then report_pending turn false.
      const SweepState state = r->first.state;
      if (state != SweepState::kRunning && state != SweepState::kQueued &&
          !r->first.report_pending) {
        return grpc::Status::OK;
      }
    }
  }

  grpc::Status CancelSweep(grpc::ServerContext* ctx, const pb::SweepIdRequest* req,
                           pb::SweepProgress* resp) override {
    if (auto st = allow(ctx, Access::kAdmin, "CancelSweep"); !st.ok()) return st;
    auto p = s_.sweep_manager_->cancel(req->id());
    if (!p.ok()) return toGrpc(p.status());
    convert::toProto(*p, resp);
    return grpc::Status::OK;
  }

  grpc::Status JudgeSweep(grpc::ServerContext* ctx, const pb::JudgeSweepRequest* req,
                          pb::SweepReport* resp) override {
    if (auto st = allow(ctx, Access::kAdmin, "JudgeSweep"); !st.ok()) return st;
    VerdictFilter filter{};
    VerdictPage page;
    if (auto st = convert::fromProto(req->page(), &filter, &page); !st.ok()) return toGrpc(st);
    auto r = s_.sweep_manager_->judge(req->id(), req->config_yaml(), req->baseline(), filter, page);
    if (!r.ok()) return toGrpc(r.status());
    convert::toProto(*r, resp);
    return grpc::Status::OK;
  }

  grpc::Status ListSweeps(grpc::ServerContext* ctx, const pb::ListSweepsRequest* req,
                          pb::ListSweepsResponse* resp) override {
    if (auto st = allow(ctx, Access::kRead, "ListSweeps"); !st.ok()) return st;
    auto l = s_.sweep_manager_->list(req->limit() == 0 ? 20 : req->limit());
    if (!l.ok()) return toGrpc(l.status());
    for (const auto& p : *l) convert::toProto(p, resp->add_sweeps());
    return grpc::Status::OK;
  }

  grpc::Status ListActions(grpc::ServerContext* ctx, const pb::ListActionsRequest* req,
                           pb::ListActionsResponse* resp) override {
    if (auto st = allow(ctx, Access::kRead, "ListActions"); !st.ok()) return st;
    if (s_.options_.action_store == nullptr) {
      return toGrpc(failedPrecondition("this coordinator keeps no node actions",
                                       "start it with a database (--db)"));
    }
    ActionQuery q;
    q.node = req->node();
    q.sweep_id = req->sweep_id();
    q.since_ms = req->since_ms();
    q.limit = req->limit();
    auto rows = s_.options_.action_store->listActions(q);
    if (!rows.ok()) return toGrpc(rows.status().withContext("reading the node actions"));
    for (const ActionRecord& r : *rows) {
      pb::NodeAction* a = resp->add_actions();
      a->set_id(r.id);
      a->set_recorded_ms(r.recorded_ms);
      a->set_sweep_id(r.sweep_id);
      a->set_node(r.node);
      a->set_action(r.action);
      a->set_outcome(r.outcome);
      a->set_actuator(r.actuator);
      a->set_reason(r.reason);
      a->set_detail(r.detail);
    }
    return grpc::Status::OK;
  }

  // `gdrmesh fabric discover --worker NAME`: the worker discovers, the coordinator stores the
  // snapshot and its findings (FabricRecorder). A worker without InfiniBand or the fabric
  // module answers a result, stored and returned as a finding; only a worker that cannot be
  // asked (unknown, offline, lost, past the deadline) is an error of the call.
  grpc::Status DiscoverFabric(grpc::ServerContext* ctx, const pb::FabricDiscoverRequest* req,
                              pb::FabricSnapshot* resp) override {
    if (auto st = allow(ctx, Access::kAdmin, "DiscoverFabric"); !st.ok()) return st;
    if (!s_.fabric_) return toGrpc(noFabricHistory());
    const std::string& name = req->worker();
    if (name.empty()) {
      return toGrpc(invalidArgument("worker: the worker to discover the fabric from is empty",
                                    "give a name as `gdrmesh workers` lists it (--worker NAME)"));
    }
    auto channel = s_.registry_.channel(name);
    if (!channel) {
      if (s_.registry_.get(name)) {
        return toGrpc(unavailable("worker " + name + " is offline",
                                  "start `gdrmesh worker` on it, or ask an online worker"));
      }
      return toGrpc(notFound("worker " + name + " is not registered",
                             "`gdrmesh workers` lists the registered workers"));
    }
    fabric::DiscoverRequest d;
    d.ca = req->ca();
    d.ca_port = static_cast<int>(req->ca_port());
    d.timeout_ms = req->timeout_ms() == 0 ? 500 : static_cast<int>(req->timeout_ms());
    d.read_lfts = !req->no_lfts();
    d.lldp = req->lldp();
    const double seconds = req->deadline_seconds() > 0 ? req->deadline_seconds() : 120;
    // `done` runs exactly once (a reply, the worker's loss or the deadline); the promise is
    // shared so that it outlives a set_value that wakes this thread.
    auto answer = std::make_shared<std::promise<Result<fabric::DiscoverOutcome>>>();
    auto outcome = answer->get_future();
    channel->discoverFabric(
        d, s_.clock_.after(seconds),
        [answer](Result<fabric::DiscoverOutcome> r) { answer->set_value(std::move(r)); });
    Result<fabric::DiscoverOutcome> r = outcome.get();
    if (!r.ok()) return toGrpc(r.status().withContext("fabric discovery on worker " + name));
    auto rec = s_.fabric_->record(name, *r);
    if (!rec.ok()) return toGrpc(rec.status().withContext("storing the fabric snapshot"));
    fabricToProto(*rec, true, resp);
    return grpc::Status::OK;
  }

  grpc::Status ListFabricSnapshots(grpc::ServerContext* ctx,
                                   const pb::ListFabricSnapshotsRequest* req,
                                   pb::ListFabricSnapshotsResponse* resp) override {
    if (auto st = allow(ctx, Access::kRead, "ListFabricSnapshots"); !st.ok()) return st;
    if (s_.options_.fabric_history == nullptr) return toGrpc(noFabricHistory());
    FabricSnapshotQuery q;
    q.limit = req->limit() == 0 ? 20 : req->limit();
    q.worker = req->worker();
    auto rows = s_.options_.fabric_history->listFabricSnapshots(q);
    if (!rows.ok()) return toGrpc(rows.status().withContext("reading the fabric history"));
    for (const FabricSnapshotRecord& r : *rows) {
      FabricRecord rec;
      rec.snapshot = r;
      fabricToProto(rec, false, resp->add_snapshots());
    }
    return grpc::Status::OK;
  }

  grpc::Status GetFabricSnapshot(grpc::ServerContext* ctx, const pb::GetFabricSnapshotRequest* req,
                                 pb::FabricSnapshot* resp) override {
    if (auto st = allow(ctx, Access::kRead, "GetFabricSnapshot"); !st.ok()) return st;
    if (!s_.fabric_) return toGrpc(noFabricHistory());
    auto rec = s_.fabric_->resolve(req->ref());
    if (!rec.ok()) return toGrpc(rec.status());
    fabricToProto(*rec, true, resp);
    return grpc::Status::OK;
  }

  grpc::Status ListSchedules(grpc::ServerContext* ctx, const pb::ListSchedulesRequest*,
                             pb::ListSchedulesResponse* resp) override {
    if (auto st = allow(ctx, Access::kRead, "ListSchedules"); !st.ok()) return st;
    for (const auto& st : s_.scheduler_->list()) {
      auto* o = resp->add_schedules();
      o->set_name(st.name);
      o->set_cron(st.cron);
      o->set_timezone(st.timezone.empty() ? "UTC" : st.timezone);
      o->set_next_run_ms(st.next_run_ms);
      o->set_missed(static_cast<uint32_t>(st.missed));
      o->set_catch_up_due_ms(st.catch_up_due_ms);
      if (st.last_run) {
        o->set_last_run_ms(st.last_run->due_ms);
        o->set_last_sweep_id(st.last_run->sweep_id);
        o->set_last_state(st.last_run->state);
        o->set_last_detail(st.last_run->detail);
        if (!st.last_run->sweep_id.empty()) {
          // A started run is followed to its sweep's end.
          auto p = s_.sweep_manager_->progress(st.last_run->sweep_id);
          if (p.ok()) {
            o->set_last_sweep_state(toString(p->state));
            o->set_last_sweep_verdict(p->verdict);
            if (!p->reason.empty() && p->state != SweepState::kRunning &&
                p->state != SweepState::kQueued) {
              o->set_last_detail(o->last_detail().empty() ? p->reason
                                                          : o->last_detail() + "; " + p->reason);
            }
          }
        }
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status RemoveWorker(grpc::ServerContext* ctx, const pb::RemoveWorkerRequest* req,
                            pb::RemoveWorkerResponse* resp) override {
    if (auto st = allow(ctx, Access::kAdmin, "RemoveWorker"); !st.ok()) return st;
    if (req->name().empty()) {
      return toGrpc(invalidArgument("name: the worker to remove is empty",
                                    "give a name as `gdrmesh workers` lists it"));
    }
    auto online = s_.removeWorker(req->name(), req->force(), requester(ctx));
    if (!online.ok()) return toGrpc(online.status());
    resp->set_name(req->name());
    resp->set_was_online(*online);
    return grpc::Status::OK;
  }

 private:
  static Status noFabricHistory() {
    return failedPrecondition("this coordinator keeps no fabric history",
                              "start it with a database (--db)");
  }
  static void fabricToProto(const FabricRecord& rec, bool with_json, pb::FabricSnapshot* out) {
    const FabricSnapshotRecord& r = rec.snapshot;
    out->set_id(r.id);
    out->set_taken_ms(r.taken_ms);
    out->set_worker(r.worker);
    out->set_source(r.source);
    out->set_outcome(r.outcome);
    out->set_detail(r.detail);
    out->set_switches(r.switches);
    out->set_hosts(r.hosts);
    out->set_links(r.links);
    if (with_json) out->set_snapshot_json(r.snapshot_json);
    out->set_previous_id(rec.previous_id);
    for (const FabricFindingRecord& x : rec.findings) {
      pb::FabricFinding* f = out->add_findings();
      f->set_kind(x.kind);
      f->set_switch_name(x.switch_name);
      f->set_port(x.port);
      f->set_message(x.message);
    }
  }

  // Who made a call, for the log: "admin 'alice' from ipv4:..." (plaintext: the address only).
  std::string requester(grpc::ServerContext* ctx) {
    if (!s_.options_.tls) return "an unauthenticated client (--insecure) from " + ctx->peer();
    auto peer = peerIdentity(ctx->auth_context().get(), s_.options_.revoked.get());
    return (peer.ok() ? peer->describe() : std::string("an unidentified peer")) + " from " +
           ctx->peer();
  }

  // Every RPC starts here. With TLS the caller's role comes from its verified certificate:
  // reads need a reader or admin, anything that changes state an admin (security/policy.h).
  // Changes are logged with who asked. Plaintext (--insecure): everyone may do everything.
  grpc::Status allow(grpc::ServerContext* ctx, Access access, const char* rpc) {
    if (!s_.options_.tls) return grpc::Status::OK;
    auto peer = peerIdentity(ctx->auth_context().get(), s_.options_.revoked.get());
    if (!peer.ok()) {
      coordinatorServerLog(s_.clock_).warn(
          std::string(rpc) + " from " + ctx->peer() + " refused: " + peer.status().message(),
          {{"rpc", rpc}, {"peer", ctx->peer()}});
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          std::string(rpc) + ": " + peer.status().message() +
                              " (fix: " + peer.status().fix() + ")");
    }
    Status st = authorizeControl(*peer, access, rpc);
    if (!st.ok() || access == Access::kAdmin) {
      const std::string line = std::string(rpc) + " by " + peer->describe() + " from " +
                               ctx->peer() + (st.ok() ? "" : ": refused (permission denied)");
      const LogFields fields = {{"rpc", rpc}, {"by", peer->describe()}, {"peer", ctx->peer()}};
      if (st.ok()) {
        coordinatorServerLog(s_.clock_).info(line, fields);
      } else {
        coordinatorServerLog(s_.clock_).warn(line, fields);
      }
    }
    return toGrpc(st);
  }

  CoordinatorServer& s_;
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
  SweepManagerOptions so = options_.sweeps;
  so.executor.pair = pair_;
  sweep_manager_ = std::make_unique<SweepManager>(registry_, clock_, sweep_store_, store_, writer_,
                                                  codec_, options_.parse_config, so);
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
  // Workers known from earlier runs are listed as offline until they connect again.
  auto known = store_.listWorkers();
  if (known.ok()) {
    for (const auto& w : *known) {
      pb::Inventory inv;
      (void)google::protobuf::util::JsonStringToMessage(w.inventory_json, &inv);
      WorkerStatus st;
      st.name = w.name;
      st.inventory = convert::fromProto(inv);
      st.last_heartbeat_ms = w.last_seen_ms;
      registry_.addKnown(std::move(st));
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
  worker_service_ = std::make_unique<WorkerServiceImpl>(*this);
  control_service_ = std::make_unique<ControlServiceImpl>(*this);
  if (!options_.tls) {
    Status st = checkPlaintextListen(options_.listen, options_.insecure_allow_remote);
    if (!st.ok()) return st;
  }
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
  builder.RegisterService(worker_service_.get());
  builder.RegisterService(control_service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) {
    gate_->stop();
    return internalError("the gRPC server did not start on " + options_.listen);
  }
  gate_->start();
  // The first tick's deadline is taken here: a ManualClock moved once start() returns ends it.
  const Clock::TimePoint first_tick =
      clock_.now() + std::chrono::milliseconds(options_.heartbeat_interval_ms);
  monitor_ = std::thread([this, first_tick] { monitor(first_tick); });
  // Sweeps a previous coordinator left running resume once workers can reconnect.
  sweep_manager_->resumeInterrupted();
  // Runs missed while the coordinator was down are recorded as missed, then schedules arm.
  scheduler_->start();
  return *port;
}

void CoordinatorServer::shutdown() {
  if (stopping_.exchange(true)) return;
  {
    MutexLock lock(mu_);
    cv_.notify_all();
  }
  if (monitor_.joinable()) monitor_.join();
  scheduler_->stop();
  sweep_manager_->shutdown();
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
