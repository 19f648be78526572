// Helpers of the SweepManager tests over fake workers: the small sweep they run, and following
// it to its end through waitForChange (no sleeps).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "common/status.h"
#include "coordinator/orchestrator/sweep_manager.h"

namespace gdrmesh::testing {

// All pairs over whatever hosts the directory has, 64 KiB x 10, no retry, no localisation.
inline SweepSpec plainAllPairs() {
  SweepSpec spec;
  spec.pattern = SweepPattern::kAllPairs;
  spec.test.message_size = 65536;
  spec.test.iterations = 10;
  spec.retries = 0;
  spec.localise = false;
  return spec;
}

// Follows sweep `id` from `p` (seen at `version`) until it is neither queued nor running and
// its report is stored (what it says can be read from the store); deadline_exceeded after
// `limit` of `clock`'s time.
inline Result<SweepProgress> waitForSweepEnd(SweepManager& manager, const std::string& id,
                                             SweepProgress p, uint64_t version, Clock& clock,
                                             std::chrono::seconds limit) {
  const auto give_up = clock.now() + limit;
  while (p.state == SweepState::kRunning || p.state == SweepState::kQueued || p.report_pending) {
    if (clock.now() >= give_up) return Status(Code::kDeadlineExceeded, "the sweep did not end");
    auto next = manager.waitForChange(id, version, clock.now() + std::chrono::seconds(1));
    if (!next.ok()) return next.status();
    p = next->first;
    version = next->second;
  }
  return p;
}

}  // namespace gdrmesh::testing
