// Sweeps, from request to verdict: the facade the service and the CLI use over the three parts
// of the sweep manager, which share the live sweeps on a SweepBoard (sweep_board.h):
//   SweepQueue   (sweep_queue.h)   start, cancel, one sweep at a time, resume after a restart;
//   SweepRunner  (sweep_run.h)     the run of one sweep: plan, execute, retests, judge, store;
//   SweepReports (sweep_reports.h) progress, reports and lists over the stored rows.
// A coordinator killed mid-sweep resumes it on restart: finished results are kept, the tests
// that were in flight are recorded as ERROR and run again, nothing runs twice.
//
// Thread contract: thread-safe. Sweeps run on the queue's own thread; callers never block on a
// running sweep except through waitForChange().
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "coordinator/orchestrator/sweep_board.h"
#include "coordinator/orchestrator/sweep_queue.h"
#include "coordinator/orchestrator/sweep_reports.h"
#include "coordinator/orchestrator/sweep_run.h"
#include "coordinator/orchestrator/sweep_types.h"
#include "coordinator/orchestrator/worker_channel.h"
#include "coordinator/store/result_writer.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

class SweepManager {
 public:
  using ConfigParser = SweepConfigParser;

  SweepManager(WorkerDirectory& workers, Clock& clock, SweepStore& sweeps, ResultStore& results,
               ResultWriter& writer, const SweepCodec& codec, ConfigParser parse_config,
               SweepManagerOptions options);
  ~SweepManager();
  SweepManager(const SweepManager&) = delete;
  SweepManager& operator=(const SweepManager&) = delete;

  // Validates, plans and starts (or queues) a sweep. Errors name the field and the fix.
  Result<SweepProgress> start(const SweepSpec& spec);
  Result<SweepProgress> cancel(const std::string& id);
  Result<SweepProgress> progress(const std::string& id);
  Result<SweepReportData> report(const std::string& id, const SweepReportQuery& query = {});
  // Recomputes verdicts from the stored rows: same rows and config, same answer. The result
  // carries the page of verdicts `page` asks for and no results.
  Result<SweepReportData> judge(const std::string& id, const std::string& config_yaml,
                                const std::string& baseline, VerdictFilter filter = {},
                                VerdictPage page = {});
  Result<std::vector<SweepProgress>> list(uint32_t limit);
  // Returns once every result of sweep `id` is stored (SweepReports::awaitResults).
  Status awaitResults(const std::string& id);
  bool running() const;
  // Blocks until the sweep's progress changes after `version` or the deadline passes; returns
  // the progress and its version.
  Result<std::pair<SweepProgress, uint64_t>> waitForChange(const std::string& id, uint64_t version,
                                                           Clock::TimePoint deadline);
  // At start-up: sweeps left running or queued by a previous coordinator are resumed.
  void resumeInterrupted();
  void shutdown();

 private:
  SweepBoard board_;
  SweepRunner runner_;
  SweepReports reports_;
  mutable SweepQueue queue_;  // last: its thread starts once the rest is built
};

}  // namespace gdrmesh
