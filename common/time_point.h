// Points in time given on the command line and in API parameters (--since, --until, since=).
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace gdrmesh {

// A duration back from `now_ms` ("30d", "12h", "90m", "45s", "2w"; a plain number is seconds),
// or a UTC date or time ("2026-11-20", "2026-11-20T14:00", "2026-11-20T14:00:05Z",
// "2026-11-20 14:00"). Returns unix ms (a duration reaching before 1970 gives 0). `field` names
// the flag in the error.
Result<int64_t> parseTimePoint(std::string_view text, int64_t now_ms, std::string_view field);

}  // namespace gdrmesh
