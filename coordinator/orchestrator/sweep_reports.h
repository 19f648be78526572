// The reports of sweeps: progress, reports and lists, read from the stored rows (sweeps,
// verdicts, suspects, results: paged, filtered and counted in the store) and, for a sweep this
// coordinator ran recently, from its live state on the board; and `sweep judge`, the verdicts
// recomputed from the stored results.
//
// Thread contract: thread-safe; never blocks on a running sweep.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "coordinator/orchestrator/sweep_board.h"
#include "coordinator/orchestrator/sweep_run.h"
#include "coordinator/orchestrator/sweep_summary.h"
#include "coordinator/orchestrator/sweep_types.h"

namespace gdrmesh {

// What a reader asks of a sweep's report. A 1024-host all-pairs has 523,776 verdicts and
// results: readers page through them (verdicts and results are rows of the store, paged, filtered
// and counted in SQL).
struct SweepReportQuery {
  bool with_results = false;
  uint32_t results_limit = 0;  // 0 = all
  std::string results_after;   // SweepReportData::results_next of the page before; "" = first
  VerdictFilter verdicts = VerdictFilter::kAll;
  VerdictPage page;
};

struct SweepReportData {
  SweepProgress progress;
  SweepSpec spec;
  std::vector<TestResult> results;    // the page of them asked for, in plan order
  std::vector<PairVerdict> verdicts;  // the page of them asked for, in plan order
  std::vector<Suspect> suspects;
  std::vector<std::string> notes;
  VerdictCounts verdict_counts;        // over every verdict
  uint64_t verdicts_matching = 0;      // verdicts the filter keeps, on every page
  std::string results_next;            // the cursor of the next page of results; "" = no more
  std::vector<SweepPart> parts;        // what ran: the config's sweeps, or the spec as one part
  std::vector<FigureSummary> figures;  // over every verdict, not only the page
  // The links' verdicts of a sweep on a discovered fabric with a fabric reader (by link name).
  std::vector<LinkVerdictRecord> links;
};

class SweepReports {
 public:
  SweepReports(SweepDeps deps, SweepBoard& board);

  Result<SweepProgress> progress(const std::string& id);
  Result<SweepReportData> report(const std::string& id, const SweepReportQuery& query = {});
  // Recomputes verdicts from the stored rows: same rows and config, same answer. The result
  // carries the page of verdicts `page` asks for and no results.
  Result<SweepReportData> judge(const std::string& id, const std::string& config_yaml,
                                const std::string& baseline, VerdictFilter filter = {},
                                VerdictPage page = {});
  Result<std::vector<SweepProgress>> list(uint32_t limit);
  // Returns once every result of sweep `id` is stored: at once unless it has just been judged
  // while the writer stores its last results; kUnavailable if that takes more than 30 s.
  Status awaitResults(const std::string& id);

 private:
  // The live snapshot when the sweep is recent, else from the stored row (`rec`; nullopt:
  // kNotFound) and the store's counts.
  Result<SweepProgress> progressOf(const std::string& id, const std::optional<SweepRecord>& rec);
  // The stored report of `rec` into `d`: the page of verdicts `query` asks for, suspects,
  // notes, counts and figures (none while the sweep runs or its report is being stored).
  Status readReport(const SweepRecord& rec, const SweepReportQuery& query, SweepReportData* d);
  // The figures of a report converted by migration 9 (none stored): summed up over its verdict
  // rows once and stored with it.
  Result<std::vector<FigureSummary>> figuresOfConverted(const std::string& id,
                                                        SweepReportSummary summary);
  // A stored sweep's parts: its spec (and config's sweeps), with the plan's counts per part.
  std::vector<SweepPart> partsOf(const SweepSpec& spec, const std::string& plan_json) const;
  // True while `id` runs here: its stored report (if any) is not its own.
  bool runningHere(const std::string& id);
  // Fills `d` from memory and returns true while `id` is judged and its report rows are
  // being stored (LiveSweep::report_pending); false otherwise.
  bool readPendingReport(const std::string& id, const SweepReportQuery& query, SweepReportData* d);

  SweepDeps deps_;
  SweepBoard& board_;
};

}  // namespace gdrmesh
