// A judged sweep's report as the store keeps it: rows of verdicts, suspects and notes
// (SweepReportStore::appendSweepVerdicts ... sweepVerdicts), converted from and to the domain's
// PairVerdict and Suspect. The sweep's end and tools that write sweeps (tests/bench/gen_history)
// store reports through storeSweepReport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "coordinator/orchestrator/sweep_summary.h"
#include "coordinator/orchestrator/sweep_types.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

// A verdict as a row at place `seq` of its report. A value that is not finite becomes 0 (what
// the row reads back as).
VerdictRecord verdictRecordOf(PairVerdict v, uint64_t seq);
PairVerdict pairVerdictOf(VerdictRecord r);
SuspectRecord suspectRecordOf(const Suspect& s);
Suspect suspectOf(SuspectRecord r);
// VerdictFilter::kAll: "", kFailed: "FAIL" (kNone asks for no rows).
std::string verdictWord(VerdictFilter filter);

// Stores a sweep's whole report: clears an earlier one, writes the verdicts (each made by
// `verdict(i)` as it is written, never all at once) in transactions of `batch` rows, and the
// suspects, notes and figures last: `figures` where the caller has summed them up already
// (the sweep's end, which serves them from memory meanwhile), else summed up over the
// verdicts as they are written.
constexpr size_t kReportVerdictBatch = 8192;
Status storeSweepReport(SweepReportStore& store, const std::string& sweep_id, size_t verdict_count,
                        const std::function<PairVerdict(size_t i)>& verdict,
                        const std::vector<Suspect>& suspects, const std::vector<std::string>& notes,
                        size_t batch = kReportVerdictBatch,
                        const std::vector<FigureSummary>* figures = nullptr);

}  // namespace gdrmesh
