// Time zones (TZif files, POSIX TZ rules) and nextRun() across daylight-saving changes.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "coordinator/orchestrator/cron.h"
#include "tests/unit/scheduler/test_util.h"

namespace gdrmesh {
namespace {

using testing::iso;
using testing::utcMs;

TimeZone zone(const std::string& name) {
  auto z = TimeZone::load(name);
  EXPECT_TRUE(z.ok()) << name << ": " << z.status().toString();
  return z.ok() ? *z : TimeZone::utc();
}

std::vector<int64_t> runs(const std::string& cron, const TimeZone& z, int64_t after, int n) {
  auto e = parseCron(cron);
  EXPECT_TRUE(e.ok()) << e.status().toString();
  std::vector<int64_t> out;
  for (int i = 0; e.ok() && i < n; ++i) {
    auto next = nextRun(*e, z, after);
    EXPECT_TRUE(next.ok()) << next.status().toString();
    if (!next.ok()) break;
    out.push_back(*next);
    after = *next;
  }
  return out;
}

std::vector<std::string> isos(const std::vector<int64_t>& v) {
  std::vector<std::string> out;
  for (int64_t ms : v) out.push_back(iso(ms));
  return out;
}

TEST(TimeZone, UtcIsBuiltIn) {
  for (const char* name : {"", "UTC"}) {
    auto z = TimeZone::load(name, "/nonexistent");
    ASSERT_TRUE(z.ok()) << z.status().toString();
    EXPECT_EQ(z->name(), "UTC");
    EXPECT_EQ(z->offsetAt(0), 0);
    EXPECT_FALSE(z->nextTransition(0).has_value());
  }
}

TEST(TimeZone, BerlinTransitionsFromTheTable) {
  GDR_REQUIRE_ZONEINFO();
  const TimeZone z = zone("Europe/Berlin");
  const int64_t spring = utcMs(2024, 3, 31, 1) / 1000;
  const int64_t fall = utcMs(2024, 10, 27, 1) / 1000;
  EXPECT_EQ(z.offsetAt(spring - 1), 3600);
  EXPECT_EQ(z.offsetAt(spring), 7200);
  EXPECT_EQ(z.offsetAt(fall - 1), 7200);
  EXPECT_EQ(z.offsetAt(fall), 3600);
  auto next = z.nextTransition(utcMs(2024, 1, 1) / 1000);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->at_s, spring);
  EXPECT_EQ(next->before_s, 3600);
  EXPECT_EQ(next->after_s, 7200);
  auto prev = z.prevTransition(fall);
  ASSERT_TRUE(prev.has_value());
  EXPECT_EQ(prev->at_s, fall);
  EXPECT_EQ(prev->before_s, 7200);
  EXPECT_EQ(z.nextTransition(spring)->at_s, fall);
}

TEST(TimeZone, BerlinFarFutureFromTheFooterRule) {
  GDR_REQUIRE_ZONEINFO();
  const TimeZone z = zone("Europe/Berlin");
  // 2050: past the last transition of any TZif table (fat files stop at 2037).
  const int64_t spring = utcMs(2050, 3, 27, 1) / 1000;
  const int64_t fall = utcMs(2050, 10, 30, 1) / 1000;
  EXPECT_EQ(z.nextTransition(utcMs(2050, 1, 1) / 1000)->at_s, spring);
  EXPECT_EQ(z.nextTransition(spring)->at_s, fall);
  EXPECT_EQ(z.prevTransition(utcMs(2050, 12, 1) / 1000)->at_s, fall);
  EXPECT_EQ(z.offsetAt(spring - 1), 3600);
  EXPECT_EQ(z.offsetAt(spring), 7200);
  EXPECT_EQ(z.offsetAt(fall), 3600);
}

TEST(TimeZone, NewYork) {
  GDR_REQUIRE_ZONEINFO();
  const TimeZone z = zone("America/New_York");
  EXPECT_EQ(z.offsetAt(utcMs(2024, 3, 10, 7) / 1000 - 1), -5 * 3600);
  EXPECT_EQ(z.offsetAt(utcMs(2024, 3, 10, 7) / 1000), -4 * 3600);
  EXPECT_EQ(z.offsetAt(utcMs(2024, 11, 3, 6) / 1000), -5 * 3600);
  EXPECT_EQ(z.offsetAt(utcMs(2060, 7, 1) / 1000), -4 * 3600);
  EXPECT_EQ(z.offsetAt(utcMs(2060, 1, 1) / 1000), -5 * 3600);
}

TEST(TimeZone, PosixRules) {
  // Southern hemisphere: DST from October to April.
  auto syd = TimeZone::fromPosix("Sydney", "AEST-10AEDT,M10.1.0,M4.1.0/3");
  ASSERT_TRUE(syd.ok()) << syd.status().toString();
  EXPECT_EQ(syd->offsetAt(utcMs(2024, 1, 1) / 1000), 11 * 3600);
  EXPECT_EQ(syd->offsetAt(utcMs(2024, 7, 1) / 1000), 10 * 3600);
  EXPECT_EQ(syd->nextTransition(utcMs(2024, 1, 1) / 1000)->at_s, utcMs(2024, 4, 6, 16) / 1000);
  EXPECT_EQ(syd->nextTransition(utcMs(2024, 5, 1) / 1000)->at_s, utcMs(2024, 10, 5, 16) / 1000);
  // Quoted names, minutes in offsets, no DST.
  auto tehran = TimeZone::fromPosix("X", "<+0330>-3:30");
  ASSERT_TRUE(tehran.ok()) << tehran.status().toString();
  EXPECT_EQ(tehran->offsetAt(0), 3 * 3600 + 1800);
  EXPECT_FALSE(tehran->nextTransition(0).has_value());
  // No rule after the DST name: the US default.
  auto est = TimeZone::fromPosix("X", "EST5EDT");
  ASSERT_TRUE(est.ok());
  EXPECT_EQ(est->nextTransition(utcMs(2024, 1, 1) / 1000)->at_s, utcMs(2024, 3, 10, 7) / 1000);
  // Julian days (J60 is always March 1) and zero-based days (59 is Feb 29 in leap years).
  auto j = TimeZone::fromPosix("X", "AAA0BBB,J60/0,300/0");
  ASSERT_TRUE(j.ok()) << j.status().toString();
  EXPECT_EQ(j->nextTransition(utcMs(2024, 1, 1) / 1000)->at_s, utcMs(2024, 3, 1) / 1000);
  EXPECT_EQ(j->nextTransition(utcMs(2024, 3, 2) / 1000)->at_s, utcMs(2024, 10, 27) / 1000 - 3600);
  // Negative transition times (America/Nuuk style).
  auto nuuk = TimeZone::fromPosix("X", "<-02>2<-01>,M3.5.0/-1,M10.5.0/0");
  ASSERT_TRUE(nuuk.ok()) << nuuk.status().toString();
  EXPECT_EQ(nuuk->nextTransition(utcMs(2024, 1, 1) / 1000)->at_s, utcMs(2024, 3, 31, 1) / 1000);
}

TEST(TimeZone, MalformedPosixRule) {
  auto z = TimeZone::fromPosix("Bad/Zone", "CET-1CEST,M3.5");
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.status().message(),
            "time zone 'Bad/Zone': its POSIX TZ rule 'CET-1CEST,M3.5' is malformed (expected the "
            "daylight-saving start rule at character 15)");
  EXPECT_FALSE(TimeZone::fromPosix("X", "C-1").ok());
  EXPECT_FALSE(TimeZone::fromPosix("X", "CET").ok());
  EXPECT_FALSE(TimeZone::fromPosix("X", "CET-1CEST,M13.1.0,M10.5.0").ok());
}

