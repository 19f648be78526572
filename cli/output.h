// Human tables and JSON documents printed by the client commands.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/inventory.h"
#include "common/result.h"

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
// A number in full precision (%.17g), as every CSV cell of a figure.
std::string csvNumber(double v);

// ---------------------------------------------------------------- history
// A pair's results over time: time, run, test id, direction, op, mode, size, figure, status,
// transport and data path, reason.
std::string historyTable(const std::vector<TestResult>& rows);
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

}  // namespace gdrmesh::cli
