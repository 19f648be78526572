// The ControlService's front door (who may call what) and its worker and action calls.
#include "coordinator/service/control_service.h"

#include <grpcpp/grpcpp.h>

#include <string>

#include "convert.h"
#include "coordinator/service/history_convert.h"
#include "coordinator/service/service_common.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"
#include "security/grpc_tls.h"

namespace gdrmesh {

namespace pb = ::gdrmesh::v1;

// Who made a call, for the log: "admin 'alice' from ipv4:..." (plaintext: the address only).
std::string CoordinatorServer::ControlServiceImpl::requester(grpc::ServerContext* ctx) {
  if (!s_.options_.tls) return "an unauthenticated client (--insecure) from " + ctx->peer();
  auto peer = peerIdentity(ctx->auth_context().get(), s_.options_.revoked.get());
  return (peer.ok() ? peer->describe() : std::string("an unidentified peer")) + " from " +
         ctx->peer();
}

// Every RPC starts here. With TLS the caller's role comes from its verified certificate:
// reads need a reader or admin, anything that changes state an admin (security/policy.h).
// Changes are logged with who asked. Plaintext (--insecure): everyone may do everything.
grpc::Status CoordinatorServer::ControlServiceImpl::allow(grpc::ServerContext* ctx, Access access,
                                                          const char* rpc) {
  if (!s_.options_.tls) return grpc::Status::OK;
  auto peer = peerIdentity(ctx->auth_context().get(), s_.options_.revoked.get());
  if (!peer.ok()) {
    coordinatorServerLog(s_.clock_).warn(
        std::string(rpc) + " from " + ctx->peer() + " refused: " + peer.status().message(),
        {{"rpc", rpc}, {"peer", ctx->peer()}});
    return grpc::Status(
        grpc::StatusCode::UNAUTHENTICATED,
        std::string(rpc) + ": " + peer.status().message() + " (fix: " + peer.status().fix() + ")");
  }
  Status st = authorizeControl(*peer, access, rpc);
  if (!st.ok() || access == Access::kAdmin) {
    const std::string line = std::string(rpc) + " by " + peer->describe() + " from " + ctx->peer() +
                             (st.ok() ? "" : ": refused (permission denied)");
    const LogFields fields = {{"rpc", rpc}, {"by", peer->describe()}, {"peer", ctx->peer()}};
    if (st.ok()) {
      coordinatorServerLog(s_.clock_).info(line, fields);
    } else {
      coordinatorServerLog(s_.clock_).warn(line, fields);
    }
  }
  return toGrpc(st);
}

grpc::Status CoordinatorServer::ControlServiceImpl::ListWorkers(grpc::ServerContext* ctx,
                                                                const pb::ListWorkersRequest*,
                                                                pb::ListWorkersResponse* resp) {
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

grpc::Status CoordinatorServer::ControlServiceImpl::RemoveWorker(grpc::ServerContext* ctx,
                                                                 const pb::RemoveWorkerRequest* req,
                                                                 pb::RemoveWorkerResponse* resp) {
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

grpc::Status CoordinatorServer::ControlServiceImpl::ListActions(grpc::ServerContext* ctx,
                                                                const pb::ListActionsRequest* req,
                                                                pb::ListActionsResponse* resp) {
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
    convert::toProto(r, resp->add_actions());
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorServer::ControlServiceImpl::ListSchedules(grpc::ServerContext* ctx,
                                                                  const pb::ListSchedulesRequest*,
                                                                  pb::ListSchedulesResponse* resp) {
  if (auto st = allow(ctx, Access::kRead, "ListSchedules"); !st.ok()) return st;
  for (const auto& st : s_.scheduler_->list()) {
    ScheduleSummary o;
    o.name = st.name;
    o.cron = st.cron;
    o.timezone = st.timezone.empty() ? "UTC" : st.timezone;
    o.next_run_ms = st.next_run_ms;
    o.missed = static_cast<uint32_t>(st.missed);
    o.catch_up_due_ms = st.catch_up_due_ms;
    if (st.last_run) {
      o.last_run_ms = st.last_run->due_ms;
      o.last_sweep_id = st.last_run->sweep_id;
      o.last_state = st.last_run->state;
      o.last_detail = st.last_run->detail;
      if (!st.last_run->sweep_id.empty()) {
        // A started run is followed to its sweep's end.
        auto p = s_.runs_->sweeps().progress(st.last_run->sweep_id);
        if (p.ok()) {
          o.last_sweep_state = toString(p->state);
          o.last_sweep_verdict = p->verdict;
          if (!p->reason.empty() && p->state != SweepState::kRunning &&
              p->state != SweepState::kQueued) {
            o.last_detail = o.last_detail.empty() ? p->reason : o.last_detail + "; " + p->reason;
          }
        }
      }
    }
    convert::toProto(o, resp->add_schedules());
  }
  return grpc::Status::OK;
}

}  // namespace gdrmesh
