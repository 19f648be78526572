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
std::string workersTable(const std::vector<WorkerView>& workers);
std::string resultsTable(const std::vector<TestResult>& rows);
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
// "12.345 Gb/s" or "3.21 us" or "-".
std::string mainFigure(const TestResult& r);

// ---------------------------------------------------------------- sweeps
// Sweep messages are printed from their wire form (the CLI has no sweep domain types).

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
