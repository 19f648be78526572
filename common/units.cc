#include "common/units.h"

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>

namespace gdrmesh {

Result<uint64_t> parseSize(std::string_view text, std::string_view field) {
  const std::string f(field);
  if (text.empty()) return invalidArgument(f + ": empty size", "give bytes, e.g. 65536 or 64KiB");
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
      return invalidArgument(f + ": '" + std::string(text) + "' is too large");
    }
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) {
    return invalidArgument(f + ": '" + std::string(text) + "' is not a size",
                           "give bytes, e.g. 65536, or a binary suffix: 64KiB, 1MiB, 1GiB");
  }
  std::string suffix(text.substr(i));
  uint64_t mult = 1;
  if (suffix.empty() || suffix == "B") {
    mult = 1;
  } else if (suffix == "K" || suffix == "Ki" || suffix == "KiB" || suffix == "k") {
    mult = 1ULL << 10;
  } else if (suffix == "M" || suffix == "Mi" || suffix == "MiB") {
    mult = 1ULL << 20;
  } else if (suffix == "G" || suffix == "Gi" || suffix == "GiB") {
    mult = 1ULL << 30;
  } else if (suffix == "T" || suffix == "Ti" || suffix == "TiB") {
    mult = 1ULL << 40;
  } else if (suffix == "KB" || suffix == "kB" || suffix == "MB" || suffix == "GB" ||
             suffix == "TB") {
    return invalidArgument(f + ": suffix '" + suffix + "' is ambiguous (1000 or 1024?)",
                           "use KiB/MiB/GiB (1024-based) or plain bytes");
  } else {
    return invalidArgument(f + ": unknown size suffix '" + suffix + "'",
                           "use plain bytes or KiB, MiB, GiB");
  }
  if (value > std::numeric_limits<uint64_t>::max() / mult) {
    return invalidArgument(f + ": '" + std::string(text) + "' is too large");
  }
  return value * mult;
}

std::string formatSize(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  uint64_t v = bytes;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + units[u];
}

Result<double> parseDurationSeconds(std::string_view text, std::string_view field) {
  const std::string f(field);
  const std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(v) || v < 0) {
    return invalidArgument(f + ": '" + s + "' is not a duration", "e.g. 30s, 5m, 250ms");
  }
  std::string unit(end);
  double seconds = 0;
  if (unit.empty() || unit == "s") {
    seconds = v;
  } else if (unit == "ms") {
    seconds = v / 1000.0;
  } else if (unit == "m") {
    seconds = v * 60.0;
  } else if (unit == "h") {
    seconds = v * 3600.0;
  } else {
    return invalidArgument(f + ": unknown duration unit '" + unit + "'", "use ms, s, m or h");
  }
  // "1e308h" overflows to infinity (found by tests/fuzz/units).
  if (!std::isfinite(seconds)) return invalidArgument(f + ": '" + s + "' is too large");
  return seconds;
}

int64_t nowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string formatRfc3339(int64_t unix_ms) {
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(unix_ms % 1000));
  return buf;
}

std::string nowRfc3339() {
  return formatRfc3339(nowUnixMs());
}

}  // namespace gdrmesh
