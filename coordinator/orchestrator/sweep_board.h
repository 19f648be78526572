// The live sweeps, shared by the three parts of the sweep manager: the queue (sweep_queue.h)
// puts sweeps on the board, the run of one sweep (sweep_run.h) changes them and publishes each
// change, and the reports (sweep_reports.h) read them for progress while they are recent. One
// mutex guards every LiveSweep and the board; followers wait on its condition variable.
//
// Thread contract: thread-safe through `mu`; the methods marked "mu held" need it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "common/sync/mutex.h"
#include "coordinator/orchestrator/cluster_config.h"
#include "coordinator/orchestrator/executor.h"
#include "coordinator/orchestrator/judge_row.h"
#include "coordinator/orchestrator/plan_table.h"
#include "coordinator/orchestrator/planner.h"
#include "coordinator/orchestrator/sweep_summary.h"
#include "coordinator/orchestrator/sweep_types.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

// Plan indexes, one bit each (a std::set<int> of a 1024-host sweep's 523,776 tests took
// ~25 MB).
class PlanIndexSet {
 public:
  bool count(int i) const {
    return i >= 0 && static_cast<size_t>(i) < bits_.size() && bits_[static_cast<size_t>(i)];
  }
  void insert(int i);
  size_t size() const { return size_; }

 private:
  std::vector<bool> bits_;
  size_t size_ = 0;
};

// One sweep this coordinator has queued, runs or ran. Guarded by SweepBoard::mu, except where a
// field says that only the sweep's own thread changes it.
class SweepFabric;  // sweep_fabric.h

struct LiveSweep {
  std::string id;
  SweepSpec spec;
  ClusterConfig config;
  PlanTable plan;                       // the plan proper, then its retests
  std::vector<PairTestSpec> templates;  // one per configured sweep (acceptance runs several)
  std::vector<int> template_of;         // plan index -> template
  std::vector<std::string> hosts;       // the hosts the plan was made for
  std::vector<std::string> notes;
  int rounds = 0;
  uint64_t seed = 0;
  size_t plan_size = 0;              // tests of the plan proper; retests come after
  std::vector<uint64_t> part_sizes;  // tests of the plan proper per part (config sweep)
  // A bisection part's rounds (the plan's round numbers) and the fabric's bisection bandwidth
  // per direction (Gb/s) its report compares the rounds' summed bandwidth with.
  std::set<int> bisection_rounds;
  double bisection_gbps = 0;
  SweepState state = SweepState::kQueued;
  int64_t created_ms = 0, started_ms = 0, finished_ms = 0;
  Clock::TimePoint started_at{};
  std::string reason, verdict;
  // What the judge reads of this run's results (the results themselves go to the store).
  JudgeRows rows;
  PlanIndexSet done;                     // plan indexes with a stored result
  std::map<int, std::string> in_flight;  // plan index -> test id
  std::set<int> marked;                  // in-flight starts already stored
  uint32_t failed = 0, skipped = 0, retests = 0;
  uint64_t version = 0;
  JudgeVerdicts verdicts;        // over `rows`, once judged
  VerdictCounts verdict_counts;  // of `verdicts`, kept once they are dropped
  std::vector<Suspect> suspects;
  Executor* executor = nullptr;
  // The sweep's thread is inside Executor::start(), taking its first tests' deadlines from the
  // clock (SweepBoard::startingTests).
  bool starting_tests = false;
  bool cancel_requested = false;
  bool resumed = false;
  // Resumed, and its plan is made again once its hosts are back (the run); until then the
  // stored row's count of tests stands for the plan's.
  bool needs_plan = false;
  uint32_t stored_total = 0;
  // The sweep has ended and is judged but its report is not stored yet: its end is shown at
  // once (SweepProgress::report_pending) and its report is read from `rows`, `verdicts`,
  // `figures`, `suspects` and `notes` here until the rows are stored (SweepReports).
  bool report_pending = false;
  std::vector<FigureSummary> figures;  // of `verdicts`, while report_pending
  // Judged and shown ended while the writer still stores its last results (they are written
  // while the judge runs, not before it): a query of its results waits until this turns false
  // (SweepBoard::awaitResultsStored).
  bool results_pending = false;
  SweepState notified_state = SweepState::kQueued;
  bool notified_pending = false;
  Clock::TimePoint notified_at{};
  // Port counters around the rounds (a fabric_reader; the sweep's thread only): the changes
  // read, the switch ports (GUID, port) read around some round, and what the reads found.
  std::vector<LinkCounterRecord> counter_rows;
  std::set<std::pair<uint64_t, int>> counter_ports_read;
  std::vector<std::string> counter_notes;
  // The coordinator's fabric each test started on (a newer discovery replaces it while the
  // sweep runs): the snapshots seen, in order, and per plan index 1 + its snapshot's index
  // there (0: not recorded, e.g. run before a restart). The sweep's thread and executor
  // callbacks, under the board's mu.
  std::vector<std::shared_ptr<const SweepFabric>> fabrics;
  std::vector<uint16_t> test_fabric;
};

class SweepBoard {
 public:
  explicit SweepBoard(Clock& clock) : clock_(clock) {}

  Mutex mu;                    // guards the fields below and every LiveSweep on the board
  std::condition_variable cv;  // a published change, a sweep queued or ended, shutdown
  std::map<std::string, std::shared_ptr<LiveSweep>> recent
      ABSL_GUARDED_BY(mu);  // by id, for follow
  bool stopping ABSL_GUARDED_BY(mu) = false;

  // The state others see (an ended sweep's end shows once it is judged, before its report is
  // stored: SweepProgress::report_pending).
  static SweepState visibleState(const LiveSweep& s);
  // mu held: the sweep's progress as callers see it.
  SweepProgress snapshot(const LiveSweep& s) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // mu held: counts a change of `s` and wakes its followers (at once on a change of state, at
  // most every 100 ms for progress alone).
  void publish(LiveSweep& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The recent sweep `id`, or null.
  std::shared_ptr<LiveSweep> find(const std::string& id);
  // Blocks until `s` changes after `version`, the board stops or the clock reaches `deadline`;
  // returns its progress and version.
  std::pair<SweepProgress, uint64_t> waitForChange(const std::shared_ptr<LiveSweep>& s,
                                                   uint64_t version, Clock::TimePoint deadline);
  // Blocks until the recent sweep `id` has every result stored (at once for any other id), the
  // board stops or the clock reaches `deadline`; false only at the deadline with results still
  // being written.
  bool awaitResultsStored(const std::string& id, Clock::TimePoint deadline);
  // The sweeps whose thread is starting tests (inside Executor::start(); later tests start on
  // the thread that ended the test before them). A test that moves a ManualClock from its own
  // thread waits for 0 before each step, so no start takes its deadline at one time and its
  // first reply at another.
  uint64_t startingTests();

 private:
  Clock& clock_;
};

}  // namespace gdrmesh
