// History, comparison, schedule and node-action messages: wire <-> domain, at the service edge
// and in the CLI's client glue (the only places that see both).
#pragma once

#include "common/status.h"
#include "coordinator/orchestrator/history.h"
#include "coordinator/orchestrator/scheduler.h"
#include "coordinator/store/store.h"
#include "gdrmesh/v1/gdrmesh.pb.h"

namespace gdrmesh::convert {

// Validates as it converts: errors name the field (as the CLI spells it) and the fix.
Result<HistoryQuery> fromProto(const v1::HistoryRequest& in);
void toProto(const ComparisonRow& in, v1::ComparisonRow* out);
void toProto(const SweepComparison& in, v1::CompareSweepsResponse* out);
void toProto(const ScheduleSummary& in, v1::ScheduleInfo* out);
void toProto(const ActionRecord& in, v1::NodeAction* out);

// Wire -> domain for clients that print them. Lenient: an unknown change keeps `unchanged`, an
// UNSPECIFIED status is absent.
ComparisonRow fromProto(const v1::ComparisonRow& in);
SweepComparison fromProto(const v1::CompareSweepsResponse& in);
ScheduleSummary fromProto(const v1::ScheduleInfo& in);
ActionRecord fromProto(const v1::NodeAction& in);

}  // namespace gdrmesh::convert
