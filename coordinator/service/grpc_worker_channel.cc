#include "coordinator/service/grpc_worker_channel.h"

#include <nlohmann/json.hpp>

#include "convert.h"

namespace gdrmesh {
namespace {

namespace pb = ::gdrmesh::v1;

// A reply of the wrong kind is the worker's bug, reported as such.
Status wrongReply(const std::string& worker, const char* want) {
  return internalError("worker " + worker + " answered " + want +
                       " with another reply kind (protocol mismatch; upgrade the worker)");
}

void toPrepare(const PrepareCommand& c, pb::PrepareRequest* p) {
  convert::toProto(c.side, p->mutable_spec());
  if (c.peer) convert::toProto(*c.peer, p->mutable_peer());
  if (c.arm) convert::toProto(*c.arm, p->mutable_arm());
}

void toFinish(const FinishCommand& c, pb::FinishRequest* f) {
  f->set_test_id(c.test_id);
  f->set_verify(c.verify);
  f->set_verify_length(c.verify_length);
  f->set_timeout_seconds(c.timeout_seconds);
}

}  // namespace

void GrpcWorkerChannel::prepare(const PrepareCommand& c, Deadline deadline,
                                Done<EndpointDesc> done) {
  pb::CoordinatorCommand cmd;
  toPrepare(c, cmd.mutable_prepare());
  std::string w = worker();
  link_->call(std::move(cmd), deadline, [done = std::move(done), w](Result<pb::CommandReply> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_prepare()) return done(wrongReply(w, "prepare"));
    done(convert::fromProto(r->prepare().local()));
  });
}

void GrpcWorkerChannel::prepareFinishing(const PrepareCommand& c, Deadline deadline,
                                         Done<EndpointDesc> done, Deadline finish_deadline,
                                         Done<SideOutcome> finished) {
  std::string w = worker();
  // The finish's reply id is registered before the prepare goes out: the worker may answer it
  // as soon as the initiator's run ends.
  const uint64_t finish_id = link_->expect(
      finish_deadline, [finished = std::move(finished), w](Result<pb::CommandReply> r) {
        if (!r.ok()) return finished(r.status());
        if (!r->has_finish()) return finished(wrongReply(w, "finish"));
        finished(convert::fromProto(r->finish()));
      });
  if (finish_id == 0) return done(unavailable("worker lost: " + w));
  pb::CoordinatorCommand cmd;
  auto* p = cmd.mutable_prepare();
  toPrepare(c, p);
  if (c.finish) toFinish(*c.finish, p->mutable_finish());
  p->set_finish_request_id(finish_id);
  std::weak_ptr<WorkerLink> weak = link_;
  link_->call(std::move(cmd), deadline,
              [done = std::move(done), w, weak, finish_id](Result<pb::CommandReply> r) {
                Status st = r.status();
                if (r.ok() && !r->has_prepare()) st = wrongReply(w, "prepare");
                if (!st.ok()) {
                  done(st);
                  // No finish follows a failed prepare: its callback hears the same error.
                  if (auto link = weak.lock()) link->settle(finish_id, st);
                  return;
                }
                done(convert::fromProto(r->prepare().local()));
              });
}

void GrpcWorkerChannel::connect(const std::string& test_id, const EndpointDesc& peer,
                                Deadline deadline, Done<SideOutcome> done) {
  pb::CoordinatorCommand cmd;
  cmd.mutable_connect()->set_test_id(test_id);
  convert::toProto(peer, cmd.mutable_connect()->mutable_peer());
  std::string w = worker();
  link_->call(std::move(cmd), deadline, [done = std::move(done), w](Result<pb::CommandReply> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_connect()) return done(wrongReply(w, "connect"));
    SideOutcome o;
    o.path_mtu = r->connect().path_mtu();
    done(o);
  });
}

void GrpcWorkerChannel::run(const std::string& test_id, const RunSpec& spec, Deadline deadline,
                            Done<SideOutcome> done) {
  pb::CoordinatorCommand cmd;
  cmd.mutable_run()->set_test_id(test_id);
  convert::toProto(spec, cmd.mutable_run()->mutable_spec());
  std::string w = worker();
  link_->call(std::move(cmd), deadline, [done = std::move(done), w](Result<pb::CommandReply> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_run()) return done(wrongReply(w, "run"));
    SideOutcome o;
    o.has_measurement = true;
    o.measurement = convert::fromProto(r->run().measurement());
    o.staging_seconds = o.measurement.staging_seconds;
    done(o);
  });
}

void GrpcWorkerChannel::verify(const std::string& test_id, uint64_t length, uint64_t reveal_seed,
                               Deadline deadline, Done<SideOutcome> done) {
  pb::CoordinatorCommand cmd;
  cmd.mutable_verify()->set_test_id(test_id);
  cmd.mutable_verify()->set_length(length);
  cmd.mutable_verify()->set_seed(reveal_seed);
  std::string w = worker();
  link_->call(std::move(cmd), deadline, [done = std::move(done), w](Result<pb::CommandReply> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_verify()) return done(wrongReply(w, "verify"));
    SideOutcome o;
    o.verified = true;
    o.integrity = convert::fromProto(r->verify().integrity());
    o.staging_seconds = r->verify().staging_seconds();
    done(o);
  });
}

