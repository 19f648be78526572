// `gdrmesh fabric discover --lldp --all-workers` (docs/fabric.md, "RoCE: LLDP"): every online
// worker of a WorkerDirectory is asked for its LLDP answer (its discover_fabric command with
// `lldp` set) at once, at most `max_concurrency` at a time, all under one deadline on the
// injected clock. Every registered worker gets one reply: its answer, offline (not asked), lost,
// or past the deadline; FabricRecorder::recordLldpAll() merges and stores them as one snapshot.
//
// No thread per worker: the asks are the channels' asynchronous calls, the next ask is sent
// from the callback of the one before, and a timer at the deadline ends the survey even when a
// channel never answers.
//
// Thread contract: surveyLldp() blocks its caller until done; startLldpSurvey() returns at once
// and its `done` runs once, on whichever thread completed the survey (a channel's callback, the
// clock's timer, or the caller when no worker is online), and must not block.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "coordinator/orchestrator/fabric_history.h"
#include "coordinator/orchestrator/worker_channel.h"

namespace gdrmesh {

struct LldpSurveyOptions {
  std::string ca;                 // each worker's RDMA device to keep; "" = every RoCE device
  double deadline_seconds = 120;  // the whole survey
  size_t max_concurrency = 0;     // workers asked at once; 0 = every online worker at once
};

// Every registered worker's reply (LldpWorkerReply), in the directory's order.
using LldpSurveyDone = std::function<void(std::vector<LldpWorkerReply>)>;

void startLldpSurvey(WorkerDirectory& directory, Clock& clock, const LldpSurveyOptions& options,
                     LldpSurveyDone done);

// startLldpSurvey() waited for.
std::vector<LldpWorkerReply> surveyLldp(WorkerDirectory& directory, Clock& clock,
                                        const LldpSurveyOptions& options);

}  // namespace gdrmesh
