// The compact rows a sweep keeps for its judge, localiser and retest planning: what they read
// of each TestResult and nothing else. A TestResult is ~900 bytes with its strings; a JudgeRow
// is ~120, its names interned once per sweep (a 1024-host all-pairs sweep's 523,776 results
// held ~480 MB before, its rows ~70 MB). The full result goes to the store; the judge never
// needs it again.
//
// Thread contract: none (a value type); the sweep fills it on one thread at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "coordinator/orchestrator/sweep_types.h"

namespace gdrmesh {

// Each distinct string once, named by a dense id; id 0 is "".
class StringTable {
 public:
  StringTable();
  StringTable(const StringTable& other);
  StringTable& operator=(const StringTable& other);
  StringTable(StringTable&&) noexcept = default;
  StringTable& operator=(StringTable&&) noexcept = default;

  uint32_t intern(std::string_view s);
  std::optional<uint32_t> find(std::string_view s) const;
  const std::string& str(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::deque<std::string> strings_;  // a deque: the views in ids_ stay valid as it grows
  std::unordered_map<std::string_view, uint32_t> ids_;
};

// One side of a judged test. Names are StringTable ids of the rows they belong to.
struct JudgeSide {
  uint32_t worker = 0;
  uint32_t nic = 0;         // 0: no NIC ("")
  uint32_t topo_class = 0;  // GPU-NIC path class; 0: none
  int32_t gpu = -1;
  MemoryKind memory = MemoryKind::kHost;
  RegPath reg_path = RegPath::kHost;
};

// What the judge, the localiser and planRetests read of one TestResult.
struct JudgeRow {
  uint32_t test_id = 0;  // offset into the rows' test id text
  uint32_t reason = 0;   // StringTable id
  int32_t plan_index = -1;
  uint16_t test_id_size = 0;
  Op op = Op::kWrite;
  Mode mode = Mode::kBandwidth;
  TestStatus status = TestStatus::kError;
  bool has_bandwidth = false;
  bool has_latency = false;
  bool integrity_checked = false;
  bool retest = false;  // a retest with a known-good partner (its verdict says so)
  int64_t finished_ms = 0;
  uint64_t message_size = 0;
  double bw_avg_gbps = 0;    // Measurement::bw.avg_gbps
  double lat_median_us = 0;  // Measurement::lat.median_us
  uint64_t bytes_checked = 0;
  uint64_t wrong_bytes = 0;
  JudgeSide initiator, target;

  bool ran() const { return has_bandwidth || has_latency; }
  bool usesCuda() const {
    return initiator.memory == MemoryKind::kCuda || target.memory == MemoryKind::kCuda;
  }
};

// A sweep's rows, in the order they were added (sortByPlanIndex puts them in plan order).
class JudgeRows {
 public:
  // Keeps what the judge reads of `r`; returns its index.
  size_t add(const TestResult& r, bool retest = false);
  void reserve(size_t n);
  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  const JudgeRow& operator[](size_t i) const { return rows_[i]; }
  std::vector<JudgeRow>::const_iterator begin() const { return rows_.begin(); }
  std::vector<JudgeRow>::const_iterator end() const { return rows_.end(); }

  std::string_view testId(const JudgeRow& r) const {
    return std::string_view(ids_).substr(r.test_id, r.test_id_size);
  }
  const std::string& str(uint32_t id) const { return strings_.str(id); }
  const StringTable& strings() const { return strings_; }
  // WORKER/NIC as tested ("h1/mlx5_0"; "h1" when no NIC).
  std::string endpointName(const JudgeSide& s) const;
  // The GPU-NIC path classes of the cuda sides ("SYS", or "PIX/SYS" when they differ).
  std::string topologyOf(const JudgeRow& r) const;
  // Plan order (plan index, then test id): the order in which the store reads a sweep back, so
  // a live judge and one over the stored rows see the same rows in the same order.
  void sortByPlanIndex();

 private:
  std::vector<JudgeRow> rows_;
  std::string ids_;  // the test ids, back to back
  StringTable strings_;
};

// The judge's verdicts over JudgeRows, one per row in row order: the kind, and the reasons of
// rows that have any. A PairVerdict is made from a row and its verdict when it is written out.
struct JudgeVerdicts {
  std::vector<VerdictKind> kind;
  std::vector<uint32_t> reasons_of;               // per row: 0 none, else 1 + index in reasons
  std::vector<std::vector<std::string>> reasons;  // each names the rule, figure and threshold

  size_t size() const { return kind.size(); }
  const std::string& firstReason(size_t row) const;  // "" when none
};

// The verdict of row i as the report writes it.
PairVerdict verdictOf(const JudgeRows& rows, const JudgeVerdicts& verdicts, size_t i);
std::vector<PairVerdict> verdictsOf(const JudgeRows& rows, const JudgeVerdicts& verdicts);
// The workers on either side of a row whose verdict is PASS.
std::set<std::string> passingWorkers(const JudgeRows& rows, const JudgeVerdicts& verdicts);

}  // namespace gdrmesh
