#include "coordinator/orchestrator/test_runs.h"

#include <utility>

namespace gdrmesh {

TestRuns::TestRuns(const TestRunsDeps& deps, SingleTestOptions single, SweepManagerOptions sweeps) {
  single_ = std::make_unique<SingleTests>(
      SingleTestDeps{deps.workers, deps.clock, deps.results, deps.writer, locks_,
                     sweeps.fabric_source.get(), sweeps.paths},
      std::move(single));
  sweeps.executor.locks = &locks_;
  sweeps_ =
      std::make_unique<SweepManager>(deps.workers, deps.clock, deps.sweeps, deps.results,
                                     deps.writer, deps.codec, deps.parse_config, std::move(sweeps));
}

}  // namespace gdrmesh
