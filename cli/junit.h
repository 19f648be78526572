// JUnit XML for CI systems (`gdrmesh accept --junit FILE`): one <testsuite> per sweep (each
// sweep of an acceptance run's config: SweepReportData::parts), one <testcase> per pair and
// message size, of class gdrmesh.<that sweep's pattern>. The document model is plain structs so
// the writer is tested on its own; junitFromReport() fills it from a sweep report in domain types
// (the command converts the wire report once; nothing here sees protobuf).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coordinator/orchestrator/sweep_reports.h"

namespace gdrmesh::cli {

struct JUnitCase {
  enum class Outcome { kPass, kFail, kSkip };
  std::string classname;  // "gdrmesh.all-pairs"
  std::string name;       // "h1/mlx5_0 -> h2/mlx5_0 64KiB write bw"
  double time_seconds = 0;
  Outcome outcome = Outcome::kPass;
  std::string message;     // <failure message=...> or <skipped message=...>
  std::string detail;      // body of <failure>: figures, threshold reasons, the result's reason
  std::string system_out;  // transport and memory path
};

struct JUnitSuite {
  std::string name;       // "<sweep id> <pattern>"
  std::string timestamp;  // "2026-11-22T15:11:07" (UTC)
  double time_seconds = 0;
  std::vector<std::pair<std::string, std::string>> properties;
  std::vector<JUnitCase> cases;
};

// Text for an XML attribute or element: & < > " ' escaped, control characters that XML 1.0
// forbids (all below 0x20 except tab, newline, carriage return) dropped.
std::string xmlEscape(std::string_view text);

// The whole document, <?xml ...?> and <testsuites> included.
std::string renderJUnit(const std::vector<JUnitSuite>& suites);

// One suite per part of the report, results placed by plan index (retests by op, mode and size);
// from a coordinator that sends no parts, one suite per run (results grouped by run_id). Cases
// are matched with their verdicts by test id. A case "sweep verdict" fails when the sweep did
// not finish with verdict PASS, so the document fails exactly when `gdrmesh accept` does.
// `lost`: why the CLI has no report of the sweep (it stopped following, or lost the sweep's
// progress); `report` then holds the progress as the sweep started, its state reads "unknown"
// and the sweep verdict fails with `lost` as its reason. "" for a report that was fetched.
std::vector<JUnitSuite> junitFromReport(const SweepReportData& report,
                                        const std::string& coordinator,
                                        const std::string& lost = "");

}  // namespace gdrmesh::cli
