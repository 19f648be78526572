// The ControlService's sweeps: start, follow, cancel, judge, reports and lists.
#include <grpcpp/grpcpp.h>

#include "convert.h"
#include "coordinator/service/control_service.h"
#include "coordinator/service/service_common.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"

namespace gdrmesh {

namespace pb = ::gdrmesh::v1;

grpc::Status CoordinatorServer::ControlServiceImpl::StartSweep(grpc::ServerContext* ctx,
                                                               const pb::StartSweepRequest* req,
                                                               pb::StartSweepResponse* resp) {
  if (auto st = allow(ctx, Access::kAdmin, "StartSweep"); !st.ok()) return st;
  auto spec = convert::fromProto(req->spec());
  if (!spec.ok()) return toGrpc(spec.status());
  if (spec->config_yaml.empty()) spec->config_yaml = s_.options_.config_yaml;
  auto p = s_.runs_->sweeps().start(*spec);
  if (!p.ok()) return toGrpc(p.status());
  convert::toProto(*p, resp->mutable_progress());
  return grpc::Status::OK;
}

grpc::Status CoordinatorServer::ControlServiceImpl::GetSweep(grpc::ServerContext* ctx,
                                                             const pb::SweepIdRequest* req,
                                                             pb::SweepReport* resp) {
  if (auto st = allow(ctx, Access::kRead, "GetSweep"); !st.ok()) return st;
  auto q = convert::fromProto(*req);
  if (!q.ok()) return toGrpc(q.status());
  auto r = s_.runs_->sweeps().report(req->id(), *q);
  if (!r.ok()) return toGrpc(r.status());
  convert::toProto(*r, resp);
  return grpc::Status::OK;
}

grpc::Status CoordinatorServer::ControlServiceImpl::FollowSweep(
    grpc::ServerContext* ctx, const pb::SweepIdRequest* req,
    grpc::ServerWriter<pb::SweepProgress>* writer) {
  if (auto st = allow(ctx, Access::kRead, "FollowSweep"); !st.ok()) return st;
  uint64_t version = ~uint64_t{0};
  for (;;) {
    // Wakes on every change of the sweep; at most every 2 s to notice a gone client.
    auto r = s_.runs_->sweeps().waitForChange(req->id(), version, s_.clock_.after(2.0));
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
    if (state != SweepState::kRunning && state != SweepState::kQueued && !r->first.report_pending) {
      return grpc::Status::OK;
    }
  }
}

grpc::Status CoordinatorServer::ControlServiceImpl::CancelSweep(grpc::ServerContext* ctx,
                                                                const pb::SweepIdRequest* req,
                                                                pb::SweepProgress* resp) {
  if (auto st = allow(ctx, Access::kAdmin, "CancelSweep"); !st.ok()) return st;
  auto p = s_.runs_->sweeps().cancel(req->id());
  if (!p.ok()) return toGrpc(p.status());
  convert::toProto(*p, resp);
  return grpc::Status::OK;
}

grpc::Status CoordinatorServer::ControlServiceImpl::JudgeSweep(grpc::ServerContext* ctx,
                                                               const pb::JudgeSweepRequest* req,
                                                               pb::SweepReport* resp) {
  if (auto st = allow(ctx, Access::kAdmin, "JudgeSweep"); !st.ok()) return st;
  VerdictFilter filter{};
  VerdictPage page;
  if (auto st = convert::fromProto(req->page(), &filter, &page); !st.ok()) return toGrpc(st);
  auto r = s_.runs_->sweeps().judge(req->id(), req->config_yaml(), req->baseline(), filter, page);
  if (!r.ok()) return toGrpc(r.status());
  convert::toProto(*r, resp);
  return grpc::Status::OK;
}

grpc::Status CoordinatorServer::ControlServiceImpl::ListSweeps(grpc::ServerContext* ctx,
                                                               const pb::ListSweepsRequest* req,
                                                               pb::ListSweepsResponse* resp) {
  if (auto st = allow(ctx, Access::kRead, "ListSweeps"); !st.ok()) return st;
  auto l = s_.runs_->sweeps().list(req->limit() == 0 ? 20 : req->limit());
  if (!l.ok()) return toGrpc(l.status());
  for (const auto& p : *l) convert::toProto(p, resp->add_sweeps());
  return grpc::Status::OK;
}

}  // namespace gdrmesh
