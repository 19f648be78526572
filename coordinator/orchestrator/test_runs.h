// The coordinator's two ways of running tests, wired once: its sweeps (SweepManager) and
// `gdrmesh test` (SingleTests) over ONE ResourceLocks, so that a one-pair test on a NIC, GPU or
// host a sweep's test holds waits for it, and the sweep's next test on it waits for the one-pair
// test (resource_locks.h). CoordinatorServer holds one; a unit test checks the sharing
// (tests/unit/orchestrator/single_test_test.cc) on the same wiring.
//
// Thread contract: as SweepManager's and SingleTests'. Destroyed in reverse order of
// declaration: the sweeps stop first, the locks go last.
#pragma once

#include <memory>

#include "common/clock.h"
#include "coordinator/orchestrator/resource_locks.h"
#include "coordinator/orchestrator/single_test.h"
#include "coordinator/orchestrator/sweep_manager.h"
#include "coordinator/orchestrator/worker_channel.h"
#include "coordinator/store/result_writer.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

struct TestRunsDeps {
  WorkerDirectory& workers;
  Clock& clock;
  SweepStore& sweeps;
  ResultStore& results;  // results, and the one-pair tests' markers
  ResultWriter& writer;  // the one write path of both
  const SweepCodec& codec;
  SweepManager::ConfigParser parse_config;
};

class TestRuns {
 public:
  // `sweeps.executor.locks` is set to locks() (whatever it was).
  TestRuns(const TestRunsDeps& deps, SingleTestOptions single, SweepManagerOptions sweeps);
  TestRuns(const TestRuns&) = delete;
  TestRuns& operator=(const TestRuns&) = delete;

  ResourceLocks& locks() { return locks_; }
  SingleTests& single() { return *single_; }
  SweepManager& sweeps() { return *sweeps_; }

 private:
  ResourceLocks locks_;
  std::unique_ptr<SingleTests> single_;
  std::unique_ptr<SweepManager> sweeps_;
};

}  // namespace gdrmesh
