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
std::string workersTable(const std::vector<WorkerView>& workers);
std::string resultsTable(const std::vector<TestResult>& rows);
// One row per message size: the figures of a --sweep.
std::string sweepTable(const std::vector<TestResult>& rows);
// Several lines describing one result, figures with their units.
std::string resultDetail(const TestResult& r);
// Simple fixed-width table; the first row is the header.
std::string renderTable(const std::vector<std::vector<std::string>>& rows);
std::string fmt(double v, int precision);

}  // namespace gdrmesh::cli
