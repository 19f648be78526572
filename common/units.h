// Parsing and printing of sizes and durations for CLI flags and reports.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace gdrmesh {

// Parses "65536", "64KiB", "64K", "1MiB", "1M", "2GiB". Suffixes are binary (1024).
// Decimal-looking suffixes ("KB", "MB") are rejected as ambiguous. `field` names the flag in
// the error ("--size").
Result<uint64_t> parseSize(std::string_view text, std::string_view field);

// 65536 -> "64KiB", 1000 -> "1000B".
std::string formatSize(uint64_t bytes);

// Parses "30s", "5m", "1h", "250ms" or a plain number of seconds.
Result<double> parseDurationSeconds(std::string_view text, std::string_view field);

// Current time as RFC 3339 UTC with milliseconds: "2026-11-22T15:11:07.123Z".
std::string nowRfc3339();
std::string formatRfc3339(int64_t unix_ms);
int64_t nowUnixMs();

}  // namespace gdrmesh
