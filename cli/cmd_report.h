// What `gdrmesh report` and `gdrmesh sweep show --matrix` share: the wire report converted once
// to domain types, with the sweep's config parsed and the workers' stored inventories.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/control.h"
#include "coordinator/orchestrator/cluster_config.h"
#include "coordinator/orchestrator/sweep_manager.h"

namespace gdrmesh::cli {

struct SweepView {
  SweepReportData data;
  std::string spec_error;                 // the stored spec no longer validates
  std::unique_ptr<ClusterConfig> config;  // nullptr: the sweep has no config (or a bad one)
  std::string config_error;
  std::vector<WorkerStatus> workers;  // ListWorkers; empty when it failed
  std::string workers_error;
};

// Converts `report` (and the ListWorkers answer, `workers`) into a SweepView.
SweepView sweepView(const pb::SweepReport& report, const std::vector<pb::WorkerInfo>& workers);

// Asks ListWorkers; on failure returns an empty list and sets `error`.
std::vector<pb::WorkerInfo> listWorkersQuietly(pb::ControlService::Stub& stub, std::string* error);

// The terminal matrix of a sweep (cli/report/matrix.h).
std::string sweepMatrixText(const SweepView& view, size_t max_hosts, bool colour);

// Colour on stdout: a terminal and NO_COLOR unset or empty.
bool stdoutWantsColour();

}  // namespace gdrmesh::cli
