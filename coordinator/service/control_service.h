// The ControlService (clients: the CLI, scripts): each call converts its request to domain
// types once, asks the coordinator's logic (orchestrator/), and converts the answer back. The
// calls are grouped by what they serve: control_service.cc (who may call, workers, actions,
// schedules), control_results.cc (`gdrmesh test` and the history queries), control_sweeps.cc,
// control_fabric.cc. Private to coordinator/service/.
#pragma once

#include <string>

#include "coordinator/service/coordinator_server.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"

namespace gdrmesh {

class CoordinatorServer::ControlServiceImpl final : public ::gdrmesh::v1::ControlService::Service {
 public:
  explicit ControlServiceImpl(CoordinatorServer& s) : s_(s) {}

  grpc::Status ListWorkers(grpc::ServerContext* ctx, const ::gdrmesh::v1::ListWorkersRequest*,
                           ::gdrmesh::v1::ListWorkersResponse* resp) override;

  grpc::Status RunTest(grpc::ServerContext* ctx, const ::gdrmesh::v1::RunTestRequest* req,
                       ::gdrmesh::v1::RunTestResponse* resp) override;

  grpc::Status ListResults(grpc::ServerContext* ctx, const ::gdrmesh::v1::ListResultsRequest* req,
                           ::gdrmesh::v1::ListResultsResponse* resp) override;

  grpc::Status History(grpc::ServerContext* ctx, const ::gdrmesh::v1::HistoryRequest* req,
                       ::gdrmesh::v1::HistoryResponse* resp) override;

  grpc::Status GetResult(grpc::ServerContext* ctx, const ::gdrmesh::v1::GetResultRequest* req,
                         ::gdrmesh::v1::TestResult* resp) override;

  grpc::Status CompareSweeps(grpc::ServerContext* ctx,
                             const ::gdrmesh::v1::CompareSweepsRequest* req,
                             ::gdrmesh::v1::CompareSweepsResponse* resp) override;

  grpc::Status StartSweep(grpc::ServerContext* ctx, const ::gdrmesh::v1::StartSweepRequest* req,
                          ::gdrmesh::v1::StartSweepResponse* resp) override;

  grpc::Status GetSweep(grpc::ServerContext* ctx, const ::gdrmesh::v1::SweepIdRequest* req,
                        ::gdrmesh::v1::SweepReport* resp) override;

  grpc::Status FollowSweep(grpc::ServerContext* ctx, const ::gdrmesh::v1::SweepIdRequest* req,
                           grpc::ServerWriter<::gdrmesh::v1::SweepProgress>* writer) override;

  grpc::Status CancelSweep(grpc::ServerContext* ctx, const ::gdrmesh::v1::SweepIdRequest* req,
                           ::gdrmesh::v1::SweepProgress* resp) override;

  grpc::Status JudgeSweep(grpc::ServerContext* ctx, const ::gdrmesh::v1::JudgeSweepRequest* req,
                          ::gdrmesh::v1::SweepReport* resp) override;

  grpc::Status ListSweeps(grpc::ServerContext* ctx, const ::gdrmesh::v1::ListSweepsRequest* req,
                          ::gdrmesh::v1::ListSweepsResponse* resp) override;

  grpc::Status ListActions(grpc::ServerContext* ctx, const ::gdrmesh::v1::ListActionsRequest* req,
                           ::gdrmesh::v1::ListActionsResponse* resp) override;

  // `gdrmesh fabric discover --worker NAME`: the worker discovers, the coordinator stores the
  // snapshot and its findings (FabricRecorder). A worker without InfiniBand or the fabric
  // module answers a result, stored and returned as a finding; only a worker that cannot be
  // asked (unknown, offline, lost, past the deadline) is an error of the call.
  grpc::Status DiscoverFabric(grpc::ServerContext* ctx,
                              const ::gdrmesh::v1::FabricDiscoverRequest* req,
                              ::gdrmesh::v1::FabricSnapshot* resp) override;

  // `gdrmesh fabric discover --lldp --all-workers`: every online worker asked at once
  // (orchestrator/lldp_survey.h), the answers stored as one LLDP snapshot
  // (FabricRecorder::recordLldpAll); a worker without an answer is a finding and a line of the
  // response, never an error of the call.
  grpc::Status DiscoverLldpAll(grpc::ServerContext* ctx,
                               const ::gdrmesh::v1::FabricLldpAllRequest* req,
                               ::gdrmesh::v1::FabricLldpAllResponse* resp) override;

  grpc::Status ListFabricSnapshots(grpc::ServerContext* ctx,
                                   const ::gdrmesh::v1::ListFabricSnapshotsRequest* req,
                                   ::gdrmesh::v1::ListFabricSnapshotsResponse* resp) override;

  grpc::Status GetFabricSnapshot(grpc::ServerContext* ctx,
                                 const ::gdrmesh::v1::GetFabricSnapshotRequest* req,
                                 ::gdrmesh::v1::FabricSnapshot* resp) override;

  grpc::Status ListSchedules(grpc::ServerContext* ctx, const ::gdrmesh::v1::ListSchedulesRequest*,
                             ::gdrmesh::v1::ListSchedulesResponse* resp) override;

  grpc::Status RemoveWorker(grpc::ServerContext* ctx, const ::gdrmesh::v1::RemoveWorkerRequest* req,
                            ::gdrmesh::v1::RemoveWorkerResponse* resp) override;

 private:
  static Status noFabricHistory();
  static void fabricToProto(const FabricRecord& rec, bool with_json,
                            ::gdrmesh::v1::FabricSnapshot* out);
  // Who made a call, for the log: "admin 'alice' from ipv4:..." (plaintext: the address only).
  std::string requester(grpc::ServerContext* ctx);
  // Every RPC starts here. With TLS the caller's role comes from its verified certificate:
  // reads need a reader or admin, anything that changes state an admin (security/policy.h).
  // Changes are logged with who asked. Plaintext (--insecure): everyone may do everything.
  grpc::Status allow(grpc::ServerContext* ctx, Access access, const char* rpc);

  CoordinatorServer& s_;
};

}  // namespace gdrmesh
