// Cron syntax, its errors, and nextRun() in UTC (checked against a minute-by-minute matcher).
#include "coordinator/orchestrator/cron.h"

#include <gtest/gtest.h>
#include <time.h>

#include <random>
#include <string>
#include <vector>

#include "tests/unit/scheduler/test_util.h"

namespace gdrmesh {
namespace {

using testing::iso;
using testing::utcMs;

uint64_t bits(std::initializer_list<int> values) {
  uint64_t b = 0;
  for (int v : values) b |= uint64_t{1} << v;
  return b;
}

CronExpr parsed(const std::string& text) {
  auto e = parseCron(text);
  EXPECT_TRUE(e.ok()) << text << ": " << e.status().toString();
  return e.ok() ? *e : CronExpr{};
}

std::string errorOf(const std::string& text) {
  auto e = parseCron(text);
  EXPECT_FALSE(e.ok()) << text << " parsed";
  return e.ok() ? "" : e.status().message();
}

std::vector<int64_t> runs(const std::string& cron, int64_t after, int n) {
  std::vector<int64_t> out;
  CronExpr e = parsed(cron);
  for (int i = 0; i < n; ++i) {
    auto next = nextRun(e, TimeZone::utc(), after);
    EXPECT_TRUE(next.ok()) << next.status().toString();
    if (!next.ok()) break;
    out.push_back(*next);
    after = *next;
  }
  return out;
}

TEST(CronParse, StarMeansEveryValue) {
  CronExpr e = parsed("* * * * *");
  EXPECT_EQ(e.minutes, (uint64_t{1} << 60) - 1);
  EXPECT_EQ(e.hours, 0xFFFFFFu);
  EXPECT_EQ(e.days, 0xFFFFFFFEu);
  EXPECT_EQ(e.months, 0x1FFEu);
  EXPECT_EQ(e.weekdays, 0x7Fu);
  EXPECT_TRUE(e.days_star);
  EXPECT_TRUE(e.weekdays_star);
  EXPECT_TRUE(e.allHours());
}

TEST(CronParse, SingleValuesListsAndRanges) {
  CronExpr e = parsed("5 1,15,22 1-5 12 3");
  EXPECT_EQ(e.minutes, bits({5}));
  EXPECT_EQ(e.hours, bits({1, 15, 22}));
  EXPECT_EQ(e.days, bits({1, 2, 3, 4, 5}));
  EXPECT_EQ(e.months, bits({12}));
  EXPECT_EQ(e.weekdays, bits({3}));
  EXPECT_FALSE(e.days_star);
  EXPECT_FALSE(e.weekdays_star);
  EXPECT_FALSE(e.allHours());
}

TEST(CronParse, Steps) {
  EXPECT_EQ(parsed("*/15 * * * *").minutes, bits({0, 15, 30, 45}));
  EXPECT_EQ(parsed("1-30/7 * * * *").minutes, bits({1, 8, 15, 22, 29}));
  EXPECT_EQ(parsed("0 */6 * * *").hours, bits({0, 6, 12, 18}));
  EXPECT_EQ(parsed("0 0 */10 * *").days, bits({1, 11, 21, 31}));
  EXPECT_EQ(parsed("0 0 * */4 *").months, bits({1, 5, 9}));
  EXPECT_EQ(parsed("0 0 * * 1-5/2").weekdays, bits({1, 3, 5}));
  EXPECT_EQ(parsed("*/60 * * * *").minutes, bits({0}));
  EXPECT_EQ(parsed("0,10-20/5,*/30 * * * *").minutes, bits({0, 10, 15, 20, 30}));
}

TEST(CronParse, MonthAndWeekdayNames) {
  EXPECT_EQ(parsed("0 0 * jan-mar *").months, bits({1, 2, 3}));
  EXPECT_EQ(parsed("0 0 * JUL,Dec *").months, bits({7, 12}));
  EXPECT_EQ(parsed("0 0 * feb-dec/2 *").months, bits({2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(parsed("0 0 * * mon-fri").weekdays, bits({1, 2, 3, 4, 5}));
  EXPECT_EQ(parsed("0 0 * * SUN,sat").weekdays, bits({0, 6}));
  EXPECT_EQ(parsed("0 0 * * thu-sat").weekdays, bits({4, 5, 6}));
}

TEST(CronParse, SundayIsZeroAndSeven) {
  EXPECT_EQ(parsed("0 0 * * 0").weekdays, bits({0}));
  EXPECT_EQ(parsed("0 0 * * 7").weekdays, bits({0}));
  EXPECT_EQ(parsed("0 0 * * 5-7").weekdays, bits({0, 5, 6}));
  EXPECT_EQ(parsed("0 0 * * 0-7").weekdays, 0x7Fu);
  EXPECT_EQ(parsed("0 0 * * fri-7").weekdays, bits({0, 5, 6}));
}

TEST(CronParse, Macros) {
  auto same = [](const std::string& macro, const std::string& fields) {
    CronExpr a = parsed(macro);
    CronExpr b = parsed(fields);
    EXPECT_EQ(a.text, macro);
    EXPECT_EQ(a.minutes, b.minutes) << macro;
    EXPECT_EQ(a.hours, b.hours) << macro;
    EXPECT_EQ(a.days, b.days) << macro;
    EXPECT_EQ(a.months, b.months) << macro;
    EXPECT_EQ(a.weekdays, b.weekdays) << macro;
    EXPECT_EQ(a.days_star, b.days_star) << macro;
    EXPECT_EQ(a.weekdays_star, b.weekdays_star) << macro;
  };
  same("@hourly", "0 * * * *");
  same("@daily", "0 0 * * *");
  same("@midnight", "0 0 * * *");
  same("@weekly", "0 0 * * 0");
  same("@monthly", "0 0 1 * *");
  same("@yearly", "0 0 1 1 *");
  same("@annually", "0 0 1 1 *");
  same("@DAILY", "0 0 * * *");
}

TEST(CronParse, WhitespaceBetweenFields) {
  EXPECT_EQ(parsed("  0\t2   *  * *  ").hours, bits({2}));
}

TEST(CronParse, VixieRuleEitherDayFieldWhenBothRestricted) {
  // The 1st of the month OR any Monday. 2024-01-01 is a Monday.
  EXPECT_EQ(runs("0 0 1 * mon", utcMs(2024, 1, 1), 5),
            (std::vector<int64_t>{utcMs(2024, 1, 8), utcMs(2024, 1, 15), utcMs(2024, 1, 22),
                                  utcMs(2024, 1, 29), utcMs(2024, 2, 1)}));
  // Day-of-month starting with '*' makes it AND: odd days that are Mondays.
  EXPECT_EQ(runs("0 0 */2 * mon", utcMs(2024, 1, 1), 3),
            (std::vector<int64_t>{utcMs(2024, 1, 15), utcMs(2024, 1, 29), utcMs(2024, 2, 5)}));
  // Only day-of-week restricted: every Friday.
  EXPECT_EQ(runs("0 0 * * fri", utcMs(2024, 1, 1), 2),
            (std::vector<int64_t>{utcMs(2024, 1, 5), utcMs(2024, 1, 12)}));
  // Only day-of-month restricted.
  EXPECT_EQ(runs("0 0 13 * *", utcMs(2024, 1, 1), 2),
            (std::vector<int64_t>{utcMs(2024, 1, 13), utcMs(2024, 2, 13)}));
}

TEST(CronParse, ErrorsNameFieldItemAndFix) {
  EXPECT_EQ(errorOf("x 2 * * *"), "cron 'x 2 * * *': minute 'x' is not a number 0-59");
  EXPECT_EQ(errorOf("0 24 * * *"), "cron '0 24 * * *': hour '24' is out of range 0-23");
  EXPECT_EQ(errorOf("0 0 0 * *"), "cron '0 0 0 * *': day-of-month '0' is out of range 1-31");
  EXPECT_EQ(errorOf("0 0 * foo *"),
            "cron '0 0 * foo *': month 'foo' is not a number 1-12 or a name jan-dec");
  EXPECT_EQ(errorOf("0 0 * 13 *"), "cron '0 0 * 13 *': month '13' is out of range 1-12");
  EXPECT_EQ(errorOf("0 0 * * 8"), "cron '0 0 * * 8': day-of-week '8' is out of range 0-7");
  EXPECT_EQ(errorOf("0 0 * * monday"),
            "cron '0 0 * * monday': day-of-week 'monday' is not a number 0-7 (0 and 7 are "
            "Sunday) or a name sun-sat");
  EXPECT_EQ(errorOf("1,x 0 * * *"), "cron '1,x 0 * * *': minute 'x' is not a number 0-59");
  EXPECT_EQ(errorOf("99999 0 * * *"), "cron '99999 0 * * *': minute '99999' is out of range 0-59");
  EXPECT_EQ(errorOf("-1 0 * * *"),
            "cron '-1 0 * * *': minute '-1' is not a range: write 'FIRST-LAST', e.g. '0-1'");
}

TEST(CronParse, StepErrors) {
  EXPECT_EQ(errorOf("*/0 * * * *"),
            "cron '*/0 * * * *': minute '*/0': step '0' is not a number 1-60");
  EXPECT_EQ(errorOf("*/x * * * *"),
            "cron '*/x * * * *': minute '*/x': step 'x' is not a number 1-60");
  EXPECT_EQ(errorOf("0 */25 * * *"),
            "cron '0 */25 * * *': hour '*/25': step '25' is not a number 1-24");
  auto s = parseCron("5/15 * * * *");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "cron '5/15 * * * *': minute '5/15': a step needs a range or '*'");
  EXPECT_EQ(s.status().fix(), "write '5-59/15' (from 5 to the end)");
}

TEST(CronParse, BackwardsRangeAndEmptyItems) {
  auto r = parseCron("0 22-2 * * *");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "cron '0 22-2 * * *': hour range '22-2' runs backwards; ranges do not wrap");
  EXPECT_EQ(r.status().fix(), "split it, e.g. '22-23,0-2'");
  EXPECT_EQ(errorOf("0 0 * * fri-mon"),
            "cron '0 0 * * fri-mon': day-of-week range 'fri-mon' runs backwards; ranges do not "
            "wrap");
  auto weekend = parseCron("0 0 * * sat-sun");
  ASSERT_FALSE(weekend.ok());
  EXPECT_EQ(weekend.status().fix(), "write 'sat-7' (7 is Sunday too)");
  EXPECT_EQ(errorOf("1,,2 * * * *"), "cron '1,,2 * * * *': minute '1,,2' has an empty list item");
  EXPECT_EQ(errorOf("1, * * * *"), "cron '1, * * * *': minute '1,' has an empty list item");
}

TEST(CronParse, FieldCountAndMacroErrors) {
  auto four = parseCron("0 2 * *");
  ASSERT_FALSE(four.ok());
  EXPECT_EQ(four.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(four.status().message(),
            "cron '0 2 * *': expected 5 fields (minute hour day-of-month month day-of-week), "
            "got 4");
  EXPECT_EQ(four.status().fix(), "e.g. '0 2 * * *' for 02:00 every day");
  auto six = parseCron("0 0 2 * * *");
  ASSERT_FALSE(six.ok());
  EXPECT_NE(six.status().fix().find("seconds and year fields are not supported"),
            std::string::npos);
  EXPECT_EQ(errorOf(""),
            "cron '': expected 5 fields (minute hour day-of-month month day-of-week), got 0");
  EXPECT_EQ(errorOf("@reboot"), "cron '@reboot': @reboot is not supported (schedules are times)");
  auto unknown = parseCron("@fortnightly");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "cron '@fortnightly': unknown macro '@fortnightly'");
  EXPECT_NE(unknown.status().fix().find("@daily"), std::string::npos);
}

TEST(CronParse, ImpossibleDatesAreErrors) {
  EXPECT_EQ(errorOf("0 0 30 2 *"),
            "cron '0 0 30 2 *': day-of-month '30' never occurs in month '2', so the schedule "
            "would never run");
  EXPECT_EQ(errorOf("0 0 31 apr,jun *"),
            "cron '0 0 31 apr,jun *': day-of-month '31' never occurs in month 'apr,jun', so the "
            "schedule would never run");
  // Possible, if rare: Feb 29; the 31st in a list that has a long month; Feb 30 OR Sundays.
  EXPECT_TRUE(parseCron("0 0 29 2 *").ok());
  EXPECT_TRUE(parseCron("0 0 31 4,5 *").ok());
  EXPECT_TRUE(parseCron("0 0 30 2 sun").ok());
}

TEST(CronNextRun, StrictlyAfterAndOnMinuteBoundaries) {
  CronExpr e = parsed("0 2 * * *");
  const TimeZone utc = TimeZone::utc();
  EXPECT_EQ(*nextRun(e, utc, utcMs(2024, 1, 1)), utcMs(2024, 1, 1, 2));
  EXPECT_EQ(*nextRun(e, utc, utcMs(2024, 1, 1, 2) - 1), utcMs(2024, 1, 1, 2));
  EXPECT_EQ(*nextRun(e, utc, utcMs(2024, 1, 1, 2)), utcMs(2024, 1, 2, 2));
  EXPECT_EQ(*nextRun(e, utc, utcMs(2024, 1, 1, 2) + 1), utcMs(2024, 1, 2, 2));
  // Year and month roll-over, Feb 29, before 1970.
  EXPECT_EQ(*nextRun(parsed("59 23 31 12 *"), utc, utcMs(2024, 6, 1)), utcMs(2024, 12, 31, 23, 59));
  EXPECT_EQ(*nextRun(parsed("0 0 29 2 *"), utc, utcMs(2024, 3, 1)), utcMs(2028, 2, 29));
  EXPECT_EQ(*nextRun(parsed("0 12 * * *"), utc, utcMs(1969, 12, 31, 13)), utcMs(1970, 1, 1, 12));
  // 2100 is not a leap year.
  EXPECT_EQ(*nextRun(parsed("0 0 29 2 *"), utc, utcMs(2096, 3, 1)), utcMs(2104, 2, 29));
}

// ---- Property: nextRun agrees with a minute-by-minute matcher ----

std::string randomField(std::mt19937_64& rng, int lo, int hi, const char* const* names) {
  auto pick = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  auto value = [&](int v) -> std::string {
    if (names != nullptr && v < 7 && pick(0, 3) == 0) return hi == 12 ? names[v - 1] : names[v];
    return std::to_string(v);
  };
  auto item = [&]() -> std::string {
    switch (pick(0, 4)) {
      case 0:
        return value(pick(lo, hi));
      case 1: {
        const int a = pick(lo, hi);
        const int b = pick(a, hi);
        return value(a) + "-" + value(b);
      }
      case 2: {
        const int a = pick(lo, hi);
        const int b = pick(a, hi);
        return value(a) + "-" + value(b) + "/" + std::to_string(pick(1, hi - lo + 1));
      }
      case 3:
        return "*/" + std::to_string(pick(1, (hi - lo + 1) / 2));
      default:
        return value(pick(lo, hi));
    }
  };
  switch (pick(0, 5)) {
    case 0:
    case 1:
      return "*";
    case 2: {
      std::string s = item();
      const int n = pick(1, 3);
      for (int i = 0; i < n; ++i) s += "," + item();
      return s;
    }
    default:
      return item();
  }
}

// The cron rule written out directly, from gmtime_r's calendar. Minute by minute; the calendar
// of the current day is cached so that two years of minutes take milliseconds.
class BruteMatcher {
 public:
  explicit BruteMatcher(const CronExpr& e) : e_(e) {}
  bool matches(int64_t minute) {
    const int64_t day = minute / 1440;
    if (day != day_) {
      const time_t t = static_cast<time_t>(day * 86400);
      gmtime_r(&t, &tm_);
      day_ = day;
    }
    const int hour = static_cast<int>(minute % 1440 / 60);
    const int min = static_cast<int>(minute % 60);
    if (!((e_.minutes >> min) & 1u) || !((e_.hours >> hour) & 1u)) return false;
    if (!((e_.months >> (tm_.tm_mon + 1)) & 1u)) return false;
    const bool dom = (e_.days >> tm_.tm_mday) & 1u;
    const bool dow = (e_.weekdays >> tm_.tm_wday) & 1u;
    return (e_.days_star || e_.weekdays_star) ? dom && dow : dom || dow;
  }

 private:
  const CronExpr& e_;
  int64_t day_ = -1;
  std::tm tm_{};
};

TEST(CronNextRun, ThousandRandomExpressionsAgreeWithBruteForceOverTwoYears) {
  static const char* const kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                        "jul", "aug", "sep", "oct", "nov", "dec"};
  static const char* const kDays[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
  std::mt19937_64 rng(20261122);
  const int64_t kTwoYears = int64_t{2} * 366 * 1440;  // minutes
  int checked = 0;
  int rare = 0;  // no run within two years
  while (checked < 1000) {
    const std::string text = randomField(rng, 0, 59, nullptr) + " " +
                             randomField(rng, 0, 23, nullptr) + " " +
                             randomField(rng, 1, 31, nullptr) + " " +
                             randomField(rng, 1, 12, kMonths) + " " + randomField(rng, 0, 7, kDays);
    auto e = parseCron(text);
    if (!e.ok()) {
      // The generator only makes valid syntax; the one allowed error is an impossible date.
      ASSERT_NE(e.status().message().find("never occurs"), std::string::npos)
          << e.status().toString();
      continue;
    }
    ++checked;
    const int64_t after =
        std::uniform_int_distribution<int64_t>(utcMs(1995, 1, 1), utcMs(2090, 1, 1))(rng) +
        std::uniform_int_distribution<int>(0, 999)(rng);
    auto got = nextRun(*e, TimeZone::utc(), after);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status().toString();
    const int64_t first = after / 60000 + 1;  // after > 0 here
    int64_t expect = -1;
    BruteMatcher brute(*e);
    for (int64_t m = first; m < first + kTwoYears; ++m) {
      if (brute.matches(m)) {
        expect = m * 60000;
        break;
      }
    }
    if (expect < 0) {
      ++rare;
      EXPECT_GE(*got, (first + kTwoYears) * 60000) << text << " after " << iso(after);
    } else {
      ASSERT_EQ(*got, expect) << text << " after " << iso(after) << ": got " << iso(*got)
                              << ", want " << iso(expect);
    }
  }
  EXPECT_LT(rare, 100);
}

}  // namespace
}  // namespace gdrmesh
