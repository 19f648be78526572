// A sweep's plan as it is held while the sweep runs: each planned test in 32 bytes, its two
// endpoints and its texts (rail, the test a retest re-examines) kept once in tables. A
// PlannedTest is ~256 bytes (two selectors with their strings, two more strings): a 1,024-host
// all-pairs plan (523,776 tests) held 134 MB that way, now 17 MB.
//
// Not thread-safe: guarded as the LiveSweep that holds it (SweepBoard::mu).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "common/pair_spec.h"
#include "coordinator/orchestrator/judge_row.h"
#include "coordinator/orchestrator/sweep_types.h"

namespace gdrmesh {

class PlanTable {
 public:
  PlanTable() = default;
  explicit PlanTable(const std::vector<PlannedTest>& tests);

  void append(const PlannedTest& t);
  void reserve(size_t n) { rows_.reserve(n); }
  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  // Test i, made whole (a copy: the table keeps no PlannedTest).
  PlannedTest operator[](size_t i) const;
  // Parts of test i, without making the whole test.
  int round(size_t i) const { return rows_[i].round; }
  const EndpointSelector& initiator(size_t i) const { return endpoints_[rows_[i].initiator]; }
  const EndpointSelector& target(size_t i) const { return endpoints_[rows_[i].target]; }
  uint64_t messageSize(size_t i) const { return rows_[i].message_size; }
  bool bidirectional(size_t i) const { return rows_[i].bidirectional; }
  // Every endpoint some test uses, each once.
  const std::vector<EndpointSelector>& endpoints() const { return endpoints_; }

 private:
  struct Row {
    int32_t round = 0;
    uint32_t initiator = 0, target = 0;  // into endpoints_
    uint32_t rail = 0, retest_of = 0;    // into texts_ (0: "")
    bool bidirectional = false;
    bool retest = false;
    uint64_t message_size = 0;
  };
  static_assert(sizeof(Row) == 32, "a planned test's row is 32 bytes (see the top)");
  struct EndpointHash {
    size_t operator()(const EndpointSelector& e) const;
  };
  struct EndpointEqual {
    bool operator()(const EndpointSelector& a, const EndpointSelector& b) const;
  };
  uint32_t endpointId(const EndpointSelector& e);

  std::vector<Row> rows_;
  std::vector<EndpointSelector> endpoints_;
  std::unordered_map<EndpointSelector, uint32_t, EndpointHash, EndpointEqual> endpoint_ids_;
  StringTable texts_;
};

}  // namespace gdrmesh
