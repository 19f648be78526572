// `gdrmesh test`: one pair, run as a sweep's tests are. The request is checked (limits, known
// and online workers, their inventories: each error names the field and the fix), the test runs
// as a one-pair run on an Executor that holds its resources in the coordinator's ResourceLocks
// (so it waits behind a sweep's test on the same NIC, GPU or host instead of colliding with
// it), a marker is in the store while it runs (a coordinator killed meanwhile records it as
// interrupted at its next start), and its result is stored through the ResultWriter that sweeps
// use (a refused result is spooled and held; its marker goes once it is stored). With the
// coordinator's InfiniBand fabric (`fabric`), the test's path both ways, traced through the LFTs
// of the snapshot current when it started, is stored with it (`paths`), as a sweep's tests' are.
//
// Thread contract: thread-safe; any number of tests at once.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/pair_spec.h"
#include "common/result.h"
#include "common/status.h"
#include "coordinator/orchestrator/fabric_source.h"
#include "coordinator/orchestrator/pair_test.h"
#include "coordinator/orchestrator/resource_locks.h"
#include "coordinator/orchestrator/worker_channel.h"
#include "coordinator/store/result_writer.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

struct SingleTestDeps {
  WorkerDirectory& workers;
  Clock& clock;
  TestMarkers& markers;
  ResultWriter& writer;
  ResourceLocks& locks;  // shared with the sweeps' executors
  // The coordinator's fabric (null: none) and where the paths go (null: not stored).
  const FabricSource* fabric = nullptr;
  TestPathStore* paths = nullptr;
};

struct SingleTestOptions {
  PairTestLimits limits;
  PairTestOptions pair;
};

// An ended test, before it is stored.
struct SingleTestEnd {
  TestResult result;
  bool marked = false;  // its start marker is in the store (cleared once it is stored)
  // The coordinator's fabric when the test started (null: none): its path is traced through it.
  std::shared_ptr<const SweepFabric> fabric;
};

struct SingleTestOutcome {
  TestResult result;  // id set once stored
  // The writer's answer when the result is not stored yet: whether it is durable in the spool,
  // and the fix. OK when stored.
  Status store_error;
  // With a fabric: the hops stored (both directions), or why the path is not stored ("" when
  // there is no fabric).
  size_t path_hops = 0;
  std::string path_note;
};

class SingleTests {
 public:
  SingleTests(SingleTestDeps deps, SingleTestOptions options)
      : deps_(deps), options_(std::move(options)) {}

  // The request as the test would run it: validatePairTestSpec, then both workers known and
  // online, then their inventories (checkPairAgainstInventory).
  Status check(const PairTestSpec& spec) const;
  // check(), then starts the test; `done` runs once with its end, on the thread that ended it
  // (inside start() when it could not run at all).
  Status start(const PairTestSpec& spec, std::function<void(SingleTestEnd)> done);
  // Stores an ended test through the writer and waits for the first attempt; its marker is
  // cleared once the result is stored. With the fabric it started on, its path is stored too.
  SingleTestOutcome store(SingleTestEnd end);
  // start(), a wait for the end (an event: the thread sleeps until `done`), store().
  Result<SingleTestOutcome> run(const PairTestSpec& spec);

 private:
  // Traces the test both ways through `fab` and stores the hops; into out->path_*.
  void storePath(const SweepFabric& fab, SingleTestOutcome* out) const;

  SingleTestDeps deps_;
  const SingleTestOptions options_;
};

}  // namespace gdrmesh
