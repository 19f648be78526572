// Helpers shared by the scheduler tests: UTC times from calendar fields, and a skip for hosts
// without the zone database.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>

#include <cstdint>
#include <string>

#include "common/units.h"

namespace gdrmesh::testing {

// Unix ms of a UTC calendar time.
inline int64_t utcMs(int year, int month, int day, int hour = 0, int minute = 0, int second = 0) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

inline std::string iso(int64_t ms) {
  return formatRfc3339(ms);
}

inline bool haveZoneinfo() {
  struct stat st {};
  return stat("/usr/share/zoneinfo/Europe/Berlin", &st) == 0;
}

}  // namespace gdrmesh::testing

// The zone database comes from the tzdata package (deploy/install-deps.sh).
#define GDR_REQUIRE_ZONEINFO()                                                        \
  do {                                                                                \
    if (!::gdrmesh::testing::haveZoneinfo()) {                                        \
      GTEST_SKIP() << "no /usr/share/zoneinfo/Europe/Berlin: install package tzdata"; \
    }                                                                                 \
  } while (0)
