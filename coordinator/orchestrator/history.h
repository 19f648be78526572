// History queries over the results store: a pair's results over time, one result whole, the
// latest results with their total count, and one sweep compared with another. Domain logic (no
// protobuf, no SQLite, no sockets): the gRPC ControlService and the status page's JSON API both
// answer from here, so the CLI and the API agree.
//
// Thread contract: every method may be called from any thread at once (the store and the
// directory are thread-safe; this class holds no state of its own).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/status.h"
#include "coordinator/orchestrator/worker_channel.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

// How one (pair, op, mode, size) changed from sweep A to sweep B.
enum class ChangeKind { kWorse, kBetter, kUnchanged, kNew, kMissing };
const char* toString(ChangeKind c);  // "worse", "better", "unchanged", "new", "missing"

struct ComparisonRow {
  std::string src;  // initiator: WORKER or WORKER/NIC
  std::string dst;  // target
  Op op = Op::kWrite;
  Mode mode = Mode::kBandwidth;
  uint64_t message_size = 0;
  ChangeKind change = ChangeKind::kUnchanged;
  // The judged figure of each side: average Gb/s (bandwidth, higher is better) or median us
  // (latency, lower is better); absent when that sweep has no figure for this key.
  std::optional<double> a;
  std::optional<double> b;
  std::string unit;  // "Gb/s" or "us"
  // (b - a) / a * 100 when both figures exist and a != 0.
  std::optional<double> change_pct;
  std::optional<TestStatus> a_status;  // absent: the key is not in that sweep
  std::optional<TestStatus> b_status;
  std::string a_test_id;
  std::string b_test_id;
  std::string reason;  // why it is classified so: "PASSED -> FAILED: <B's reason>", "-12.3%"
};

struct SweepComparison {
  std::string a;  // sweep ids
  std::string b;
  double tolerance_pct = 5.0;
  std::vector<ComparisonRow> rows;  // worst regression first
  size_t worse = 0, better = 0, unchanged = 0, added = 0, missing = 0;
};

// Pure: the same rows give the same answer. Keys are (src, dst, op, mode, size); when a sweep
// holds a key twice, its later result (started_ms, then row id) counts. Classification:
//  - only in B: new; only in A: missing;
//  - PASSED in A and not in B: worse; not PASSED in A and PASSED in B: better;
//  - both PASSED with figures: a change beyond `tolerance_pct` in the good direction is better,
//    in the bad direction worse, else unchanged;
//  - otherwise (both not passed, or a figure missing): unchanged.
// Order: worse (status regressions first, then the largest regression in %), missing, new,
// better (largest improvement first), unchanged; ties by src, dst, op, mode, size.
SweepComparison compareSweepResults(const std::string& a_id, const std::vector<TestResult>& a,
                                    const std::string& b_id, const std::vector<TestResult>& b,
                                    double tolerance_pct);

// A page of results and how many match in all (the M of "N of M").
struct ResultsPage {
  std::vector<TestResult> rows;
  uint64_t total = 0;
};

class HistoryQueries {
 public:
  static constexpr double kDefaultTolerancePct = 5.0;

  HistoryQueries(ResultRecords& results, SweepRecords& sweeps, const WorkerDirectory& workers);

  // The pair's results, newest first. A worker neither registered nor named by any stored
  // result is kNotFound, naming every such worker of the query and the workers known.
  Result<std::vector<TestResult>> history(const HistoryQuery& query);
  // The latest results and their total count. An unknown `query.worker` is kNotFound, as above.
  Result<ResultsPage> results(const ResultQuery& query);
  // One result by test id; kNotFound when no result has that id.
  Result<TestResult> result(const std::string& test_id);
  // Sweep B compared with sweep A over their planned tests (retests are left out). Unknown
  // sweep ids are kNotFound; a tolerance outside 0..1000 % is kInvalidArgument.
  Result<SweepComparison> compare(const std::string& a, const std::string& b, double tolerance_pct);

 private:
  // kNotFound naming every worker of `names` that is neither registered nor in a stored result.
  Status checkKnownWorkers(const std::vector<std::string>& names);
  Result<std::vector<TestResult>> plannedResults(const std::string& sweep_id);

  ResultRecords& results_;
  SweepRecords& sweeps_;
  const WorkerDirectory& workers_;
};

}  // namespace gdrmesh
