// The JSON encoding of the coordinator's domain types: one encoder per type, shared by the CLI's
// `-o json` and `-o csv`, the status page's API and the stored sweep specs (docs/json.md, "One
// encoding"). Enums are their documented lower-case names (verdicts PASS/FAIL/SKIP and test
// statuses PASSED/... as documented), integers are JSON numbers, times are RFC 3339 UTC strings
// with the Unix milliseconds beside them (`created` and `created_ms`), GUIDs "0x..." strings.
// Fields come in a fixed order (ordered_json): CSV columns follow it. Fields are only added.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "coordinator/orchestrator/history.h"
#include "coordinator/orchestrator/scheduler.h"
#include "coordinator/orchestrator/sweep_reports.h"
#include "coordinator/orchestrator/sweep_summary.h"
#include "coordinator/orchestrator/sweep_types.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

using OrderedJson = nlohmann::ordered_json;

OrderedJson toJson(const VerdictCounts& c);  // {pass, fail, skip}
OrderedJson toJson(const SweepProgress& p);
OrderedJson toJson(const PairVerdict& v);
OrderedJson toJson(const Suspect& s);
OrderedJson toJson(const LinkVerdictRecord& l);
OrderedJson toJson(const FigureSummary& f);
OrderedJson toJson(const SweepPart& p);
OrderedJson toJson(const EndpointSelector& e);
OrderedJson toJson(const PairTestSpec& t);
OrderedJson toJson(const SweepSpec& s);
// {progress, spec, results[], verdicts[], suspects[], notes[], verdict_counts,
// verdicts_matching, results_next, parts[], figures[], links[]}.
OrderedJson toJson(const SweepReportData& r);
OrderedJson toJson(const ComparisonRow& r);
// {a, b, tolerance_pct, summary{worse, better, unchanged, new, missing}, rows[]}.
OrderedJson toJson(const SweepComparison& c);
OrderedJson toJson(const ScheduleSummary& s);
OrderedJson toJson(const ActionRecord& a);

// The encoding read back: every field the encoder writes must be present with its type (a
// document of another form, such as protobuf's JSON mapping of an older build, is refused so
// that its reader can take it). Errors name the field.
Result<SweepSpec> sweepSpecFromJson(const OrderedJson& j);
Result<SweepSpec> sweepSpecFromJsonText(const std::string& text);

// Records of one type as CSV: the encoding's fields as columns in its order, nested objects as
// parent.child, arrays of scalars joined with "; " (docs/json.md, "CSV").
std::vector<std::vector<std::string>> csvTable(const std::vector<OrderedJson>& records,
                                               const OrderedJson& prototype);

}  // namespace gdrmesh
