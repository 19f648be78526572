// The worker's request handler: one coordinator command, converted from the wire once, run on
// the SessionManager, and its reply filled (status included). The agent calls it from its
// command pools; the fuzz harness tests/fuzz/worker_command drives it with arbitrary commands
// in any order. Thread contract: as SessionManager's (thread-safe; one test's commands in
// order).
#pragma once

#include "gdrmesh/v1/gdrmesh.pb.h"
#include "worker/service/worker_agent.h"

namespace gdrmesh {

void executeCommand(const WorkerOptions& options, SessionManager& sessions,
                    const ::gdrmesh::v1::CoordinatorCommand& cmd,
                    ::gdrmesh::v1::CommandReply* reply);

}  // namespace gdrmesh
