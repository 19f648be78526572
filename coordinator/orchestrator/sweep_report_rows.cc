#include "coordinator/orchestrator/sweep_report_rows.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "coordinator/orchestrator/sweep_summary.h"

namespace gdrmesh {

VerdictRecord verdictRecordOf(PairVerdict v, uint64_t seq) {
  VerdictRecord r;
  r.seq = seq;
  r.test_id = std::move(v.test_id);
  r.src = std::move(v.src);
  r.dst = std::move(v.dst);
  r.op = v.op;
  r.mode = v.mode;
  r.message_size = v.message_size;
  r.verdict = toString(v.verdict);
  r.reasons = std::move(v.reasons);
  r.value = std::isfinite(v.value) ? v.value : 0.0;
  r.unit = std::move(v.unit);
  r.topo_class = std::move(v.topo_class);
  r.retest = v.retest;
  return r;
}

PairVerdict pairVerdictOf(VerdictRecord r) {
  PairVerdict v;
  v.test_id = std::move(r.test_id);
  v.src = std::move(r.src);
  v.dst = std::move(r.dst);
  v.op = r.op;
  v.mode = r.mode;
  v.message_size = r.message_size;
  v.verdict = r.verdict == "PASS"   ? VerdictKind::kPass
              : r.verdict == "FAIL" ? VerdictKind::kFail
                                    : VerdictKind::kSkip;
  v.reasons = std::move(r.reasons);
  v.value = r.value;
  v.unit = std::move(r.unit);
  v.topo_class = std::move(r.topo_class);
  v.retest = r.retest;
  return v;
}

SuspectRecord suspectRecordOf(const Suspect& s) {
  return {s.kind, s.name, s.score, s.evidence};
}

Suspect suspectOf(SuspectRecord r) {
  return {std::move(r.kind), std::move(r.name), r.score, std::move(r.evidence)};
}

std::string verdictWord(VerdictFilter filter) {
  return filter == VerdictFilter::kFailed ? "FAIL" : "";
}

Status storeSweepReport(SweepReportStore& store, const std::string& sweep_id, size_t verdict_count,
                        const std::function<PairVerdict(size_t i)>& verdict,
                        const std::vector<Suspect>& suspects, const std::vector<std::string>& notes,
                        size_t batch, const std::vector<FigureSummary>* figures_given) {
  GDR_RETURN_IF_ERROR(store.clearSweepReport(sweep_id));
  FigureAccumulator figures;
  std::vector<VerdictRecord> rows;
  rows.reserve(std::min(batch, verdict_count));
  for (size_t i = 0; i < verdict_count; ++i) {
    PairVerdict v = verdict(i);
    // The figures of the verdicts as they read back (the value made finite).
    if (!std::isfinite(v.value)) v.value = 0.0;
    if (figures_given == nullptr) figures.add(v);
    rows.push_back(verdictRecordOf(std::move(v), i));
    if (rows.size() >= batch || i + 1 == verdict_count) {
      GDR_RETURN_IF_ERROR(store.appendSweepVerdicts(sweep_id, rows));
      rows.clear();
    }
  }
  SweepReportSummary summary;
  for (const Suspect& s : suspects) summary.suspects.push_back(suspectRecordOf(s));
  summary.notes = notes;
  summary.figures_json = figuresJson(figures_given != nullptr ? *figures_given : figures.result());
  return store.putSweepReportSummary(sweep_id, summary);
}

}  // namespace gdrmesh
