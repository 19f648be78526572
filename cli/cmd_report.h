// What `gdrmesh report` and `gdrmesh sweep show --matrix` share: a sweep's report in domain types
// (the command converts GetSweep's and ListWorkers' answers once, where it calls them), with the
// sweep's config parsed and the workers' stored inventories. No protobuf here.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/inventory.h"
#include "coordinator/orchestrator/cluster_config.h"
#include "coordinator/orchestrator/sweep_reports.h"

namespace gdrmesh::cli {

struct SweepView {
  SweepReportData data;
  std::unique_ptr<ClusterConfig> config;  // nullptr: the sweep has no config (or a bad one)
  std::string config_error;
  std::vector<WorkerStatus> workers;  // ListWorkers; empty when it failed
};

// The view of a report and the workers (listWorkersQuietly): parses the sweep's stored config.
SweepView sweepView(SweepReportData data, std::vector<WorkerStatus> workers);

// The terminal matrix of a sweep (cli/report/matrix.h).
std::string sweepMatrixText(const SweepView& view, size_t max_hosts, bool colour);

// Colour on stdout: a terminal and NO_COLOR unset or empty.
bool stdoutWantsColour();

}  // namespace gdrmesh::cli
