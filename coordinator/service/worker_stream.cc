// One worker's stream (WorkerService.Connect) on gRPC's callback API: registration (checked
// against its certificate, the registration limits and the cluster config), heartbeats, and the
// replies to the coordinator's commands, which its WorkerLink routes. Private to
// coordinator/service/.
#include "coordinator/service/worker_stream.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/limits.h"
#include "common/sync/mutex.h"
#include "convert.h"
#include "coordinator/service/service_common.h"
#include "coordinator/service/worker_link.h"
#include "security/grpc_tls.h"

namespace gdrmesh {
namespace {

namespace pb = ::gdrmesh::v1;

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
    std::string identity;
    if (Status st = authenticate(reg, &identity); !st.ok()) return toGrpc(st);
    name_ = reg.name();
    auto link = makeLink();
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
    if (!w.simulated) remember(w, reg, identity);
    greet();
    return grpc::Status::OK;
  }

  // With TLS: the worker's certificate (not revoked) must allow the name it registers.
  // `identity` says what vouched for it, for the log.
  Status authenticate(const pb::Register& reg, std::string* identity) {
    *identity = "no certificate (--insecure)";
    if (!tls_) return {};
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
      coordinatorServerLog(clock_).warn(
          "registration of '" + reg.name() + "' from " + ctx_->peer() + " refused: " + st.message(),
          {{"worker", reg.name()}, {"peer", ctx_->peer()}});
      return st;
    }
    *identity = "certificate " + cert->identity.describe();
    cert_ = *cert;
    return {};
  }

  // The worker's link: commands written to this stream (held until the Registered reply is
  // queued), and a failure that cancels it.
  std::shared_ptr<WorkerLink> makeLink() {
    std::shared_ptr<Handle> h = handle_;
    grpc::CallbackServerContext* ctx = ctx_;
    return std::make_shared<WorkerLink>(
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
  }

  // A real worker's registration, stored (listed offline after a restart) and logged.
  void remember(const WorkerStatus& w, const pb::Register& reg, const std::string& identity) {
    WorkerRecord rec;
    rec.name = name_;
    rec.hostname = reg.inventory().hostname();
    rec.inventory_json = convert::storedInventoryJson(convert::fromProto(reg.inventory()));
    rec.first_seen_ms = w.connected_ms;
    rec.last_seen_ms = w.connected_ms;
    Status st = store_.upsertWorker(rec);
    if (!st.ok()) coordinatorServerLog(clock_).error(st.toString(), {{"worker", name_}});
    coordinatorServerLog(clock_).info(
        "worker " + name_ + " registered from " + w.peer + " (" + identity + ")",
        {{"worker", name_}, {"peer", w.peer}});
  }

  // The Registered reply, then the commands that waited for it, in order.
  void greet() {
    std::shared_ptr<Handle> h = handle_;
    pb::CoordinatorMessage hello;
    hello.mutable_registered()->set_worker_id(name_);
    hello.mutable_registered()->set_heartbeat_interval_ms(static_cast<uint32_t>(heartbeat_ms_));
    MutexLock lock(h->mu);
    write(std::move(hello));
    h->greeted = true;
    for (auto& m : h->early) write(std::move(m));
    h->early.clear();
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

}  // namespace

grpc::ServerBidiReactor<pb::WorkerMessage, pb::CoordinatorMessage>* newWorkerStream(
    const WorkerStreamDeps& deps, grpc::CallbackServerContext* ctx) {
  return new WorkerStream(deps.registry, deps.store, deps.clock, deps.heartbeat_ms, deps.tls,
                          deps.revoked, deps.config, deps.register_deadline_ms, ctx);
}

}  // namespace gdrmesh
