// What every part of the coordinator's gRPC services shares: a domain Status as a gRPC
// status (its fix appended), and the coordinator's log. Private to coordinator/service/.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

#include "common/clock.h"
#include "common/log.h"
#include "common/status.h"

namespace gdrmesh {

// The coordinator's log lines, timed by its clock.
inline ComponentLog coordinatorServerLog(const Clock& clock) {
  return ComponentLog("coordinator", &clock);
}

inline grpc::Status toGrpc(const Status& st) {
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

}  // namespace gdrmesh
