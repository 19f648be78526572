// The one JSON encoding of a FigureSummary (docs/json.md, "figures[]"): what `-o json` prints and
// the status page serves (coordinator/encoding/sweep_json.h's toJson is this), and what a stored
// report keeps (sweep_summary.h's figuresJson, an array of these). It lives beside its type so
// that the orchestrator, which stores the figures, and the encoding library share one encoder.
#pragma once

#include <nlohmann/json.hpp>

#include "coordinator/orchestrator/sweep_summary.h"

namespace gdrmesh {

// {op, mode, message_size, unit, pairs, min, median, max, worst[{src, dst, value}],
// worst_hosts[{host, median, pairs}]}, in that order; a figure that is not finite is null.
nlohmann::ordered_json figureJson(const FigureSummary& f);

}  // namespace gdrmesh
