// What the sweep commands print (`sweep ...`, `sweeps`, `schedules`, `compare`, `actions`):
// tables and CSV from the coordinator's domain types, JSON in the one encoding shared with the
// status page's API (coordinator/encoding/sweep_json.h, docs/json.md). The commands convert each
// wire reply to these types once; nothing here sees protobuf.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/encoding/sweep_json.h"

namespace gdrmesh::cli {

// The words of a sweep (docs/json.md, "Words"). A test RAN; its data was VERIFIED (status
// PASSED), NOT VERIFIED (FAILED or ERROR), or it was SKIPPED. A verdict is PASS (every threshold
// met), FAIL (a threshold missed, or the data not verified) or SKIP; the sweep's verdict is
// FAIL when any verdict is. Tests never "pass" or "fail": those words are the verdicts'.
// "15/15 ran: 15 data verified, 0 not verified, 0 skipped"
std::string testCountsText(const SweepProgress& p);
// "3 PASS, 12 FAIL, 0 SKIP"
std::string verdictCountsText(uint64_t pass, uint64_t fail, uint64_t skip);
// What ran, one row per part (sweep of an acceptance run's config); "" for a plain sweep.
std::string sweepPartsText(const SweepReportData& r);
// Per (op, mode, size): min, median and max over pairs, the worst pairs and hosts; "" when the
// report has no figures.
std::string figureSummaryText(const SweepReportData& r);

// "42s", "1m02s", "2h03m"; "-" for negative values.
std::string formatElapsed(double seconds);
// "sweep s-1 running  412/1023 tests  3 failed  elapsed 1m02s  ETA 2m10s"
std::string progressLine(const SweepProgress& p);

// When a non-terminal output shows progress: the first update, every change of state, and
// each time another ~5% of the tests are done.
class ProgressThrottle {
 public:
  bool shouldPrint(const SweepProgress& p);

 private:
  std::string last_state_;
  int last_bucket_ = -1;
};

struct ReportOptions {
  bool all_verdicts = false;  // every verdict, not only the failing ones (`sweep judge`)
  bool results = false;       // the results table (`sweep show --results`)
};
// Summary, notes, failing verdicts, ranked suspects with their evidence.
std::string sweepReportText(const SweepReportData& r, const ReportOptions& opts);
std::string sweepsTable(const std::vector<SweepProgress>& sweeps);
// Next run in local time and UTC. `now_ms` only for "in 3h".
std::string schedulesTable(const std::vector<ScheduleSummary>& schedules, int64_t now_ms);
// "2026-11-22 16:11 CET" in the local time zone.
std::string formatLocalTime(int64_t unix_ms);

// The comparison: a row per (pair, op, mode, size), worst regression first, and a summary line.
std::string compareTable(const SweepComparison& c);
std::string compareSummary(const SweepComparison& c);
// Columns of docs/json.md, "CSV": change, src, dst, op, mode, message_size_bytes, ...
std::string compareCsv(const SweepComparison& c);

// TIME, NODE, ACTION, OUTCOME, ACTUATOR, SWEEP, DETAIL (cut at 100 characters: -o json has it
// whole, and the reason written on the node).
std::string actionsTable(const std::vector<ActionRecord>& actions);

// A document of the shared encoding as printed by `-o json` (indented by 2).
std::string jsonText(const OrderedJson& j);
// Records of one type, one row each: the encoding's fields as columns in its order (csvTable).
// `prototype` (a default record's encoding) gives the header when there are no records.
std::string recordsCsv(const std::vector<OrderedJson>& records, const OrderedJson& prototype);

}  // namespace gdrmesh::cli
