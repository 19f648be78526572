// The acceptance report of one sweep, for whoever accepts the cluster: summary (verdict,
// counts, times, pattern, config and thresholds), the matrix, ranked suspects with their
// evidence, every failure with its figures and reason, and the environment of every host in
// the sweep (firmware, drivers, kernel, GPUs, preflight). Rendered as Markdown or as one
// self-contained HTML file (inline style, no script, no external asset: it opens offline).
//
// Inputs are domain types; the CLI (`gdrmesh report`) fills them from GetSweep and
// ListWorkers. Every string that a worker or a user supplied is escaped for the format.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/inventory.h"
#include "coordinator/orchestrator/cluster_config.h"
#include "coordinator/orchestrator/sweep_manager.h"

namespace gdrmesh::report {

struct ReportInput {
  SweepReportData sweep;  // with results when they could be fetched
  // Workers as the coordinator stores them (ListWorkers): inventories of the hosts in the
  // sweep. A host of the sweep missing here is reported as "no stored inventory".
  std::vector<WorkerStatus> workers;
  const ClusterConfig* config = nullptr;  // the sweep's config, parsed; nullptr = none
  std::string config_error;               // why the stored config could not be parsed
  int64_t generated_ms = 0;               // when the report was made (unix ms)
  size_t max_matrix_hosts = 0;            // 0 = the format's default (md 32, html 64)
};

std::string renderMarkdown(const ReportInput& in);
std::string renderHtml(const ReportInput& in);

// Escaping, exposed for tests.
// & < > " ' -> entities.
std::string htmlEscape(const std::string& s);
// For Markdown text and table cells: newlines become spaces; | \ ` * _ [ ] # are
// backslash-escaped; < > & become entities (no raw HTML gets through).
std::string mdEscape(const std::string& s);

// The workers a sweep touched: both sides of every verdict and result, and spec.hosts; sorted.
std::vector<std::string> sweepHosts(const SweepReportData& sweep);

}  // namespace gdrmesh::report