TEST(TimeZone, UnknownZoneIsAClearError) {
  GDR_REQUIRE_ZONEINFO();
  auto z = TimeZone::load("Europe/Berln");
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.status().code(), Code::kNotFound);
  EXPECT_EQ(z.status().message(),
            "time zone 'Europe/Berln' is unknown (no file /usr/share/zoneinfo/Europe/Berln)");
  EXPECT_NE(z.status().fix().find("'Europe/Berlin'"), std::string::npos);
  auto dir = TimeZone::load("Europe");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), Code::kNotFound);
}

TEST(TimeZone, NamesThatAreNotZoneNames) {
  for (const char* name : {"../etc/passwd", "/etc/localtime", "Europe//Berlin", "Europe/./Berlin",
                           "Europe/Berlin ", "Europe/Berlin;rm"}) {
    auto z = TimeZone::load(name);
    ASSERT_FALSE(z.ok()) << name;
    EXPECT_EQ(z.status().code(), Code::kInvalidArgument) << name;
    EXPECT_EQ(z.status().message(), "time zone '" + std::string(name) + "' is not a zone name");
  }
}

TEST(TimeZone, MissingZoneDatabase) {
  auto z = TimeZone::load("Europe/Berlin", "/nonexistent/zoneinfo");
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(z.status().fix().find("tzdata"), std::string::npos);
}

