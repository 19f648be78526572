// What every store computes the same way when it sums a sweep's results up per pair
// (SweepAggregates): the pair's worst status and the median of its figures. The SQLite store
// and the in-memory store of the tests (tests/support/memory_store.h) both use these, so the
// contract suite compares two implementations of one rule, not two rules.
//
// Thread contract: none (pure functions).
#pragma once

#include <limits>
#include <utility>
#include <vector>

#include "common/stats.h"
#include "common/types.h"

namespace gdrmesh {

// The worst status first: FAILED 3, ERROR 2, SKIPPED 1, PASSED 0.
inline int statusSeverity(TestStatus s) {
  switch (s) {
    case TestStatus::kFailed:
      return 3;
    case TestStatus::kError:
      return 2;
    case TestStatus::kSkipped:
      return 1;
    case TestStatus::kPassed:
      return 0;
  }
  return 2;
}

// The median of a pair's figures; NaN (stored as NULL) when it has none.
inline double aggregateMedian(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  return medianOf(std::move(v));
}

}  // namespace gdrmesh
