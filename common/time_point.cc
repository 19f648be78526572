#include "common/time_point.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

namespace gdrmesh {

Result<int64_t> parseTimePoint(std::string_view text, int64_t now_ms, std::string_view field) {
  const std::string f(field);
  const std::string s(text);
  const Status bad = invalidArgument(
      f + ": '" + s + "' is neither a duration nor a date",
      "give a duration back from now (30d, 12h, 90m, 2w) or a UTC date/time (2026-11-20, "
      "2026-11-20T14:00Z)");
  if (s.empty()) return bad;
  if (s.size() >= 10 && std::isdigit(static_cast<unsigned char>(s[0])) && s[4] == '-') {
    // YYYY-MM-DD[(T| )HH:MM[:SS]][Z]
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, n = 0;
    if (std::sscanf(s.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10) return bad;
    size_t pos = 10;
    if (pos < s.size() && (s[pos] == 'T' || s[pos] == ' ')) {
      int m = 0;
      if (std::sscanf(s.c_str() + pos + 1, "%2d:%2d%n", &h, &mi, &m) != 2 || m != 5) return bad;
      pos += 1 + static_cast<size_t>(m);
      if (pos < s.size() && s[pos] == ':') {
        if (std::sscanf(s.c_str() + pos + 1, "%2d%n", &sec, &m) != 1 || m != 2) return bad;
        pos += 3;
      }
    }
    if (pos < s.size() && s[pos] == 'Z') ++pos;
    if (pos != s.size()) return bad;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) {
      return invalidArgument(f + ": '" + s + "' is not a valid date", "e.g. 2026-11-20T14:00Z");
    }
    std::tm tm{};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    const std::time_t t = timegm(&tm);
    // timegm normalises 2026-02-31 to March: refuse dates that do not exist.
    if (tm.tm_mday != d || tm.tm_mon != mo - 1) {
      return invalidArgument(f + ": '" + s + "' is not a valid date", "e.g. 2026-11-20T14:00Z");
    }
    return static_cast<int64_t>(t) * 1000;
  }
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(v) || v < 0 ||
      !std::isdigit(static_cast<unsigned char>(s[0]))) {
    return bad;
  }
  const std::string unit(end);
  double seconds = 0;
  if (unit.empty() || unit == "s") {
    seconds = v;
  } else if (unit == "m") {
    seconds = v * 60.0;
  } else if (unit == "h") {
    seconds = v * 3600.0;
  } else if (unit == "d") {
    seconds = v * 86400.0;
  } else if (unit == "w") {
    seconds = v * 7 * 86400.0;
  } else {
    return invalidArgument(f + ": unknown duration unit '" + unit + "' in '" + s + "'",
                           "use s, m, h, d or w (30d, 12h), or a date (2026-11-20)");
  }
  const double ms = seconds * 1000.0;
  if (!std::isfinite(ms) || ms > static_cast<double>(now_ms)) return int64_t{0};  // before 1970
  return now_ms - static_cast<int64_t>(ms);
}

}  // namespace gdrmesh
