// A SweepStore that forwards every call to another: the base of test decorators that hold or
// watch one kind of write (a sweep's final report, a progress checkpoint) over a real store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/store/store.h"

namespace gdrmesh::testing {

class ForwardingSweepStore : public SweepStore {
 public:
  explicit ForwardingSweepStore(SweepStore& inner) : inner_(inner) {}

  Status updateSweep(const SweepRecord& sweep) override { return inner_.updateSweep(sweep); }
  Status createSweep(const SweepRecord& sweep) override { return inner_.createSweep(sweep); }
  Result<std::optional<SweepRecord>> getSweep(const std::string& id) override {
    return inner_.getSweep(id);
  }
  Result<std::vector<SweepRecord>> listSweeps(uint32_t limit, const std::string& state) override {
    return inner_.listSweeps(limit, state);
  }
  Status markSweepTestStarted(const std::string& sweep_id, const SweepTestStart& start) override {
    return inner_.markSweepTestStarted(sweep_id, start);
  }
  Result<std::vector<SweepTestStart>> unfinishedSweepTests(const std::string& sweep_id) override {
    return inner_.unfinishedSweepTests(sweep_id);
  }
  Status recordScheduleRun(const ScheduleRun& run) override {
    return inner_.recordScheduleRun(run);
  }
  Result<std::vector<ScheduleRun>> scheduleRuns(const std::string& schedule,
                                                uint32_t limit) override {
    return inner_.scheduleRuns(schedule, limit);
  }
  Status aggregateSweep(const std::string& sweep_id, uint32_t plan_size) override {
    return inner_.aggregateSweep(sweep_id, plan_size);
  }
  Result<SweepTotals> sweepTotals(const std::string& sweep_id, uint32_t plan_size) override {
    return inner_.sweepTotals(sweep_id, plan_size);
  }
  Result<std::vector<SweepRecord>> sweepsWithoutAggregates(int64_t created_before_ms,
                                                           uint32_t limit) override {
    return inner_.sweepsWithoutAggregates(created_before_ms, limit);
  }
  Result<std::vector<PairAggregate>> sweepAggregates(const std::string& sweep_id) override {
    return inner_.sweepAggregates(sweep_id);
  }
  Result<std::vector<PairAggregate>> pairHistory(const std::string& src, const std::string& dst,
                                                 int64_t before_ms, uint32_t limit) override {
    return inner_.pairHistory(src, dst, before_ms, limit);
  }
  Status clearSweepReport(const std::string& sweep_id) override {
    return inner_.clearSweepReport(sweep_id);
  }
  Status appendSweepVerdicts(const std::string& sweep_id,
                             const std::vector<VerdictRecord>& verdicts) override {
    return inner_.appendSweepVerdicts(sweep_id, verdicts);
  }
  Status putSweepReportSummary(const std::string& sweep_id,
                               const SweepReportSummary& summary) override {
    return inner_.putSweepReportSummary(sweep_id, summary);
  }
  Result<std::optional<SweepReportSummary>> sweepReportSummary(
      const std::string& sweep_id) override {
    return inner_.sweepReportSummary(sweep_id);
  }
  Result<std::vector<VerdictRecord>> sweepVerdicts(const VerdictQuery& query) override {
    return inner_.sweepVerdicts(query);
  }
  Result<uint64_t> countSweepVerdicts(const VerdictQuery& query) override {
    return inner_.countSweepVerdicts(query);
  }

 protected:
  SweepStore& inner_;
};

}  // namespace gdrmesh::testing
