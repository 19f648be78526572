// The status page's query parameters: each JSON API endpoint's parameters parsed into the
// domain query it answers, or a ParamError naming the parameter, what is wrong and the fix
// (the server answers it as 400 {"error", "parameter", "fix"}). Pure functions over the
// parameters as the HTTP library decoded them (a multimap: a repeated parameter is an error),
// so they are unit-tested and fuzzed without a server (tests/fuzz/http_query).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "coordinator/orchestrator/history.h"
#include "coordinator/orchestrator/sweep_types.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

using QueryParams = std::multimap<std::string, std::string>;

struct ParamError {
  std::string parameter;  // "" when the request as a whole is wrong
  std::string message;
  std::string fix;
};

// The bounds every endpoint shares.
inline constexpr uint32_t kApiMaxLimit = 10000;
inline constexpr uint64_t kApiMaxOffset = 999999999;
inline constexpr uint32_t kApiResultsDefaultLimit = 50;
inline constexpr uint32_t kApiSummaryDefaultLimit = 500;
inline constexpr uint32_t kApiSweepsDefaultLimit = 20;

// GET /api/sweeps/ID: which verdicts, and which page of them (VerdictFilter, VerdictPage:
// coordinator/orchestrator/sweep_types.h); 1000 verdicts unless the query says.
inline constexpr uint32_t kApiSweepVerdictsDefaultLimit = 1000;

template <typename T>
using ParsedQuery = std::variant<T, ParamError>;

// An endpoint that takes no parameters (/api/workers, /metrics, /api/results/ID).
std::optional<ParamError> parseNoParams(const QueryParams& p);
// /api/results: limit (50), worker, status, run_id.
ParsedQuery<ResultQuery> parseResultsQuery(const QueryParams& p);
// /api/history: src, dst (required), since, until (relative to now_ms), size, op, mode,
// direction, run_id, limit (50).
ParsedQuery<HistoryQuery> parseHistoryParams(const QueryParams& p, int64_t now_ms);
// /api/compare: a, b (required sweep ids), tolerance (percent, default
// HistoryQueries::kDefaultTolerancePct).
struct CompareQuery {
  std::string a, b;
  double tolerance_pct = 0;
};
ParsedQuery<CompareQuery> parseCompareQuery(const QueryParams& p);
// /api/summary and /api/sweeps: limit only, with the endpoint's default.
ParsedQuery<uint32_t> parseLimitOnly(const QueryParams& p, uint32_t default_limit);
// /api/sweeps/ID: verdicts (all), offset (0), limit (1000).
struct SweepQuery {
  VerdictFilter filter = VerdictFilter::kAll;
  VerdictPage page{0, kApiSweepVerdictsDefaultLimit};
};
ParsedQuery<SweepQuery> parseSweepQuery(const QueryParams& p);

// /api/sweeps/ID/fabric: switch (a switch's name: 1-256 characters, no control characters;
// "" = every switch).
struct FabricQuery {
  std::string only_switch;
};
ParsedQuery<FabricQuery> parseFabricQuery(const QueryParams& p);

// Path ids: a sweep id (A-Z a-z 0-9 - _ . :, 1-128) and a test id (1-128, no control
// characters).
bool validSweepId(const std::string& id);
bool validTestId(const std::string& id);

}  // namespace gdrmesh
