// Human tables and JSON documents printed by the client commands.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/inventory.h"
#include "common/result.h"
#include "gdrmesh/v1/gdrmesh.pb.h"

namespace gdrmesh::cli {

using WorkerView = WorkerStatus;

nlohmann::json workersJson(const std::vector<WorkerView>& workers);
// A transport's capabilities in a table cell: its name, then what a user picks by flag: the GPU
// registration paths, write_imm ("imm", or "imm(bw)" when in one mode only), rdma_cm ("cm"),
// --bidir, --inline. "verbs[gpu:dmabuf/peermem/staged imm cm bidir inline]". `-o json` has all.
std::string capabilityCell(const TransportCapabilities& c);
// Notes (why a transport is missing, ...) are folded to a count per worker unless `notes`.
std::string workersTable(const std::vector<WorkerView>& workers, bool notes = false);
std::string workersCsv(const std::vector<WorkerView>& workers);
// With the test and run ids. `total` > rows.size() adds "N of M results" below the table.
std::string resultsTable(const std::vector<TestResult>& rows, uint64_t total = 0);

// ---------------------------------------------------------------- CSV (RFC 4180)
// A field quoted when it holds a comma, a quote, CR or LF (quotes doubled).
std::string csvField(const std::string& v);
// Rows joined with CRLF; the first row is the header.
std::string csvRows(const std::vector<std::vector<std::string>>& rows);
// Results, one row each, every field in fixed columns (docs/json.md, "CSV").
std::string resultsCsv(const std::vector<TestResult>& rows);
// Wire messages of one type, one row each: their JSON fields (docs/json.md) as columns in field
// order, nested messages as parent.child, repeated scalars joined with "; ". `prototype` (the
// type's default instance) gives the header when there are no records.
std::string messagesCsv(const std::vector<const google::protobuf::Message*>& records,
                        const google::protobuf::Message& prototype);

// ---------------------------------------------------------------- history
// A pair's results over time: time, run, test id, direction, op, mode, size, figure, status,
// transport and data path, reason.
std::string historyTable(const std::vector<TestResult>& rows);
// The comparison: a row per (pair, op, mode, size), worst regression first, and a summary line.
std::string compareTable(const v1::CompareSweepsResponse& c);
std::string compareSummary(const v1::CompareSweepsResponse& c);
std::string compareCsv(const v1::CompareSweepsResponse& c);
// One result, every field: both sides' endpoints, data path and registration, every figure,
// counters, integrity and the reason.
std::string resultWhole(const TestResult& r);
// One row per message size: the figures of a --sweep.
std::string sweepTable(const std::vector<TestResult>& rows);
// Several lines describing one result, figures with their units.
std::string resultDetail(const TestResult& r);
// Simple fixed-width table; the first row is the header.
std::string renderTable(const std::vector<std::vector<std::string>>& rows);
std::string fmt(double v, int precision);
// "h1/mlx5_0 gpu0": a result's side as printed.
std::string endpointLabel(const EndpointRecord& e);
// "verbs cuda(dmabuf)->cuda(dmabuf) GPUDirect": the transport and memory path that ran.
std::string dataPath(const TestResult& r);
// What the data check says: IntegrityReport::toString(), or "simulated: no data moved" for a
// simulated result (its worker claims a check, but no byte moved).
std::string integrityText(const TestResult& r);
// The same in a table cell: "ok", "12 B wrong", "-" (not checked), "simulated: no data moved".
std::string integrityCell(const TestResult& r);
// "12.345 Gb/s" or "3.21 us" or "-".
std::string mainFigure(const TestResult& r);

// ---------------------------------------------------------------- sweeps
// Sweep messages are printed from their wire form (the CLI has no sweep domain types).

// The words of a sweep (docs/json.md, "Words"). A test RAN; its data was VERIFIED (status
// PASSED), NOT VERIFIED (FAILED or ERROR), or it was SKIPPED. A verdict is PASS (every threshold
// met), FAIL (a threshold missed, or the data not verified) or SKIP; the sweep's verdict is
// FAIL when any verdict is. Tests never "pass" or "fail": those words are the verdicts'.
// "15/15 ran: 15 data verified, 0 not verified, 0 skipped"
std::string testCountsText(const v1::SweepProgress& p);
// "3 PASS, 12 FAIL, 0 SKIP"
std::string verdictCountsText(uint64_t pass, uint64_t fail, uint64_t skip);
// What ran, one row per part (sweep of an acceptance run's config); "" for a plain sweep.
std::string sweepPartsText(const v1::SweepReport& r);
// Per (op, mode, size): min, median and max over pairs, the worst pairs and hosts; "" when the
// report has no figures.
std::string figureSummaryText(const v1::SweepReport& r);

// "42s", "1m02s", "2h03m"; "-" for negative values.
std::string formatElapsed(double seconds);
// "sweep s-1 running  412/1023 tests  3 failed  elapsed 1m02s  ETA 2m10s"
std::string progressLine(const v1::SweepProgress& p);

// When a non-terminal output shows progress: the first update, every change of state, and
// each time another ~5% of the tests are done.
class ProgressThrottle {
 public:
  bool shouldPrint(const v1::SweepProgress& p);

 private:
  std::string last_state_;
  int last_bucket_ = -1;
};

struct ReportOptions {
  bool all_verdicts = false;  // every verdict, not only the failing ones (`sweep judge`)
  bool results = false;       // the results table (`sweep show --results`)
};
// Summary, notes, failing verdicts, ranked suspects with their evidence.
std::string sweepReportText(const v1::SweepReport& r, const ReportOptions& opts);
std::string sweepsTable(const std::vector<v1::SweepProgress>& sweeps);
// Next run in local time and UTC. `now_ms` only for "in 3h".
std::string schedulesTable(const std::vector<v1::ScheduleInfo>& schedules, int64_t now_ms);
// "2026-11-22 16:11 CET" in the local time zone.
std::string formatLocalTime(int64_t unix_ms);
// A wire message as JSON: proto field names, every field present (docs/json.md).
std::string protoJson(const google::protobuf::Message& m);

}  // namespace gdrmesh::cli
