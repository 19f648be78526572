// History messages: domain -> wire, at the service edge (the only place that sees both).
#pragma once

#include "common/status.h"
#include "coordinator/orchestrator/history.h"
#include "coordinator/store/store.h"
#include "gdrmesh/v1/gdrmesh.pb.h"

namespace gdrmesh::convert {

// Validates as it converts: errors name the field (as the CLI spells it) and the fix.
Result<HistoryQuery> fromProto(const v1::HistoryRequest& in);
void toProto(const ComparisonRow& in, v1::ComparisonRow* out);
void toProto(const SweepComparison& in, v1::CompareSweepsResponse* out);

}  // namespace gdrmesh::convert
