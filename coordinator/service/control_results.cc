// The ControlService's results: `gdrmesh test` (RunTest) and the history queries.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <set>
#include <vector>

#include "common/fabric/fabric.h"
#include "common/units.h"
#include "convert.h"
#include "coordinator/service/control_service.h"
#include "coordinator/service/history_convert.h"
#include "coordinator/service/service_common.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"

namespace gdrmesh {

namespace pb = ::gdrmesh::v1;

// `gdrmesh test`: the request converted and its wire enums checked here; everything else
// (validation, workers, marker, the run through the executor, the store) is SingleTests'.
grpc::Status CoordinatorServer::ControlServiceImpl::RunTest(grpc::ServerContext* ctx,
                                                            const pb::RunTestRequest* req,
                                                            pb::RunTestResponse* resp) {
  if (auto st = allow(ctx, Access::kAdmin, "RunTest"); !st.ok()) return st;
  if (req->op() == pb::OP_UNSPECIFIED || !pb::Op_IsValid(req->op())) {
    return toGrpc(invalidArgument("op: must be write, read, send or write_imm"));
  }
  if (!pb::Mode_IsValid(req->mode()) || !pb::Transport_IsValid(req->transport())) {
    return toGrpc(invalidArgument("mode/transport: unknown value"));
  }
  if (req->iterations() == 0) return toGrpc(invalidArgument("iters: must be > 0"));
  auto out = s_.runs_->single().run(convert::fromProto(*req));
  if (!out.ok()) return toGrpc(out.status());
  if (!out->store_error.ok()) resp->set_store_error(out->store_error.toString());
  convert::toProto(out->result, resp->mutable_result());
  return grpc::Status::OK;
}

grpc::Status CoordinatorServer::ControlServiceImpl::ListResults(grpc::ServerContext* ctx,
                                                                const pb::ListResultsRequest* req,
                                                                pb::ListResultsResponse* resp) {
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
  // A sweep's results are listed once the writer has stored its last ones (it is judged
  // meanwhile).
  if (!q.run_id.empty()) {
    if (auto st = s_.runs_->sweeps().awaitResults(q.run_id); !st.ok()) return toGrpc(st);
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

grpc::Status CoordinatorServer::ControlServiceImpl::History(grpc::ServerContext* ctx,
                                                            const pb::HistoryRequest* req,
                                                            pb::HistoryResponse* resp) {
  if (auto st = allow(ctx, Access::kRead, "History"); !st.ok()) return st;
  auto q = convert::fromProto(*req);
  if (!q.ok()) return toGrpc(q.status());
  auto rows = s_.history_.history(*q);
  if (!rows.ok()) return toGrpc(rows.status());
  for (const auto& t : *rows) convert::toProto(t, resp->add_results());
  return grpc::Status::OK;
}

grpc::Status CoordinatorServer::ControlServiceImpl::GetResult(grpc::ServerContext* ctx,
                                                              const pb::GetResultRequest* req,
                                                              pb::TestResult* resp) {
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
  // Its path through the fabric, when the coordinator traced one (a fabric: sweeps and tests).
  if (TestPathStore* paths = s_.options_.sweeps.paths; paths != nullptr) {
    auto hops = paths->testPath(req->test_id());
    if (!hops.ok()) return toGrpc(hops.status().withContext("reading the test's path"));
    for (const PathHopRecord& h : *hops) {
      pb::FabricPathHop* p = resp->add_fabric_path();
      p->set_direction(h.direction);
      p->set_hop(h.hop);
      p->set_switch_name(h.switch_name);
      p->set_switch_guid(fabric::guidHex(h.switch_guid));
      p->set_in_port(h.in_port);
      p->set_out_port(h.out_port);
      p->set_fabric(h.fabric);
    }
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorServer::ControlServiceImpl::CompareSweeps(
    grpc::ServerContext* ctx, const pb::CompareSweepsRequest* req,
    pb::CompareSweepsResponse* resp) {
  if (auto st = allow(ctx, Access::kRead, "CompareSweeps"); !st.ok()) return st;
  const double tolerance =
      req->has_tolerance_pct() ? req->tolerance_pct() : HistoryQueries::kDefaultTolerancePct;
  auto c = s_.history_.compare(req->a(), req->b(), tolerance);
  if (!c.ok()) return toGrpc(c.status());
  convert::toProto(*c, resp);
  return grpc::Status::OK;
}

}  // namespace gdrmesh
