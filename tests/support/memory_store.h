// MemoryStore: the whole Store (coordinator/store/store.h) in memory, for unit tests that need a
// store and no file. It passes the same contract suite as SqliteStore
// (tests/unit/store/store_contract_test.h), so a test cannot rely on a difference.
//
// Thread contract: every method may be called from any thread at once (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "coordinator/store/store.h"

namespace gdrmesh::testing {

class MemoryStore final : public Store {
 public:
  // ResultRecords.
  Result<int64_t> insertResult(const TestResult& result) override;
  Result<std::vector<int64_t>> insertResults(const std::vector<TestResult>& results) override;
  Result<std::vector<TestResult>> queryResults(const ResultQuery& query) override;
  Result<std::optional<TestResult>> getResult(const std::string& test_id) override;
  Result<uint64_t> countResults(const ResultQuery& query) override;
  Result<std::vector<TestResult>> queryHistory(const HistoryQuery& query) override;
  // WorkerRecords.
  Status upsertWorker(const WorkerRecord& worker) override;
  Result<std::vector<WorkerRecord>> listWorkers() override;
  Result<bool> removeWorker(const std::string& name) override;
  // TestMarkers.
  Status markTestStarted(const TestResult& started) override;
  Status clearTestStarted(const std::string& test_id) override;
  Result<std::vector<TestResult>> unfinishedTests() override;
  // ResultRetention.
  Result<uint64_t> deleteResultsBefore(int64_t cutoff_ms, uint32_t max_rows) override;
  // SweepRecords.
  Status createSweep(const SweepRecord& sweep) override;
  Status updateSweep(const SweepRecord& sweep) override;
  Result<std::optional<SweepRecord>> getSweep(const std::string& id) override;
  Result<std::vector<SweepRecord>> listSweeps(uint32_t limit, const std::string& state) override;
  Status markSweepTestStarted(const std::string& sweep_id, const SweepTestStart& start) override;
  Result<std::vector<SweepTestStart>> unfinishedSweepTests(const std::string& sweep_id) override;
  // SweepReportStore.
  Status clearSweepReport(const std::string& sweep_id) override;
  Status appendSweepVerdicts(const std::string& sweep_id,
                             const std::vector<VerdictRecord>& verdicts) override;
  Status putSweepReportSummary(const std::string& sweep_id,
                               const SweepReportSummary& summary) override;
  Result<std::optional<SweepReportSummary>> sweepReportSummary(
      const std::string& sweep_id) override;
  Result<std::vector<VerdictRecord>> sweepVerdicts(const VerdictQuery& query) override;
  Result<uint64_t> countSweepVerdicts(const VerdictQuery& query) override;
  // ScheduleHistory.
  Status recordScheduleRun(const ScheduleRun& run) override;
  Result<std::vector<ScheduleRun>> scheduleRuns(const std::string& schedule,
                                                uint32_t limit) override;
  // SweepAggregates.
  Status aggregateSweep(const std::string& sweep_id, uint32_t plan_size) override;
  Result<SweepTotals> sweepTotals(const std::string& sweep_id, uint32_t plan_size) override;
  Result<std::vector<SweepRecord>> sweepsWithoutAggregates(int64_t created_before_ms,
                                                           uint32_t limit) override;
  Result<std::vector<PairAggregate>> sweepAggregates(const std::string& sweep_id) override;
  Result<std::vector<PairAggregate>> pairHistory(const std::string& src, const std::string& dst,
                                                 int64_t before_ms, uint32_t limit) override;
  // ActionStore.
  Result<int64_t> recordAction(const ActionRecord& action) override;
  Result<std::vector<ActionRecord>> listActions(const ActionQuery& query) override;
  // HookStateStore.
  Result<std::set<std::string>> hookSuspects() override;
  Status setHookSuspects(const std::set<std::string>& keys) override;
  // TestPathStore.
  Status putTestPaths(const std::vector<PathHopRecord>& hops) override;
  Result<std::vector<PathHopRecord>> testPath(const std::string& test_id) override;
  Result<std::vector<PathHopRecord>> sweepPaths(const std::string& sweep_id) override;
  // LinkCounterStore.
  Status putLinkCounters(const std::vector<LinkCounterRecord>& rows) override;
  Result<std::vector<LinkCounterRecord>> sweepLinkCounters(const std::string& sweep_id) override;
  Status putLinkVerdicts(const std::string& sweep_id,
                         const std::vector<LinkVerdictRecord>& rows) override;
  Result<std::vector<LinkVerdictRecord>> sweepLinkVerdicts(const std::string& sweep_id) override;
  // FabricHistory.
  Result<int64_t> recordFabricSnapshot(const FabricSnapshotRecord& snapshot,
                                       const std::vector<FabricFindingRecord>& findings) override;
  Result<std::vector<FabricSnapshotRecord>> listFabricSnapshots(
      const FabricSnapshotQuery& query) override;
  Result<std::optional<FabricSnapshotRecord>> getFabricSnapshot(int64_t id) override;
  Result<std::vector<FabricFindingRecord>> fabricFindings(int64_t snapshot_id) override;
  Result<uint64_t> dropFabricSnapshotsBefore(int64_t cutoff_ms, uint32_t max_rows) override;

 private:
  struct StoredSweep {
    SweepRecord record;
    int64_t rowid = 0;  // insertion order
  };
  Status insertLocked(const std::vector<TestResult>& rows, std::vector<int64_t>* ids);
  std::vector<const TestResult*> matchingLocked(const ResultQuery& query) const;
  Status sweepMustExistLocked(const std::string& sweep_id) const;
  SweepTotals countedTotalsLocked(const std::string& sweep_id, uint32_t plan_size) const;
  bool verdictKept(const VerdictQuery& q, const VerdictRecord& v) const;

  mutable std::mutex mu_;
  int64_t next_id_ = 0;
  std::map<int64_t, TestResult> results_;        // by row id
  std::map<std::string, int64_t> result_ids_;    // test_id -> row id
  std::map<std::string, WorkerRecord> workers_;  // by name
  std::map<std::string, TestResult> test_starts_;
  std::map<std::string, StoredSweep> sweeps_;
  int64_t next_sweep_rowid_ = 0;
  std::map<std::pair<std::string, int>, SweepTestStart> sweep_starts_;
  std::vector<std::pair<int64_t, ScheduleRun>> schedule_runs_;  // (insertion order, run)
  std::map<std::string, std::map<uint64_t, VerdictRecord>> verdicts_;
  std::map<std::string, SweepReportSummary> summaries_;
  std::map<std::string, std::vector<PairAggregate>> aggregates_;
  std::map<std::string, SweepTotals> totals_;
  std::vector<ActionRecord> actions_;
  std::set<std::string> hook_suspects_;
  // test id -> (direction, hop) -> hop: the order testPath and sweepPaths read.
  std::map<std::string, std::map<std::pair<std::string, int>, PathHopRecord>> paths_;
  // sweep -> (round, switch GUID, port, counter) -> row: the order sweepLinkCounters reads.
  std::map<std::string, std::map<std::tuple<int, uint64_t, int, std::string>, LinkCounterRecord>>
      link_counters_;
  // sweep -> link -> verdict.
  std::map<std::string, std::map<std::string, LinkVerdictRecord>> link_verdicts_;
  // By id (recording order), with their findings.
  std::map<int64_t, std::pair<FabricSnapshotRecord, std::vector<FabricFindingRecord>>> fabric_;
};

}  // namespace gdrmesh::testing
