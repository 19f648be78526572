// One worker's stream (WorkerService.Connect), as a gRPC callback reactor: no thread per
// worker. Private to coordinator/service/.
#pragma once

#include <grpcpp/grpcpp.h>

#include "common/clock.h"
#include "coordinator/orchestrator/cluster_config.h"
#include "coordinator/service/registry.h"
#include "coordinator/store/store.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"
#include "security/revocation.h"

namespace gdrmesh {

struct WorkerStreamDeps {
  Registry& registry;
  ResultStore& store;  // registered workers' inventories
  Clock& clock;
  int heartbeat_ms = 1000;
  bool tls = false;
  RevocationList* revoked = nullptr;      // null: no --crl
  const ClusterConfig* config = nullptr;  // never null (empty: no --config)
  int register_deadline_ms = 10000;
};

// A reactor for one worker's stream; it deletes itself when the stream is done.
grpc::ServerBidiReactor<::gdrmesh::v1::WorkerMessage, ::gdrmesh::v1::CoordinatorMessage>*
newWorkerStream(const WorkerStreamDeps& deps, grpc::CallbackServerContext* ctx);

}  // namespace gdrmesh