TEST(TimeZone, MalformedTzif) {
  auto z = TimeZone::fromTzif("X", "not a tzif file at all, not even close to one........");
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.status().message(), "time zone 'X': not a valid TZif file (bad header)");
  GDR_REQUIRE_ZONEINFO();
  // A real file, cut short.
  std::string bytes;
  {
    FILE* f = fopen("/usr/share/zoneinfo/Europe/Berlin", "rb");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    size_t n = 0;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) bytes.append(buf, n);
    fclose(f);
  }
  ASSERT_TRUE(TimeZone::fromTzif("Europe/Berlin", bytes).ok());
  for (size_t cut : {size_t{10}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    auto t = TimeZone::fromTzif("Europe/Berlin", bytes.substr(0, cut));
    EXPECT_FALSE(t.ok()) << cut;
  }
}

// ---- nextRun across DST ----

TEST(TimeZoneNextRun, SpringForwardRunsOnceAtTheFirstValidTime) {
  GDR_REQUIRE_ZONEINFO();
  const TimeZone berlin = zone("Europe/Berlin");
  // 2024-03-31: 02:00 CET becomes 03:00 CEST (01:00 UTC); 02:30 does not exist.
  EXPECT_EQ(isos(runs("30 2 * * *", berlin, utcMs(2024, 3, 29, 12), 3)),
            isos({utcMs(2024, 3, 30, 1, 30), utcMs(2024, 3, 31, 1), utcMs(2024, 4, 1, 0, 30)}));
  // Four matching minutes in the gap run once.
  EXPECT_EQ(isos(runs("*/15 2 * * *", berlin, utcMs(2024, 3, 30, 12), 2)),
            isos({utcMs(2024, 3, 31, 1), utcMs(2024, 4, 1, 0)}));
  // Hourly: 01:00 CET, then 03:00 CEST (once, although 02:00 maps there too).
  EXPECT_EQ(isos(runs("0 * * * *", berlin, utcMs(2024, 3, 30, 23, 30), 3)),
            isos({utcMs(2024, 3, 31, 0), utcMs(2024, 3, 31, 1), utcMs(2024, 3, 31, 2)}));
  // New York (02:00 EST becomes 03:00 EDT at 07:00 UTC).
  EXPECT_EQ(isos(runs("30 2 * * *", zone("America/New_York"), utcMs(2024, 3, 9, 12), 3)),
            isos({utcMs(2024, 3, 10, 7), utcMs(2024, 3, 11, 6, 30), utcMs(2024, 3, 12, 6, 30)}));
}

TEST(TimeZoneNextRun, FallBackRunsOnceUnlessEveryHour) {
  GDR_REQUIRE_ZONEINFO();
  const TimeZone berlin = zone("Europe/Berlin");
  // 2024-10-27: 03:00 CEST becomes 02:00 CET (01:00 UTC); 02:30 happens twice.
  EXPECT_EQ(isos(runs("30 2 * * *", berlin, utcMs(2024, 10, 26, 12), 2)),
            isos({utcMs(2024, 10, 27, 0, 30), utcMs(2024, 10, 28, 1, 30)}));
  EXPECT_EQ(isos(runs("*/20 2 * * *", berlin, utcMs(2024, 10, 26, 12), 4)),
            isos({utcMs(2024, 10, 27, 0, 0), utcMs(2024, 10, 27, 0, 20), utcMs(2024, 10, 27, 0, 40),
                  utcMs(2024, 10, 28, 1, 0)}));
  // Starting inside the repeated hour: the second 02:30 is not a run.
  EXPECT_EQ(isos(runs("30 2 * * *", berlin, utcMs(2024, 10, 27, 1, 5), 1)),
            isos({utcMs(2024, 10, 28, 1, 30)}));
  // An every-hour expression keeps its rhythm through the repeated hour.
  EXPECT_EQ(isos(runs("*/30 * * * *", berlin, utcMs(2024, 10, 26, 23, 45), 5)),
            isos({utcMs(2024, 10, 27, 0, 0), utcMs(2024, 10, 27, 0, 30), utcMs(2024, 10, 27, 1, 0),
                  utcMs(2024, 10, 27, 1, 30), utcMs(2024, 10, 27, 2, 0)}));
}

TEST(TimeZoneNextRun, HalfHourDaylightSaving) {
  GDR_REQUIRE_ZONEINFO();
  // Lord Howe Island: +10:30, +11:00 in summer; 2024-10-06 02:00 becomes 02:30 (15:30 UTC).
  const TimeZone lh = zone("Australia/Lord_Howe");
  EXPECT_EQ(
      isos(runs("15 2 * * *", lh, utcMs(2024, 10, 4, 0), 3)),
      isos({utcMs(2024, 10, 4, 15, 45), utcMs(2024, 10, 5, 15, 30), utcMs(2024, 10, 6, 15, 15)}));
}

