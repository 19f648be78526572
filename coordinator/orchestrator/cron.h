// When a schedule fires: 5-field cron expressions, IANA time zones, and nextRun().
//
// Cron (the Vixie/cronie dialect): "minute hour day-of-month month day-of-week".
//   *            every value
//   5 / 1,15,30  one value / a list (each list item is any of these forms)
//   1-5          a range, inclusive; never wrapping ("fri-mon" is an error: write "fri-sun,mon")
//   */15, 1-30/2 a step over every value / over a range ("5/15" is an error: write "5-59/15")
//   jan-dec      month names, sun-sat day names (case-insensitive, also in ranges)
//   0 or 7       Sunday in day-of-week
//   @hourly @daily @midnight @weekly @monthly @yearly @annually
// Day rule (Vixie): when both day-of-month and day-of-week are restricted (the field does not
// start with '*'), a day matches if EITHER matches ("0 0 1 * mon" = the 1st and every Monday).
// When either starts with '*', both must match ("0 0 */2 * mon" = odd-numbered Mondays).
//
// Time zones: IANA names ("Europe/Berlin"); "" and "UTC" need no files. Other names are read
// from TZif files (RFC 8536: version 1 to 4, transitions plus the POSIX TZ footer for times
// after the last transition) under /usr/share/zoneinfo (Debian package tzdata). Leap-second
// records ("right/" zones) are ignored: unix time has no leap seconds. The process-wide TZ
// environment is never read or changed.
// Why not Debian's date library (libhowardhinnant-date-dev, libdate-tz3 3.0.1): it is built with
// USE_OS_TZDB=1, and that mode ignores the TZif footer (HowardHinnant/date issues 563, 760), so
// it answers wrong offsets after a zone's last listed transition: measured on Debian 12 it gives
// Europe/Berlin +01:00 on 2040-07-01 and America/New_York -05:00 on 2060-07-01 (summer time in
// both), and on slim TZif files (zic's default since 2020b) it is wrong for today's dates too.
// GCC 12's std::chrono has no time zones. The reader below keeps the footer rule.
//
// Daylight-saving rules of nextRun(), for a local time that a zone change skips or repeats:
//   skipped (spring forward, e.g. 02:30 on the last Sunday of March in Europe/Berlin): the run
//     happens once, at the first valid instant after the gap (03:00 CEST). Every matching
//     minute inside one gap collapses into that one run.
//   repeated (fall back, 02:00-02:59 twice): the run happens once, at the first occurrence. The
//     one exception is an expression whose hour field covers every hour ("*/10 * * * *"): it
//     keeps firing through the repeated hour too, so an every-10-minutes job has no hour-long
//     hole on fall-back day.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/status.h"

namespace gdrmesh {

struct CronExpr {
  std::string text;            // as written, for messages
  uint64_t minutes = 0;        // bit m set = minute m (0-59)
  uint32_t hours = 0;          // bit h (0-23)
  uint32_t days = 0;           // bit d (1-31)
  uint16_t months = 0;         // bit m (1-12)
  uint8_t weekdays = 0;        // bit w (0-6, 0 = Sunday)
  bool days_star = false;      // day-of-month field starts with '*'
  bool weekdays_star = false;  // day-of-week field starts with '*'

  bool allHours() const { return hours == 0xFFFFFFu; }
  // Whether the civil day (year, month 1-12, day 1-31, weekday 0-6) matches (month included).
  bool matchesDay(int month, int day, int weekday) const;
};

// Parses an expression; errors name the expression, the field, the item and the fix:
// "cron 'x 2 * * *': minute 'x' is not a number 0-59". An expression that can never fire
// ("0 0 30 2 *") is an error too.
Result<CronExpr> parseCron(const std::string& text);

// A time zone: its UTC offset at any instant, and the instants where the offset changes.
class TimeZone {
 public:
  static constexpr const char* kDefaultZoneinfoDir = "/usr/share/zoneinfo";

  // A change of offset at `at_s` (unix seconds): before it `before_s` east of UTC, from it on
  // `after_s`.
  struct Transition {
    int64_t at_s = 0;
    int32_t before_s = 0;
    int32_t after_s = 0;
  };

  static TimeZone utc();
  // "" and "UTC" are built in; anything else is read from `zoneinfo_dir`/NAME. An unknown
  // or malformed zone is an error that names it and the fix.
  static Result<TimeZone> load(const std::string& name,
                               const std::string& zoneinfo_dir = kDefaultZoneinfoDir);
  // From the bytes of a TZif file (exposed for tests).
  static Result<TimeZone> fromTzif(const std::string& name, const std::string& bytes);
  // From a POSIX TZ string such as "CET-1CEST,M3.5.0,M10.5.0/3" (exposed for tests).
  static Result<TimeZone> fromPosix(const std::string& name, const std::string& tz);

  const std::string& name() const { return name_; }
  // Seconds east of UTC in effect at unix second `t`.
  int32_t offsetAt(int64_t t) const;
  // The last transition at or before `t`, and the first strictly after `t`.
  std::optional<Transition> prevTransition(int64_t t) const;
  std::optional<Transition> nextTransition(int64_t t) const;

  // The POSIX-TZ footer rule (public so that the parser in cron.cc can build it).
  struct DateRule {
    enum Kind { kJulianNoLeap, kZeroBased, kMonthWeekDay } kind = kMonthWeekDay;
    int day = 0;              // Jn: 1-365; n: 0-365; M: day of week 0-6
    int month = 0, week = 0;  // M only
    int32_t time_s = 7200;    // local time of day of the change (may be negative or > 24 h)
  };
  struct PosixRule {
    int32_t std_offset_s = 0;  // east of UTC
    bool has_dst = false;
    int32_t dst_offset_s = 0;
    DateRule start, end;
  };

 private:
  // The footer rule's transitions in year `year` (at most two), in order.
  std::vector<Transition> ruleTransitions(int64_t year) const;

  std::string name_;
  std::vector<int64_t> times_;     // transition instants, ascending
  std::vector<int32_t> offsets_;   // offset from times_[i] on
  int32_t initial_offset_s_ = 0;   // before the first transition (or always, with no rule)
  std::optional<PosixRule> rule_;  // for times after the last transition
};

// The first minute that matches `expr` in `zone`, strictly after `after_unix_ms` (unix ms). An
// error only if nothing matches within the next 30 years.
Result<int64_t> nextRun(const CronExpr& expr, const TimeZone& zone, int64_t after_unix_ms);

}  // namespace gdrmesh
