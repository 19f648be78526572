// The ControlService's fabric calls: discovery on a worker and the stored snapshots.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <future>
#include <memory>
#include <vector>

#include "convert.h"
#include "coordinator/orchestrator/lldp_survey.h"
#include "coordinator/service/control_service.h"
#include "coordinator/service/service_common.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"

namespace gdrmesh {

namespace pb = ::gdrmesh::v1;

Status CoordinatorServer::ControlServiceImpl::noFabricHistory() {
  return failedPrecondition("this coordinator keeps no fabric history",
                            "start it with a database (--db)");
}

void CoordinatorServer::ControlServiceImpl::fabricToProto(const FabricRecord& rec, bool with_json,
                                                          pb::FabricSnapshot* out) {
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

// `gdrmesh fabric discover --worker NAME`: the worker discovers, the coordinator stores the
// snapshot and its findings (FabricRecorder). A worker without InfiniBand or the fabric
// module answers a result, stored and returned as a finding; only a worker that cannot be
// asked (unknown, offline, lost, past the deadline) is an error of the call.
grpc::Status CoordinatorServer::ControlServiceImpl::DiscoverFabric(
    grpc::ServerContext* ctx, const pb::FabricDiscoverRequest* req, pb::FabricSnapshot* resp) {
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
  channel->discoverFabric(d, s_.clock_.after(seconds), [answer](Result<fabric::DiscoverOutcome> r) {
    answer->set_value(std::move(r));
  });
  Result<fabric::DiscoverOutcome> r = outcome.get();
  if (!r.ok()) return toGrpc(r.status().withContext("fabric discovery on worker " + name));
  auto rec = s_.fabric_->record(name, *r);
  if (!rec.ok()) return toGrpc(rec.status().withContext("storing the fabric snapshot"));
  // A newer InfiniBand snapshot replaces the coordinator's fabric (fabric_source.h): tests that
  // start from now on, and the rounds after now, are traced through its tables.
  if (s_.options_.sweeps.fabric_source && rec->snapshot.outcome == "ok" && !r->lldp &&
      s_.options_.sweeps.fabric_source->adopt(r->fabric, "@" + std::to_string(rec->snapshot.id))) {
    coordinatorServerLog(s_.clock_).info(
        "fabric: snapshot @" + std::to_string(rec->snapshot.id) + " from " + name +
            " replaces the coordinator's fabric: tests from now on are traced through its "
            "tables",
        {{"snapshot", rec->snapshot.id}});
  }
  fabricToProto(*rec, true, resp);
  return grpc::Status::OK;
}

grpc::Status CoordinatorServer::ControlServiceImpl::DiscoverLldpAll(
    grpc::ServerContext* ctx, const pb::FabricLldpAllRequest* req,
    pb::FabricLldpAllResponse* resp) {
  if (auto st = allow(ctx, Access::kAdmin, "DiscoverLldpAll"); !st.ok()) return st;
  if (!s_.fabric_) return toGrpc(noFabricHistory());
  if (req->deadline_seconds() < 0 || req->deadline_seconds() > 3600) {
    return toGrpc(invalidArgument(
        "deadline_seconds: " + std::to_string(req->deadline_seconds()) + " is out of range",
        "give 1 to 3600 seconds (--deadline), or 0 for the default 120"));
  }
  LldpSurveyOptions o;
  o.ca = req->ca();
  o.deadline_seconds = req->deadline_seconds() > 0 ? req->deadline_seconds() : 120;
  o.max_concurrency = req->max_concurrency();
  const Clock::TimePoint t0 = s_.clock_.now();
  const std::vector<LldpWorkerReply> replies = surveyLldp(s_.registry_, s_.clock_, o);
  auto all = s_.fabric_->recordLldpAll(replies);
  if (!all.ok()) return toGrpc(all.status().withContext("storing the LLDP snapshot"));
  resp->set_seconds(std::chrono::duration<double>(s_.clock_.now() - t0).count());
  fabricToProto(all->record, true, resp->mutable_snapshot());
  for (const LldpWorkerLine& l : all->workers) {
    pb::FabricLldpWorker* w = resp->add_workers();
    w->set_worker(l.worker);
    w->set_outcome(l.outcome);
    w->set_nics(static_cast<uint32_t>(l.nics));
    w->set_with_neighbour(static_cast<uint32_t>(l.with_neighbour));
    w->set_detail(l.detail);
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorServer::ControlServiceImpl::ListFabricSnapshots(
    grpc::ServerContext* ctx, const pb::ListFabricSnapshotsRequest* req,
    pb::ListFabricSnapshotsResponse* resp) {
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

grpc::Status CoordinatorServer::ControlServiceImpl::GetFabricSnapshot(
    grpc::ServerContext* ctx, const pb::GetFabricSnapshotRequest* req, pb::FabricSnapshot* resp) {
  if (auto st = allow(ctx, Access::kRead, "GetFabricSnapshot"); !st.ok()) return st;
  if (!s_.fabric_) return toGrpc(noFabricHistory());
  auto rec = s_.fabric_->resolve(req->ref());
  if (!rec.ok()) return toGrpc(rec.status());
  fabricToProto(*rec, true, resp);
  return grpc::Status::OK;
}

}  // namespace gdrmesh