// ---- Property: nextRun in zones with DST agrees with a minute-by-minute definition ----

// The documented rule, instant by instant: instant x (a whole minute of local time) is a run
// when its local time matches and it is that local time's first occurrence (or the hour field
// covers every hour); the instant a spring-forward gap ends is a run when any local minute in
// the gap matches.
bool bruteIsRun(const CronExpr& e, const TimeZone& z, int64_t x) {
  auto matchesLocal = [&](int64_t local_s) {
    const int64_t minute = local_s / 60;
    const time_t t = static_cast<time_t>(minute * 60);
    std::tm tm{};
    gmtime_r(&t, &tm);
    if (!((e.minutes >> tm.tm_min) & 1u) || !((e.hours >> tm.tm_hour) & 1u)) return false;
    if (!((e.months >> (tm.tm_mon + 1)) & 1u)) return false;
    const bool dom = (e.days >> tm.tm_mday) & 1u;
    const bool dow = (e.weekdays >> tm.tm_wday) & 1u;
    return (e.days_star || e.weekdays_star) ? dom && dow : dom || dow;
  };
  const int32_t off = z.offsetAt(x);
  const int64_t local = x + off;
  if (local % 60 == 0 && matchesLocal(local)) {
    bool seen = false;  // did an earlier instant (up to 3 h back) show this local time?
    for (int64_t k = 60; k <= 3 * 3600 && !seen && !e.allHours(); k += 60) {
      seen = (x - k) + z.offsetAt(x - k) == local;
    }
    if (!seen) return true;
  }
  const int32_t before = z.offsetAt(x - 1);
  if (off > before) {
    for (int64_t l = x + before; l < x + off; l += 60) {
      if (l % 60 == 0 && matchesLocal(l)) return true;
    }
  }
  return false;
}

TEST(TimeZoneNextRun, RandomExpressionsNearTransitionsAgreeWithBruteForce) {
  GDR_REQUIRE_ZONEINFO();
  const std::vector<std::string> names = {"Europe/Berlin", "America/New_York",
                                          "Australia/Lord_Howe", "Australia/Sydney"};
  const std::vector<std::string> exprs = {
      "30 2 * * *",        "*/15 2 * * *",   "0 * * * *",     "*/10 * * * *", "0 2,3 * * *",
      "15,45 1-3 * * *",   "0 0 * * *",      "59 1 * * *",    "0 3 * * sun",  "*/7 0-4 * * *",
      "0 2 * mar,oct sun", "30 2 25-31 * *", "0 1-3/2 * * *", "45 0 * * 0-6", "*/30 2 * * *"};
  std::mt19937_64 rng(7);
  int checked = 0;
  for (const auto& name : names) {
    const TimeZone z = zone(name);
    // Transitions in 2020-2030 (the table) and 2045-2047 (the footer rule).
    std::vector<int64_t> transitions;
    for (int64_t t = utcMs(2020, 1, 1) / 1000; t < utcMs(2048, 1, 1) / 1000;) {
      auto next = z.nextTransition(t);
      if (!next) break;
      t = next->at_s;
      if (t < utcMs(2031, 1, 1) / 1000 || t >= utcMs(2045, 1, 1) / 1000) transitions.push_back(t);
    }
    ASSERT_GT(transitions.size(), 20u) << name;
    for (const auto& text : exprs) {
      const CronExpr e = *parseCron(text);
      for (int k = 0; k < 6; ++k) {
        const int64_t tr = transitions[rng() % transitions.size()];
        const int64_t after_s = tr - std::uniform_int_distribution<int64_t>(0, 2 * 86400)(rng);
        auto got = nextRun(e, z, after_s * 1000 + 500);
        ASSERT_TRUE(got.ok()) << got.status().toString();
        // Runs fall on whole minutes of UTC in these zones (whole-minute offsets).
        const int64_t window_end = after_s + 9 * 86400;
        int64_t expect = -1;
        for (int64_t x = (after_s / 60 + 1) * 60; x <= window_end; x += 60) {
          if (bruteIsRun(e, z, x)) {
            expect = x * 1000;
            break;
          }
        }
        if (expect < 0) {
          EXPECT_GT(*got, window_end * 1000) << text << " in " << name;
        } else {
          ASSERT_EQ(iso(*got), iso(expect))
              << text << " in " << name << " after " << iso(after_s * 1000 + 500);
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4 * 15 * 6);
}

}  // namespace
}  // namespace gdrmesh