void GrpcWorkerChannel::release(const std::string& test_id, const std::string& reason,
                                Deadline deadline, Done<bool> done) {
  pb::CoordinatorCommand cmd;
  cmd.mutable_release()->set_test_id(test_id);
  cmd.mutable_release()->set_reason(reason);
  link_->call(std::move(cmd), deadline,
              [done = std::move(done)](const Result<pb::CommandReply>& r) {
                if (!r.ok()) return done(r.status());
                done(true);
              });
}

void GrpcWorkerChannel::start(const StartCommand& c, Deadline deadline, Done<SideOutcome> done) {
  pb::CoordinatorCommand cmd;
  auto* s = cmd.mutable_start();
  s->set_test_id(c.test_id);
  convert::toProto(c.peer, s->mutable_peer());
  convert::toProto(c.run, s->mutable_run());
  s->set_verify(c.verify);
  s->set_verify_length(c.verify_length);
  std::string w = worker();
  link_->call(std::move(cmd), deadline, [done = std::move(done), w](Result<pb::CommandReply> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_start()) return done(wrongReply(w, "start"));
    done(convert::fromProto(r->start()));
  });
}

void GrpcWorkerChannel::finish(const FinishCommand& c, Deadline deadline, Done<SideOutcome> done) {
  pb::CoordinatorCommand cmd;
  toFinish(c, cmd.mutable_finish());
  std::string w = worker();
  link_->call(std::move(cmd), deadline, [done = std::move(done), w](Result<pb::CommandReply> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_finish()) return done(wrongReply(w, "finish"));
    done(convert::fromProto(r->finish()));
  });
}

void GrpcWorkerChannel::discoverFabric(const fabric::DiscoverRequest& request, Deadline deadline,
                                       Done<fabric::DiscoverOutcome> done) {
  pb::CoordinatorCommand cmd;
  auto* d = cmd.mutable_discover_fabric();
  d->set_ca(request.ca);
  d->set_ca_port(static_cast<uint32_t>(request.ca_port));
  d->set_timeout_ms(static_cast<uint32_t>(request.timeout_ms));
  d->set_no_lfts(!request.read_lfts);
  d->set_lldp(request.lldp);
  const bool lldp = request.lldp;
  std::string w = worker();
  link_->call(
      std::move(cmd), deadline, [done = std::move(done), w, lldp](Result<pb::CommandReply> r) {
        if (!r.ok()) return done(r.status());
        if (!r->has_discover_fabric()) return done(wrongReply(w, "discover_fabric"));
        fabric::DiscoverOutcome o;
        o.asked_lldp = lldp;
        o.status = convert::fromProto(r->discover_fabric().discovery());
        if (o.status.ok() && lldp) {
          // The worker's LLDP answer (docs/json.md), read once here; any shape is a result.
          const auto j = nlohmann::json::parse(r->discover_fabric().lldp_json(), nullptr,
                                               /*allow_exceptions=*/false);
          auto h = j.is_discarded() ? Result<fabric::LldpHost>(invalidArgument("not JSON"))
                                    : fabric::lldpHostFromJson(j);
          if (!h.ok()) {
            o.status = h.status().withContext("worker " + w +
                                              " answered an LLDP answer gdrmesh cannot read "
                                              "(protocol mismatch; upgrade the worker)");
          } else {
            o.lldp = std::move(h).value();
          }
        } else if (o.status.ok()) {
          // The snapshot's JSON (docs/fabric.md) is read once, here at the edge; a worker's text
          // of any shape is an error, never an exception on this thread.
          auto f = fabric::fabricFromJsonText(r->discover_fabric().snapshot_json(),
                                              "the snapshot of worker " + w);
          if (!f.ok()) {
            o.status = f.status().withContext("worker " + w +
                                              " answered a snapshot gdrmesh cannot "
                                              "read (protocol mismatch; upgrade the worker)");
          } else {
            o.fabric = std::move(f).value();
          }
        }
        done(std::move(o));
      });
}

void GrpcWorkerChannel::readPortCounters(const fabric::CounterReadRequest& request,
                                         Deadline deadline, Done<fabric::CounterReadOutcome> done) {
  pb::CoordinatorCommand cmd;
  convert::toProto(request, cmd.mutable_read_port_counters());
  std::string w = worker();
  link_->call(std::move(cmd), deadline, [done = std::move(done), w](Result<pb::CommandReply> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_read_port_counters()) return done(wrongReply(w, "read_port_counters"));
    done(convert::fromProto(r->read_port_counters()));
  });
}

}  // namespace gdrmesh
