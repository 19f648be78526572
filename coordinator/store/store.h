// The results store, in domain terms. The one implementation is SQLite (sqlite_store.h); the
// contract test suite (tests/unit/store) is written against this interface.
//
// Thread contract: all methods are safe to call from any thread concurrently.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/status.h"

namespace gdrmesh {

struct ResultQuery {
  uint32_t limit = 50;  // newest first; 0 = no limit
  std::string worker;   // either endpoint on this worker; "" = any
  std::optional<TestStatus> status;
  std::string run_id;    // "" = any
  int64_t since_ms = 0;  // started_ms >= since_ms
};

// The results of one pair of workers over time (ResultStore::queryHistory).
struct HistoryQuery {
  std::string src;              // worker name, required
  std::string dst;              // worker name, required (may equal src: loopback)
  bool both_directions = true;  // false: src -> dst only
  int64_t since_ms = 0;         // started_ms >= since_ms
  int64_t until_ms = std::numeric_limits<int64_t>::max();  // started_ms < until_ms
  uint64_t message_size = 0;                               // 0 = any
  std::optional<Op> op;
  std::optional<Mode> mode;
  uint32_t limit = 50;  // newest first; 0 = no limit
};

struct WorkerRecord {
  std::string name;
  std::string hostname;
  std::string inventory_json;  // the inventory as registered, JSON (opaque to the store)
  int64_t first_seen_ms = 0;
  int64_t last_seen_ms = 0;
};

// A sweep as stored. The spec, the plan and the report are JSON documents that the
// coordinator writes and reads (opaque to the store); the columns are what lists and filters use.
struct SweepRecord {
  std::string id;     // "s-20261123T020000-1a2b"
  std::string state;  // queued | running | finished | cancelled | interrupted | failed
  std::string pattern;
  std::string name;
  std::string spec_json;
  std::string plan_json;
  std::string report_json;  // verdicts and suspects, once judged
  int64_t created_ms = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  uint32_t tests_total = 0;
  std::string reason;   // why failed/cancelled/interrupted
  std::string verdict;  // PASS | FAIL | "" before judged
};

// A planned test of a sweep that has started but has no stored result yet. After a
// coordinator restart these are the tests that were in flight.
struct SweepTestStart {
  int plan_index = 0;
  std::string test_id;
  int64_t started_ms = 0;
};

// One firing (or non-firing) of a schedule.
struct ScheduleRun {
  std::string schedule;  // schedule name
  int64_t due_ms = 0;    // when it was due (unix ms)
  std::string state;     // started | missed | skipped-overlap
  std::string sweep_id;  // for started
  int64_t recorded_ms = 0;
  std::string detail;
};

class ResultStore {
 public:
  virtual ~ResultStore() = default;
  // Inserts a finished result; returns its row id. A full disk or I/O error is a Status
  // (kResourceExhausted for SQLITE_FULL) and nothing half-written stays behind.
  virtual Result<int64_t> insertResult(const TestResult& result) = 0;
  virtual Result<std::vector<TestResult>> queryResults(const ResultQuery& query) = 0;
  virtual Result<std::optional<TestResult>> getResult(const std::string& test_id) = 0;
  // Remembers a worker's latest inventory (upsert by name).
  virtual Status upsertWorker(const WorkerRecord& worker) = 0;
  virtual Result<std::vector<WorkerRecord>> listWorkers() = 0;
  // Inserts many results in one transaction (all or none); returns their row ids in order. A
  // refused row (empty or duplicate test_id, ...) fails the whole call and the Status names it.
  virtual Result<std::vector<int64_t>> insertResults(const std::vector<TestResult>& results) = 0;
  // How many results match `query` (its limit is ignored): the M of "N of M".
  virtual Result<uint64_t> countResults(const ResultQuery& query) = 0;
  // The pair's results, newest first (equal times: the later insertion first). A test from a
  // worker to itself (src == dst) is listed once. Empty src or dst is kInvalidArgument.
  virtual Result<std::vector<TestResult>> queryHistory(const HistoryQuery& query) = 0;
};

// Sweeps, their progress markers, and schedule history. Same thread contract.
class SweepStore {
 public:
  virtual ~SweepStore() = default;
  // A duplicate id is kInvalidArgument.
  virtual Status createSweep(const SweepRecord& sweep) = 0;
  // Overwrites every column but id and created_ms; an unknown id is kNotFound.
  virtual Status updateSweep(const SweepRecord& sweep) = 0;
  virtual Result<std::optional<SweepRecord>> getSweep(const std::string& id) = 0;
  // Newest first; `state` "" = any. limit 0 = no limit.
  virtual Result<std::vector<SweepRecord>> listSweeps(uint32_t limit, const std::string& state) = 0;
  // Marks planned test `start.plan_index` of the sweep as started (before it runs). Marking the
  // same plan index again (a re-run) replaces the marker; an unknown sweep is kNotFound.
  virtual Status markSweepTestStarted(const std::string& sweep_id, const SweepTestStart& start) = 0;
  // Started tests of the sweep that have no result row (results.run_id = sweep id with the
  // same plan_index). After a restart these were in flight.
  virtual Result<std::vector<SweepTestStart>> unfinishedSweepTests(const std::string& sweep_id) = 0;
  virtual Status recordScheduleRun(const ScheduleRun& run) = 0;
  // Newest first by due_ms (equal due times: the later record first). limit 0 = no limit.
  virtual Result<std::vector<ScheduleRun>> scheduleRuns(const std::string& schedule,
                                                        uint32_t limit) = 0;
};

}  // namespace gdrmesh
